"""Kilo (``@kilocode/cli``): a global configuration file in HOME, Messages wire format.

``~/.config/kilo/kilo.json`` (Kilo's global configuration) sets the ``anthropic`` provider's
``baseURL``/``apiKey``, registers the model, allows every permission and, for a system prompt, lists
``~/.config/kilo/ifbench-system.md`` in ``instructions`` (Kilo appends instruction files to its system
prompt); ``kilo run --auto --model anthropic/M [--continue]`` with the query on stdin (given as an argument,
Kilo would wrap a query with spaces in quotes). ``--auto`` approves what the configuration does not deny:
without it Kilo asks at some calls its configuration allows (a command naming two directories outside the
workspace: ``external_directory``), finds no one to answer in ``run``, rejects the call and exits 1 --
the agent's run ended for an ordinary command. The sandbox, not Kilo's prompts, is the boundary.
``KILO_*`` variables turn off model-list fetches, updates, telemetry, sharing and LSP downloads, and allow
one retry. ``KILO_PURE=1`` (Kilo's ``--pure``) loads no external plugin: Kilo imports the plugins of
``{plugin,plugins}/*.{js,ts}`` in its global and project configuration directories (``~/.config/kilo``,
``.kilo``, ``.kilocode``) and the ``plugin`` lists of its configuration files into its own process at
start-up, and all of them lie where the agent's tool commands write -- a plugin written in one turn would
run as the CLI in the next (posting to the relay as the CLI, rewriting tool outputs). Its custom tools
(``{tool,tools}/*.{js,ts}`` of the same directories) are imported whatever ``KILO_PURE`` says: Kilo declares
them, and its system prompt's instruction file, in ``loads_at_start``, so that the runner ends the run as the
agent's failure when its commands changed them before Kilo starts again (:mod:`..startup_files`).
``kilo`` is a node script that
starts the native executable (``bin/.kilo``) as its child: a launcher, whose child calls the model.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ._base import HOME, PLACEHOLDER_KEY, AgentCli, Invocation, write_home

if TYPE_CHECKING:
    from ..workspace import Workspace

__all__ = ["CLI", "Kilo"]

CONFIG = ".config/kilo/kilo.json"
SYSTEM = ".config/kilo/ifbench-system.md"


class Kilo(AgentCli):
    __slots__ = ()
    CONFIG = CONFIG
    SYSTEM = SYSTEM

    def configure(self, ws: Workspace, *, url: str, model: str, system: str | None) -> dict[str, str]:
        config: dict[str, Any] = {
            "model": f"anthropic/{model}", "autoupdate": False, "share": "disabled",
            "provider": {"anthropic": {"options": {"baseURL": f"{url}/v1", "apiKey": PLACEHOLDER_KEY},
                                       "models": {model: {"name": model}}}},
            "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow", "doom_loop": "allow",
                           "external_directory": "allow"},
        }
        if system:
            write_home(ws, SYSTEM, system)
            config["instructions"] = [f"{HOME}/{SYSTEM}"]
        write_home(ws, CONFIG, json.dumps(config, indent=2))
        return {"KILO_DISABLE_MODELS_FETCH": "1", "KILO_DISABLE_AUTOUPDATE": "1", "KILO_TELEMETRY_LEVEL": "off",
                "KILO_DISABLE_SHARE": "1", "KILO_DISABLE_LSP_DOWNLOAD": "1",
                # No plugin from anywhere: the agent can write every place Kilo loads one from (see above).
                "KILO_PURE": "1",
                # One retry of a failed call, not five: the proxy's client has already retried.
                "KILO_SESSION_RETRY_LIMIT": "1"}

    def invocation(self, binary: str, query: str, *, turn: int, model: str, system: str | None) -> Invocation:
        argv = [binary, "run", "--auto", "--model", f"anthropic/{model}"]
        if turn:
            argv.append("--continue")
        return Invocation(argv=tuple(argv), stdin=query)


#: Kilo's custom tools, imported into its process at start-up whatever ``KILO_PURE`` says, and its system prompt's
#: instruction file: the agent must not change them between two commands (see the module doc).
LOADS_AT_START = tuple(f"{where}/{kind}/*" for where in ("~/.config/kilo", ".kilo", ".kilocode")
                       for kind in ("tool", "tools")) + (f"~/{SYSTEM}",)

CLI = Kilo(name="kilo", package="@kilocode/cli", version="7.7.7", binary="kilo", wire="anthropic_messages",
          prompt_tokens=12500, launcher=True, loads_at_start=LOADS_AT_START)
