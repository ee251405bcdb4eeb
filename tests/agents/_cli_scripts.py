"""The scripted model behind real-CLI tests: it writes hello.txt with each scaffold's own tool, then answers; and
what a scripted model of a multi-turn run reads from a request (:func:`user_turn`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pytest_ifbench.testing import Reply

#: Each scaffold's own file-writing tool, as the scripted model calls it.
CLI_WRITE = {
    "claude_code": ("Write", {"file_path": "/workspace/hello.txt", "content": "hello from the stub\n"}),
    "kilo": ("write", {"filePath": "/workspace/hello.txt", "content": "hello from the stub\n"}),
    "droid": ("Create", {"file_path": "/workspace/hello.txt", "content": "hello from the stub\n"}),
}


def cli_script(name: str):
    """The stub's reply function for CLI ``name``: judge requests pass every check; an agent request
    gets one write call, then (after a tool result, or without tools) a final sentence."""
    def reply(body: dict[str, Any]) -> Reply:
        if body.get("response_format"):  # the judge
            schema = body["response_format"]["json_schema"]["schema"]
            ids = schema["properties"]["checks"]["items"]["properties"]["id"]["enum"]
            return Reply(content=json.dumps({"checks": [{"id": i, "reasoning": "ok", "result": "success"}
                                                         for i in ids]}))
        messages = body.get("messages") or []
        if not body.get("tools") or any(m.get("role") == "tool" for m in messages[-2:]):
            return Reply(content="I wrote hello.txt.")
        tool, arguments = CLI_WRITE[name]
        return Reply(tool_calls=[{"function": {"name": tool, "arguments": arguments}}])
    return reply


def text_of(content: Any) -> str:
    """A message's text, whether a string or a list of content blocks."""
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def user_turn(body: dict[str, Any], queries: Sequence[str]) -> tuple[int, list[dict[str, Any]]] | None:
    """Which of ``queries`` (the run's user turns, in order) an agent request answers, by its last user message
    holding one, and the messages from that one on; None for a CLI's side request (no tools, or no query)."""
    messages = body.get("messages") or []
    if not body.get("tools"):
        return None
    asked = [i for i, m in enumerate(messages) if m.get("role") == "user"
             and any(query in text_of(m.get("content")) for query in queries)]
    if not asked:
        return None
    last = text_of(messages[asked[-1]].get("content"))
    return next(n for n, query in enumerate(queries) if query in last), list(messages[asked[-1]:])


def turns_script(turns: Sequence[Sequence[tuple[str, dict[str, Any]]]], queries: Sequence[str],
                 requests: list[dict[str, Any]], *, answer: str):
    """The stub's reply for a multi-turn run: in user turn ``n`` (:func:`user_turn`), the tool calls ``turns[n]`` one
    a request, then ``answer`` (also to a CLI's side requests); each request is appended to ``requests``."""
    def reply(body: dict[str, Any]) -> Reply:
        requests.append(body)
        asked = user_turn(body, queries)
        if asked is None:
            return Reply(content=answer)
        turn, since = asked
        step = sum(1 for m in since if m.get("role") == "tool" or (m.get("role") == "user" and any(
            isinstance(part, dict) and part.get("type") == "tool_result" for part in m.get("content") or ())))
        calls = turns[turn] if turn < len(turns) else ()
        if step >= len(calls):
            return Reply(content=answer)
        tool, arguments = calls[step]
        return Reply(tool_calls=[{"function": {"name": tool, "arguments": arguments}}])
    return reply


def ancestry_marker(log: str, control: str, *, width: int = 200, passthrough: bool = False) -> str:
    """A shell script appending a line to ``log`` each time it runs: its first argument, `` [control]`` when the
    environment holds ``control`` (a control's tool call sets it, the CLI's own processes do not), then the command
    lines of its ancestors (each cut to ``width``); with ``passthrough`` a git filter or textconv (a label ending in
    ``clean``, ``smudge`` or ``textconv``) passes its input through."""
    passing = 'case "$1" in *clean|*smudge|*textconv) cat;; esac\n' if passthrough else ""
    return ("#!/bin/sh\n"
            f'{{ printf \'%s%s\' "$1" "${{{control}:+ [control]}}"; p=$$\n'
            '  while [ "$p" -gt 1 ] 2>/dev/null; do\n'
            "    p=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$p/status); [ -n \"$p\" ] && [ \"$p\" -gt 0 ] || break\n"
            f"    printf ' <- %s' \"$(tr '\\0\\n' '  ' < /proc/$p/cmdline | cut -c1-{width})\"\n"
            f"  done; echo; }} >> {log}\n"
            f"{passing}exit 0\n")
