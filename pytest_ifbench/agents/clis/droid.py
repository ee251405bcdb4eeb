"""Factory Droid (``droid``): a settings file in HOME, Messages wire format, single-turn.

``~/.factory/settings.json`` holds one ``customModels`` entry (``provider: anthropic``, ``baseUrl`` the
proxy); ``droid exec --skip-permissions-unsafe -m custom:M -o json [--append-system-prompt S] -- QUERY``.
Single-turn only (:attr:`AgentCli.multi_turn`): Droid's ``-s SESSION`` fetches the session from
Factory's servers, which a sandbox cannot reach.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ._base import PLACEHOLDER_KEY, AgentCli, Invocation, write_home

if TYPE_CHECKING:
    from ..workspace import Workspace

__all__ = ["CLI", "Droid"]

SETTINGS = ".factory/settings.json"
MAX_OUTPUT_TOKENS = 32000


class Droid(AgentCli):
    __slots__ = ()
    SETTINGS = SETTINGS
    MAX_OUTPUT_TOKENS = MAX_OUTPUT_TOKENS

    def configure(self, ws: Workspace, *, url: str, model: str, system: str | None) -> dict[str, str]:
        settings = {"customModels": [{"model": model, "displayName": model, "baseUrl": url,
                                      "apiKey": PLACEHOLDER_KEY, "provider": "anthropic",
                                      "maxOutputTokens": MAX_OUTPUT_TOKENS}]}
        write_home(ws, SETTINGS, json.dumps(settings, indent=2))
        return {}

    def invocation(self, binary: str, query: str, *, turn: int, model: str, system: str | None) -> Invocation:
        argv = [binary, "exec", "--skip-permissions-unsafe", "-m", f"custom:{model}", "-o", "json"]
        if system:
            argv += ["--append-system-prompt", system]
        return Invocation(argv=(*argv, "--", query))


CLI = Droid(name="droid", package="droid", version="0.215.0", binary="droid", wire="anthropic_messages",
            multi_turn=False, prompt_tokens=8400)
