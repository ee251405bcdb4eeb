"""Factory Droid (``droid``): a settings file in HOME, Messages wire format, single-turn.

``~/.factory/settings.json`` holds one ``customModels`` entry (``provider: anthropic``, ``baseUrl`` the
proxy); ``droid exec --skip-permissions-unsafe -m custom:M -o json --settings
~/.factory/ifbench-runtime-settings.json [--append-system-prompt S] -- QUERY``.
Single-turn only (:attr:`AgentCli.multi_turn`): Droid's ``-s SESSION`` fetches the session from
Factory's servers, which a sandbox cannot reach.

``--settings`` names Droid's runtime overlay, ``{"hooks": {"hooksDisabled": true}}``, which outranks the
user's (``~/.factory/settings.json``, ``~/.factory/hooks.json``) and the project's (``.factory/``) settings.
Droid re-reads those while it runs, and the agent's tool commands can write them all: a ``hooks`` entry written by a
tool call ran as Droid's child at that very call's ``PostToolUse`` and at ``Stop``, writing files with no tool call
and putting its ``additionalContext`` into the tool result the model and the judge read. The overlay is read once at
start; it lies in HOME too, where a tool command can rewrite it: a rewrite written mid-run was not read again
(tested), but Droid's code drops the overlay it read on a full settings refresh, which follows, for one, its
``Create`` tool writing a skill (not tested) -- a known gap.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ._base import HOME, PLACEHOLDER_KEY, AgentCli, Invocation, write_home

if TYPE_CHECKING:
    from ..workspace import Workspace

__all__ = ["CLI", "Droid"]

SETTINGS = ".factory/settings.json"
#: Droid's runtime settings overlay (``--settings``), which outranks the user's, the project's and the folders'
#: settings: none of their hooks runs (see the module doc).
RUNTIME_SETTINGS = ".factory/ifbench-runtime-settings.json"
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
        write_home(ws, RUNTIME_SETTINGS, json.dumps({"hooks": {"hooksDisabled": True}}, indent=2))
        return {}

    def invocation(self, binary: str, query: str, *, turn: int, model: str, system: str | None) -> Invocation:
        argv = [binary, "exec", "--skip-permissions-unsafe", "-m", f"custom:{model}", "-o", "json",
                "--settings", f"{HOME}/{RUNTIME_SETTINGS}"]
        if system:
            argv += ["--append-system-prompt", system]
        return Invocation(argv=(*argv, "--", query))


CLI = Droid(name="droid", package="droid", version="0.215.0", binary="droid", wire="anthropic_messages",
            multi_turn=False, prompt_tokens=8400)
