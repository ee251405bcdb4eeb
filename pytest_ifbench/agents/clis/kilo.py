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
agent's failure when its commands changed them before Kilo starts again (:mod:`..startup_files`). So are its
configuration files -- global (``~/.config/kilo``), home (``~/.kilo``, ``~/.kilocode``) and the workspace's
(``kilo.json[c]``, ``opencode.json[c]``, those of ``.kilo``/``.kilocode`` and their legacy ``mcp.json``): Kilo
starts the local MCP servers they name as its own children and runs its bash tool through their ``shell``, with
no tool call for it. What those servers run is compared too (:meth:`Kilo.startup_state`): the files in the
workspace or HOME that a local server's ``command`` names (``["sh", "/workspace/tool.sh"]``, ``["python",
"server.py"]``, relative to the workspace), and those a configuration file pulls in with ``{file:...}`` -- so that the
agent rewriting the program of a server the task ships ends its run as well (what that program imports is not
followed: :mod:`..startup_files`). Kilo adds ``$schema`` to a configuration file without one when it reads it, so
:meth:`Kilo.configure` writes it into its own file and into those the task ships, before the runner's first
snapshot. ``KILO_CONFIG_CONTENT`` (ranked above every file) turns formatters and language servers off: Kilo
runs their commands after its tools touch a file, a task's own included (whose program the agent may rewrite). It
turns Kilo's snapshots off too: after every step Kilo ran git over the workspace -- in a repository of its own in HOME
(``~/.local/share/kilo/snapshot``, ``--work-tree /workspace``) and in the workspace's own (``ls-files``,
``update-index``, ``write-tree``, ``check-attr``, ``update-ref refs/kilo/materialize/...``) -- and git ran the
commands its configuration names: the ``core.fsmonitor`` and ``core.hooksPath`` hooks of ``.git/config`` and
``~/.gitconfig``, the ``clean``/``smudge`` filters and ``textconv`` a ``.gitattributes`` gives a file. A tool call
that configured them had them run as Kilo's children right after it, in the same turn (no comparison between turns
helps there), with no tool call running git (tested: ``test_cli_git_integrity.py``). Without snapshots Kilo runs no
such git; it records no file changes to undo or revert (which ``kilo run`` does not do) and leaves no ``refs/kilo/*``
in the task's repository.

Kilo's configuration directories are ``~/.config/kilo``, ``~/.kilo``, ``~/.kilocode`` and the workspace's ``.kilo`` and
``.kilocode``: it imports the custom tools of all five (those of ``~/.kilo``/``~/.kilocode`` ran inside Kilo in turn 2
too, tested), and, when one holds a plugin file (``{plugin,plugins}/*``, or a configuration file there lists a plugin),
installs that directory's npm dependencies as it starts, ``KILO_PURE`` or not (its own npm, scripts off): npm reads the
directory's ``package.json``/``package-lock.json`` and the ``.npmrc`` files, and runs the ``git`` they name for a git
dependency -- an agent-written ``.npmrc`` with ``git=/home/agent/x.sh`` ran as Kilo's child at turn 2's start (tested:
``test_bun_cli_startup_integrity.py``). So the directories' npm files are in ``loads_at_start`` too, and the user's
and the workspace's ``.npmrc`` in :meth:`Kilo.startup_state` while a directory would install (a plugin file itself is
not compared: it is inert, and the agent may write one).

``kilo`` is a node script that
starts the native executable (``bin/.kilo``) as its child: a launcher, whose child calls the model.
"""

from __future__ import annotations

import json
import posixpath
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..startup_files import programs, read_config, sandbox_path, snapshot
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
            # Kilo adds ``$schema`` to a configuration file without one when it reads it: in the CLI's first run,
            # after the runner's snapshot of what it loads at start-up (the file would have changed).
            "$schema": SCHEMA,
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
        for name in PROJECT_CONFIGS:  # the task's own, as Kilo will leave them once it has read them
            if not name.endswith("mcp.json"):  # (read, never written)
                _add_schema(ws.path / name)
        return {"KILO_DISABLE_MODELS_FETCH": "1", "KILO_DISABLE_AUTOUPDATE": "1", "KILO_TELEMETRY_LEVEL": "off",
                "KILO_DISABLE_SHARE": "1", "KILO_DISABLE_LSP_DOWNLOAD": "1",
                # No plugin from anywhere: the agent can write every place Kilo loads one from (see above).
                "KILO_PURE": "1",
                # No formatter, no language server, whatever the files say: Kilo would run their commands as its
                # own children after its tools touch a file (ranked above every configuration file). No snapshot:
                # Kilo's git after every step ran the fsmonitor, hooks, filters and textconv the agent had just
                # configured (``.git/config``, ``~/.gitconfig``), in that same turn (see the module doc).
                "KILO_CONFIG_CONTENT": json.dumps({"formatter": False, "lsp": False, "snapshot": False}),
                # One retry of a failed call, not five: the proxy's client has already retried.
                "KILO_SESSION_RETRY_LIMIT": "1"}

    def invocation(self, binary: str, query: str, *, turn: int, model: str, system: str | None) -> Invocation:
        argv = [binary, "run", "--auto", "--model", f"anthropic/{model}"]
        if turn:
            argv.append("--continue")
        return Invocation(argv=tuple(argv), stdin=query)

    def startup_state(self, *, workspace: Path, home: Path) -> dict[str, str]:
        """The files the local MCP servers of Kilo's configuration files run, and those the files pull in with
        ``{file:...}`` (the files themselves are in :attr:`~.AgentCli.loads_at_start`; see the module doc); and while a
        configuration directory holds a plugin (Kilo then installs its npm dependencies as it starts), the ``.npmrc``
        files its npm reads besides the directory's own."""
        argvs: list[list[Any]] = []
        installs = False
        for path in (*HOME_CONFIGS, *PROJECT_CONFIGS):
            parse = _toml if path.endswith("/config") else _jsonc
            data, _ = read_config(path, workspace=workspace, home=home, parse=parse)
            if data is None:
                continue
            config, pulled = data
            argvs += _local_servers(config)
            folder = posixpath.dirname(sandbox_path(path))
            argvs += [[name if name.startswith(("/", "~/")) else posixpath.join(folder, name) for name in pulled]]
            installs = installs or (path.startswith(CONFIG_DIRS) and _plugins(config))
        state = programs(argvs, workspace=workspace, home=home)
        if installs or snapshot(PLUGIN_FILES, workspace=workspace, home=home):
            state.update(snapshot(NPM_RC, workspace=workspace, home=home))  # what Kilo's npm install reads (above)
        return state


SCHEMA = "https://app.kilo.ai/config.json"
_NAMES = ("kilo.json", "kilo.jsonc", "opencode.json", "opencode.jsonc")
#: The workspace's configuration files: its own, its ``.kilo``/``.kilocode`` directories' and their legacy MCP
#: settings (``mcp.json``).
PROJECT_CONFIGS = (*_NAMES, *(f"{where}/{name}" for where in (".kilo", ".kilocode") for name in (*_NAMES, "mcp.json")))
#: Kilo's global configuration files (with the legacy ``config.json`` and TOML ``config``) and its home
#: configuration directories'.
HOME_CONFIGS = (*(f"~/.config/kilo/{name}" for name in ("config.json", *_NAMES, "config")),
                *(f"~/{where}/{name}" for where in (".kilo", ".kilocode") for name in _NAMES))
#: Kilo's configuration directories (global, home, the workspace's).
CONFIG_DIRS = ("~/.config/kilo", "~/.kilo", "~/.kilocode", ".kilo", ".kilocode")
#: Their plugin files: never imported (``KILO_PURE``), but one makes Kilo install the directory's npm dependencies
#: when it starts (see the module doc). Not compared themselves: writing one stays the agent's to do.
PLUGIN_FILES = tuple(f"{where}/{kind}/*" for where in CONFIG_DIRS for kind in ("plugin", "plugins"))
#: What that install reads in the directory: what it installs, and the ``.npmrc`` naming the ``git`` it runs.
NPM_FILES = tuple(f"{where}/{name}" for where in CONFIG_DIRS
                  for name in ("package.json", "package-lock.json", ".npmrc"))
#: The other ``.npmrc`` files npm reads there (the user's; a project's up the tree), compared while one would install.
NPM_RC = ("~/.npmrc", "~/.config/.npmrc", ".npmrc")
#: Kilo's custom tools, imported into its process at start-up whatever ``KILO_PURE`` says, the npm files of its
#: configuration directories, its system prompt's instruction file and its configuration files (their MCP servers
#: started with it, the ``shell`` its bash tool runs): the agent must not change them between two commands (see the
#: module doc).
LOADS_AT_START = (tuple(f"{where}/{kind}/*" for where in CONFIG_DIRS for kind in ("tool", "tools")) + NPM_FILES
                  + (f"~/{SYSTEM}",) + HOME_CONFIGS + PROJECT_CONFIGS)


def _add_schema(path: Path) -> None:
    """Give a configuration file the task ships the ``$schema`` Kilo writes into it when it first reads one without
    (its first property), so that Kilo leaves it as the runner found it; a file that is no JSON object is left
    alone (Kilo does not write it either)."""
    try:
        text = path.read_text(encoding="utf-8") if path.is_file() and not path.is_symlink() else None
    except (OSError, UnicodeDecodeError):
        return
    if text is None:
        return
    plain = _without_comments(text)
    try:
        data = _jsonc_data(plain)
    except ValueError:
        return
    if not isinstance(data, dict) or data.get("$schema"):
        return
    brace = plain.index("{")
    empty = plain[brace + 1:].strip().startswith("}")
    entry = f'\n  "$schema": {json.dumps(SCHEMA)}' + ("\n" if empty else ",")
    path.write_text(text[:brace + 1] + entry + text[brace + 1:], encoding="utf-8")


_PULLED = re.compile(r"\{file:([^}]+)\}")


def _jsonc(text: str) -> tuple[Any, list[str]]:
    """A JSONC configuration file's data, and the files it pulls in (``{file:...}``)."""
    return _jsonc_data(_without_comments(text)), _PULLED.findall(text)


def _jsonc_data(plain: str) -> Any:
    """The data of JSONC text with its comments blanked out (:func:`_without_comments`), trailing commas allowed."""
    return json.loads(re.sub(r",(\s*[}\]])", r"\1", plain))


def _toml(text: str) -> tuple[Any, list[str]]:
    """The legacy TOML configuration file's data, and the files it pulls in."""
    return tomllib.loads(text), _PULLED.findall(text)


def _plugins(config: Any) -> bool:
    """Whether a configuration lists a plugin (Kilo installs its directory's dependencies for a local one)."""
    return isinstance(config, dict) and bool(config.get("plugin"))


def _local_servers(config: Any) -> Iterator[list[Any]]:
    """The command lines of a configuration's local MCP servers (``mcp``) and of its legacy ``mcpServers``."""
    if not isinstance(config, dict):
        return
    for server in config["mcp"].values() if isinstance(config.get("mcp"), dict) else ():
        local = isinstance(server, dict) and server.get("type") in ("local", None)
        if local and isinstance(server.get("command"), list):
            yield server["command"]
    for server in config["mcpServers"].values() if isinstance(config.get("mcpServers"), dict) else ():
        if isinstance(server, dict) and not server.get("url"):
            args = server.get("args")
            yield [server.get("command"), *(args if isinstance(args, list) else ())]


def _without_comments(text: str) -> str:
    """``text`` with its JSONC comments blanked out (same length: indices stay those of ``text``)."""
    out, i, quoted = list(text), 0, False
    while i < len(text):
        char = text[i]
        if quoted:
            if char == "\\":
                i += 1
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif text.startswith(("//", "/*"), i):
            line = text[i + 1] == "/"
            end = text.find("\n" if line else "*/", i + 2)
            end = len(text) if end < 0 else end + (0 if line else 2)
            out[i:end] = [c if c == "\n" else " " for c in text[i:end]]
            i = end
            continue
        i += 1
    return "".join(out)


#: Kilo's grep and glob tools run ``rg`` from the ``PATH``, else from its cache in HOME, else download it from GitHub
#: (which fails in the sandbox: "ripgrep execution failed: Transport error").
NEEDS = (("rg", "Kilo's grep and glob tools run it, and would download it otherwise: install ripgrep, e.g. "
                "`apt-get install ripgrep`"),)

CLI = Kilo(name="kilo", package="@kilocode/cli", version="7.7.7", binary="kilo", wire="anthropic_messages",
          aliases=("Kilo Code", "kilo-dev", "kilo cli"),
          prompt_tokens=12500, launcher=True, loads_at_start=LOADS_AT_START, needs=NEEDS)
