"""The scripted model behind real-CLI tests: it writes hello.txt with each scaffold's own tool, then answers."""

from __future__ import annotations

import json
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
