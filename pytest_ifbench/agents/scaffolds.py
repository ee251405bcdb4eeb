"""How each real agent CLI is configured and invoked (used by :mod:`.cli`).

Every scaffold is pointed at the recording proxy (``url``, inside the sandbox), gets a placeholder API
key (the proxy ignores it; no real key ever enters the sandbox), runs non-interactively with every
permission granted -- the sandbox is the boundary -- and keeps its configuration in the run's private
``HOME`` (``/home/agent`` inside), so the workspace holds only the environment's files.

- ``claude_code``: environment only -- ``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY``,
  ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``, ``DISABLE_AUTOUPDATER=1`` and the model names;
  ``claude -p --model M --permission-mode bypassPermissions --output-format json
  [--append-system-prompt S] [-c]`` with the query on stdin (``-c`` continues the conversation for
  later queries).
- ``kilo``: ``~/.config/kilo/kilo.json`` (Kilo's global configuration) sets the ``anthropic``
  provider's ``baseURL``/``apiKey``, registers the model, allows every permission and, for a system
  prompt, lists ``~/.config/kilo/ifbench-system.md`` in ``instructions`` (Kilo appends instruction files
  to its system prompt); ``kilo run --model anthropic/M [--continue]`` with the query on stdin
  (given as an argument, Kilo would wrap a query with spaces in quotes). ``KILO_*`` variables turn
  off model-list fetches, updates, telemetry, sharing and LSP downloads, and allow one retry.
- ``droid``: ``~/.factory/settings.json`` holds one ``customModels`` entry (``provider: anthropic``,
  ``baseUrl`` the proxy); ``droid exec --skip-permissions-unsafe -m custom:M -o json
  [--append-system-prompt S] -- QUERY``. Single-turn only (:attr:`Scaffold.multi_turn`): Droid's
  ``-s SESSION`` fetches the session from Factory's servers, which a sandbox cannot reach.

The model name ``M`` is only what the CLI is told (and what its requests carry); the proxy sends every
call to the run's own model.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .workspace import Workspace

__all__ = ["PLACEHOLDER_KEY", "SCAFFOLDS", "Invocation", "Scaffold"]

#: The API key every CLI is given: not a secret, never accepted anywhere but by the proxy.
PLACEHOLDER_KEY = "ifbench-proxy-placeholder"


@dataclass(frozen=True, slots=True, kw_only=True)
class Invocation:
    """One sandboxed command: ``argv``, text on stdin and environment on top of the run's."""

    argv: tuple[str, ...]
    stdin: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)


class Scaffold(Protocol):
    #: Whether later queries can continue the first one's conversation.
    multi_turn: bool

    def configure(self, ws: Workspace, *, url: str, model: str, system: str | None) -> dict[str, str]:
        """Write the CLI's configuration for this run; return the environment of its commands."""
        ...

    def invocation(self, binary: str, query: str, *, turn: int, model: str, system: str | None) -> Invocation:
        """The command asking ``query`` (``turn`` 0 starts the conversation, later ones continue it)."""
        ...


def _write_home(ws: Workspace, relative: str, text: str) -> Path:
    """Write ``text`` to ``relative`` below the run's HOME, owned (with new parents) by the sandbox user."""
    path = ws.home / relative
    created = [p for p in reversed(path.relative_to(ws.home).parents) if not (ws.home / p).exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if os.geteuid() == 0:
        for part in created:
            os.chown(ws.home / part, ws.uid, ws.gid)
        os.chown(path, ws.uid, ws.gid)
    return path


class ClaudeCode:
    multi_turn = True

    def configure(self, ws: Workspace, *, url: str, model: str, system: str | None) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": PLACEHOLDER_KEY,
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                "ANTHROPIC_MODEL": model, "ANTHROPIC_SMALL_FAST_MODEL": model,
                "ANTHROPIC_DEFAULT_HAIKU_MODEL": model, "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
                "ANTHROPIC_DEFAULT_OPUS_MODEL": model}

    def invocation(self, binary: str, query: str, *, turn: int, model: str, system: str | None) -> Invocation:
        argv = [binary, "-p", "--model", model, "--permission-mode", "bypassPermissions", "--output-format", "json"]
        if system:
            argv += ["--append-system-prompt", system]
        if turn:
            argv.append("-c")
        return Invocation(argv=tuple(argv), stdin=query)

class Kilo:
    multi_turn = True
    CONFIG = ".config/kilo/kilo.json"
    SYSTEM = ".config/kilo/ifbench-system.md"

    def configure(self, ws: Workspace, *, url: str, model: str, system: str | None) -> dict[str, str]:
        config: dict = {
            "model": f"anthropic/{model}", "autoupdate": False, "share": "disabled",
            "provider": {"anthropic": {"options": {"baseURL": f"{url}/v1", "apiKey": PLACEHOLDER_KEY},
                                       "models": {model: {"name": model}}}},
            "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow", "doom_loop": "allow",
                           "external_directory": "allow"},
        }
        if system:
            _write_home(ws, self.SYSTEM, system)
            config["instructions"] = [f"{Workspace.HOME}/{self.SYSTEM}"]
        _write_home(ws, self.CONFIG, json.dumps(config, indent=2))
        return {"KILO_DISABLE_MODELS_FETCH": "1", "KILO_DISABLE_AUTOUPDATE": "1", "KILO_TELEMETRY_LEVEL": "off",
                "KILO_DISABLE_SHARE": "1", "KILO_DISABLE_LSP_DOWNLOAD": "1",
                # One retry of a failed call, not five: the proxy's client has already retried.
                "KILO_SESSION_RETRY_LIMIT": "1"}

    def invocation(self, binary: str, query: str, *, turn: int, model: str, system: str | None) -> Invocation:
        argv = [binary, "run", "--model", f"anthropic/{model}"]
        if turn:
            argv.append("--continue")
        return Invocation(argv=tuple(argv), stdin=query)

class Droid:
    multi_turn = False
    SETTINGS = ".factory/settings.json"
    MAX_OUTPUT_TOKENS = 32000

    def configure(self, ws: Workspace, *, url: str, model: str, system: str | None) -> dict[str, str]:
        settings = {"customModels": [{"model": model, "displayName": model, "baseUrl": url,
                                      "apiKey": PLACEHOLDER_KEY, "provider": "anthropic",
                                      "maxOutputTokens": self.MAX_OUTPUT_TOKENS}]}
        _write_home(ws, self.SETTINGS, json.dumps(settings, indent=2))
        return {}

    def invocation(self, binary: str, query: str, *, turn: int, model: str, system: str | None) -> Invocation:
        argv = [binary, "exec", "--skip-permissions-unsafe", "-m", f"custom:{model}", "-o", "json"]
        if system:
            argv += ["--append-system-prompt", system]
        return Invocation(argv=(*argv, "--", query))


SCAFFOLDS: dict[str, Scaffold] = {"claude_code": ClaudeCode(), "kilo": Kilo(), "droid": Droid()}
