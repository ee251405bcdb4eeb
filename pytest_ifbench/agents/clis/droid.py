"""Factory Droid (``droid``): a settings file in HOME, Messages wire format, single-turn.

``~/.factory/settings.json`` holds one ``customModels`` entry (``provider: anthropic``, ``baseUrl`` the
proxy); ``droid exec --skip-permissions-unsafe -m custom:M -o json --settings
<agents directory>/ifbench-droid-runtime-settings.json [--append-system-prompt S] -- QUERY``.
Single-turn only (:attr:`AgentCli.multi_turn`): Droid's ``-s SESSION`` fetches the session from
Factory's servers, which a sandbox cannot reach.

``--settings`` names Droid's runtime overlay, ``{"hooks": {"hooksDisabled": true}, "mcpPolicy": {"enabled": true,
"allowlist": []}, "enableDroidShield": false}``, which outranks the user's (``~/.factory/settings.json``,
``~/.factory/hooks.json``, ``~/.factory/mcp.json``) and the project's (``.factory/``) settings.
Droid re-reads those while it runs, and the agent's tool commands can write them all: a ``hooks`` entry written by a
tool call ran as Droid's child at that very call's ``PostToolUse`` and at ``Stop``, writing files with no tool call
and putting its ``additionalContext`` into the tool result the model and the judge read. Droid reads the overlay
at start and caches it, but a full settings refresh (``SettingsManager.refresh()``) drops the cache and reads the
file again from its path; its ``Create`` tool refreshes so after writing any ``.factory/skills/<name>/SKILL.md``.
An overlay in HOME let one run rewrite (or delete) it and the user's hooks with a shell call, write a skill with
``Create``, and have the hooks run from the next tool call on (tested). So the overlay lies in the agents
directory, which every run shows read-only at its own path (``extra_ro``): a refresh reads the same file again,
and no tool command can change, delete or replace it. It is written there (once, atomically) when Droid is
configured; a fresh run needs that directory writable by the harness, as installing the CLIs did.

``mcpPolicy`` because Droid starts the stdio MCP servers of those files (``mcp.json``) as its own children, and
starts each new one while it runs: on every settings change (it watches ``~/.factory`` from the start) and on a
refresh. A server a shell call wrote to ``~/.factory/mcp.json`` started before the next tool call ended, one in the
project's ``.factory/mcp.json`` after ``Create`` wrote a skill -- each ran its command with no tool call (tested).
``hooksDisabled`` does not cover them and no flag turns MCP off; Droid's MCP allowlist does, at start, on every
reload and before any server starts, and an overlay's ``enabled: true`` wins over the levels below. An empty
allowlist allows none: a task's own MCP servers (a shipped ``.factory/mcp.json``) do not start either.

``enableDroidShield: false`` because Droid Shield, before every shell call holding ``git commit`` or ``git push``
(``false && git commit`` too), runs ``git rev-parse`` and ``git diff --cached`` itself, as Droid's child, in the
workspace: a ``core.fsmonitor`` an earlier call put in ``.git/config`` (or ``~/.gitconfig``) ran with no tool command
running git (tested). Without it Droid does not scan commits for secrets, as a bare Droid would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..._atomic_file import replace_file
from ..._user_cache import agents_dir
from ._base import PLACEHOLDER_KEY, AgentCli, Invocation, write_home

if TYPE_CHECKING:
    from ..workspace import Workspace

__all__ = ["CLI", "Droid"]

SETTINGS = ".factory/settings.json"
#: Droid's runtime settings overlay (``--settings``), which outranks the user's, the project's and the folders'
#: settings: none of their hooks runs, Droid's own MCP allowlist, on and empty, lets no MCP server start, and Droid
#: Shield runs no git of Droid's own. Its name in the agents directory, read-only to every run (see the module doc).
RUNTIME_SETTINGS = "ifbench-droid-runtime-settings.json"
OVERLAY = json.dumps({"hooks": {"hooksDisabled": True}, "mcpPolicy": {"enabled": True, "allowlist": []},
                      "enableDroidShield": False}, indent=2) + "\n"
MAX_OUTPUT_TOKENS = 32000


class Droid(AgentCli):
    __slots__ = ()
    SETTINGS = SETTINGS
    RUNTIME_SETTINGS = RUNTIME_SETTINGS
    MAX_OUTPUT_TOKENS = MAX_OUTPUT_TOKENS

    def configure(self, ws: Workspace, *, url: str, model: str, system: str | None) -> dict[str, str]:
        settings = {"customModels": [{"model": model, "displayName": model, "baseUrl": url,
                                      "apiKey": PLACEHOLDER_KEY, "provider": "anthropic",
                                      "maxOutputTokens": MAX_OUTPUT_TOKENS}]}
        write_home(ws, SETTINGS, json.dumps(settings, indent=2))
        _write_overlay(runtime_settings())
        return {}

    def invocation(self, binary: str, query: str, *, turn: int, model: str, system: str | None) -> Invocation:
        argv = [binary, "exec", "--skip-permissions-unsafe", "-m", f"custom:{model}", "-o", "json",
                "--settings", str(runtime_settings())]
        if system:
            argv += ["--append-system-prompt", system]
        return Invocation(argv=(*argv, "--", query))


def runtime_settings() -> Path:
    """Where the overlay lies: in the agents directory, which the sandbox shows read-only (see the module doc)."""
    return agents_dir() / RUNTIME_SETTINGS


def _write_overlay(path: Path) -> None:
    """Write the overlay unless it is there as it should be (atomically: other runs may be reading it). Not
    in a directory that does not exist: no CLI is installed there, so none runs with it."""
    if not path.parent.is_dir():
        return
    try:
        if path.read_text(encoding="utf-8") == OVERLAY:
            return
    except OSError:
        pass
    replace_file(path, OVERLAY, mode=0o644)  # the sandbox's uid reads it


CLI = Droid(name="droid", package="droid", version="0.215.0", binary="droid", wire="anthropic_messages",
            aliases=("Factory Droid",),
            multi_turn=False, prompt_tokens=8400)
