"""A trajectory as readable step-by-step text: the trajectory judge's input and the report's attachment.

Layout: structure lines (``[user]``, ``[assistant turn 2]``, ``tool call Read (id toolu_1):``...) start at the
conversation's indentation; everything the conversation carried -- prompts, texts, reasoning, call arguments,
tool outputs -- follows on lines prefixed ``  | ``, so no content can pass for a structure line (every line
break of a content counts, a carriage return or U+2028 as much as a newline; one in a structure line is shown
escaped). A sub-agent's conversation follows the assistant turn whose call spawned it, indented four spaces per
level; sub-agents linked only by time come last. Example::

    [trajectory s1] model: m1
    [tools] Read(file_path*, limit); Bash(command*)
    [system prompt] (1,234 characters)
      | You are a coding agent. ...
    [user]
      | Explain auth.py
    [assistant turn 1]
      reasoning:
      | The user wants an explanation.
      text:
      | Let me read it.
      tool call Read (id toolu_1):
      | {"file_path": "auth.py"}
    [tool result for toolu_1 (Read)]
      | def login(): ...
    [tool result for toolu_2 (Bash) ERROR]
      | command not found

Truncation rule (deterministic; every cut is marked ``[... N characters elided ...]``):

1. every tool output, and every tool call's arguments, longer than ``tool_output_chars`` keeps its first and
   last ``tool_output_chars / 2`` characters (the authors' judge: 5,000 cut to 2,500 + 2,500; they leave
   arguments whole);
2. every assistant text and reasoning longer than ``assistant_chars`` keeps its first and last
   ``assistant_chars / 2`` (25,000 + 25,000), and the system prompt likewise at ``system_chars``;
3. while the text is longer than ``max_chars``, the oldest remaining tool output is elided entirely
   (``[tool output elided: N characters]``);
4. then, while still longer, the oldest assistant reasoning, text and call arguments, except those of the
   last assistant turn of the main conversation (``[reasoning elided: N characters]``...).

A content shorter than its elision marker is left as it is.

User turns, the last assistant turn and the structure lines are never cut: a transcript can stay over
``max_chars`` only when they alone exceed it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .trajectory import Message, Trajectory

INDENT = "    "
QUOTE = "  | "
#: Every line break a reader sees (those of ``str.splitlines``). Quoting a content on "\n" alone left a "\r" or
#: a "\u2028" in it free to start a line of its own, unquoted, that could pass for a structure line ("[user]").
_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


@dataclass(slots=True)
class _Piece:
    """One rendered unit: a structure line (``header``) and the content quoted under it (``body``)."""

    header: str
    body: str | None = None
    #: ``output`` | ``arguments`` | ``text`` | ``reasoning`` | ``system`` | ``user`` | ``line``
    kind: str = "line"
    depth: int = 0
    #: Part of the main conversation's last assistant turn (never elided).
    last: bool = False
    elided: bool = False
    #: The body's length before any cut.
    chars: int = 0

    def render(self) -> str:
        indent = INDENT * self.depth
        # A header holds names the model chose (a tool's, a call's id): a line break in one is shown, not made.
        header = _LINE_BREAK.sub(lambda m: repr(m.group())[1:-1], self.header)
        out = f"{indent}{header}\n"
        if self.body is not None:
            out += "".join(f"{indent}{QUOTE}{line}\n" for line in _LINE_BREAK.split(self.body))
        return out


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit:,} characters elided ...]\n{text[len(text) - tail:]}"


def _signature(tool: Mapping[str, Any]) -> str:
    spec = tool.get("function", tool)
    schema = spec.get("parameters") or {}
    required = set(schema.get("required") or ())
    names = [f"{name}{'*' if name in required else ''}" for name in (schema.get("properties") or {})]
    return f"{spec.get('name')}({', '.join(names)})"


def _images(blocks: Any) -> int:
    count = 0
    for block in blocks or ():
        if isinstance(block, Mapping):
            count += block.get("type") == "image"
            if isinstance(block.get("content"), list):
                count += _images(block["content"])
    return count


def _with_images(header: str, message: Message) -> str:
    images = _images(message.blocks)
    return f"{header} (+{images} image{'s' if images > 1 else ''})" if images else header


def _conversation(trajectory: Trajectory, depth: int, last: Message | None) -> Iterator[_Piece]:
    model = trajectory.meta.get("model")
    if depth == 0:
        yield _Piece(header=f"[trajectory {trajectory.id}]" + (f" model: {model}" if model else ""), depth=depth)
    if trajectory.tools:
        yield _Piece(header="[tools] " + "; ".join(_signature(t) for t in trajectory.tools), depth=depth)
    spawned = {c.parent_call_id: c for c in trajectory.children if c.parent_call_id}
    linked = set()
    for message in trajectory.messages:
        if message.role == "system":
            yield _Piece(header=f"[system prompt] ({len(message.content):,} characters)", body=message.content,
                         kind="system", depth=depth)
        elif message.role == "user":
            yield _Piece(header=_with_images("[user]", message), body=message.content, kind="user", depth=depth)
        elif message.role == "tool":
            error = " ERROR" if message.is_error else ""
            header = f"[tool result for {message.tool_call_id} ({message.tool_name}){error}]"
            yield _Piece(header=_with_images(header, message), body=message.content, kind="output", depth=depth)
        else:
            is_last = message is last
            origin = "" if message.generation else " (seen only in a later request's history)"
            yield _Piece(header=f"[assistant turn {message.turn}]{origin}", depth=depth, last=is_last)
            if any(b.get("redacted") for b in message.blocks):
                yield _Piece(header="  reasoning: [redacted by the provider]", depth=depth, last=is_last)
            for label, kind, text in (("reasoning", "reasoning", message.reasoning_content),
                                      ("text", "text", message.content)):
                if text:
                    yield _Piece(header=f"  {label}:", body=text, kind=kind, depth=depth, last=is_last)
            for call in message.tool_calls:
                function = call.get("function", {})
                yield _Piece(header=f"  tool call {function.get('name')} (id {call.get('id')}):",
                             body=str(function.get("arguments") or "{}"), kind="arguments", depth=depth,
                             last=is_last)
            for call in message.tool_calls:
                child = spawned.get(call.get("id"))
                if child is not None:
                    linked.add(child.id)
                    yield from _child(child, depth, f"spawned by call {call.get('id')}")
    for child in trajectory.children:
        if child.id not in linked:
            yield from _child(child, depth, "not spawned by a tool call: linked by time")


def _child(child: Trajectory, depth: int, how: str) -> Iterator[_Piece]:
    yield _Piece(header=f"[sub-agent {child.id}, {how}]", depth=depth + 1)
    yield from _conversation(child, depth + 1, None)
    yield _Piece(header=f"[end of sub-agent {child.id}]", depth=depth + 1)


def render_transcript(trajectory: Trajectory, *, max_chars: int = 200_000, tool_output_chars: int = 5_000,
                      assistant_chars: int = 50_000, system_chars: int = 20_000) -> str:
    """``trajectory`` as text, cut to ``max_chars`` by the rule in the module doc."""
    turns = trajectory.assistant_turns()
    pieces = list(_conversation(trajectory, 0, turns[-1] if turns else None))
    limits = {"output": tool_output_chars, "arguments": tool_output_chars, "text": assistant_chars,
              "reasoning": assistant_chars, "system": system_chars}
    for piece in pieces:
        piece.chars = len(piece.body or "")
        if piece.body is not None and piece.kind in limits:
            piece.body = _cut(piece.body, limits[piece.kind])
    sizes = [len(piece.render()) for piece in pieces]
    total = sum(sizes)
    for kinds in (("output",), ("reasoning", "text", "arguments")):
        for index, piece in enumerate(pieces):
            if total <= max_chars:
                break
            if piece.kind not in kinds or piece.last or piece.elided or piece.body is None:
                continue
            what = "tool output" if piece.kind == "output" else piece.kind
            marker = f"[{what} elided: {piece.chars:,} characters]"
            if len(marker) < len(piece.body):
                piece.body = marker
                piece.elided = True
                size = len(piece.render())
                total += size - sizes[index]
                sizes[index] = size
    return "".join(piece.render() for piece in pieces)
