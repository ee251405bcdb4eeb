"""Claude Code (``@anthropic-ai/claude-code``): environment only, Messages wire format.

``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY``, ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``,
``DISABLE_AUTOUPDATER=1`` and the model names; ``claude -p --model M --permission-mode bypassPermissions
--output-format json --settings '{"disableAllHooks": true, "apiKeyHelper": "", "otelHeadersHelper": ""}'
[--append-system-prompt S | --system-prompt S] [-c]`` with the query on stdin (``--system-prompt`` replaces Claude
Code's own prompt, as some benchmarks' authors run it; ``-c`` continues the conversation for later queries). The
model name ``M`` is only
what the CLI is told (and what its requests carry); the proxy sends every call to the run's own model.

``--settings``: command-line settings outrank the user's (``~/.claude/settings.json``), the project's
(``.claude/settings.json``) and the local (``.claude/settings.local.json``) files, all of which the agent's tool
commands can write. A ``hooks`` entry there ran as the CLI's child at the CLI's own events -- at the
``PostToolUse`` of the very call that wrote it (2.1.330 re-reads its settings while it runs) and at every
event of the next turn's start -- writing files with no tool call and putting its ``additionalContext`` into
what the model and the judge read; an ``apiKeyHelper`` ran a command at each start though
``ANTHROPIC_API_KEY`` is set (an empty one is none; the proxy ignores keys anyway), and an ``otelHeadersHelper``
at 2.1.330's start once the settings' ``env`` turned telemetry on (an empty one is none too). (``awsAuthRefresh``
and the like run only for Bedrock or Vertex, which take the model away from the relay: the agent's fault.) The
rest of those files (a task's own ``permissions`` or ``env``) and ``CLAUDE.md`` still apply. Not covered: MCP
servers (``~/.claude.json``, an enabled ``.mcp.json``) start with the CLI -- a known gap.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ._base import PLACEHOLDER_KEY, AgentCli, Invocation

if TYPE_CHECKING:
    from ..workspace import Workspace

__all__ = ["CLI", "ClaudeCode"]

#: Command-line settings, which outrank the user's, the project's and the local settings files: none of their
#: hooks, nor an ``apiKeyHelper`` or ``otelHeadersHelper`` command, runs (see the module doc).
NO_HOOKS = json.dumps({"disableAllHooks": True, "apiKeyHelper": "", "otelHeadersHelper": ""})


class ClaudeCode(AgentCli):
    __slots__ = ()

    def configure(self, ws: Workspace, *, url: str, model: str, system: str | None) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": PLACEHOLDER_KEY,
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                "ANTHROPIC_MODEL": model, "ANTHROPIC_SMALL_FAST_MODEL": model,
                "ANTHROPIC_DEFAULT_HAIKU_MODEL": model, "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
                "ANTHROPIC_DEFAULT_OPUS_MODEL": model}

    def invocation(self, binary: str, query: str, *, turn: int, model: str, system: str | None,
                   replace_system: bool = False) -> Invocation:
        argv = [binary, "-p", "--model", model, "--permission-mode", "bypassPermissions", "--output-format", "json",
                "--settings", NO_HOOKS]
        if system:
            argv += ["--system-prompt" if replace_system else "--append-system-prompt", system]
        if turn:
            argv.append("-c")
        return Invocation(argv=tuple(argv), stdin=query)


CLI = ClaudeCode(name="claude_code", package="@anthropic-ai/claude-code", version="2.1.330", binary="claude",
                 wire="anthropic_messages", replaces_system=True, prompt_tokens=21000)
