"""What Kilo and Droid (Bun programs) start by themselves, outside a tool call, never runs what the agent wrote: real
Kilo and Droid runs whose tool calls write the files those starts read.

Kilo 7.7.7 imports the custom tools (``{tool,tools}/*.{js,ts}``) of all its configuration directories when it
starts -- ``~/.config/kilo``, the workspace's ``.kilo``/``.kilocode``, and ``~/.kilo``/``~/.kilocode`` too: a tool
turn 1 wrote into one of the last two ran inside Kilo at turn 2's start. And when a configuration directory holds a
plugin file (``{plugin,plugins}/*``; ``KILO_PURE=1`` keeps it out of Kilo's process, not this), Kilo installs that
directory's npm dependencies as it starts (its bundled npm, ``ignoreScripts``: no lifecycle script ran). npm reads
the directory's ``package.json`` and the ``.npmrc`` files (the directory's, the user's ``~/.npmrc``) and runs the
``git`` they name for a git dependency: with ``git=/home/agent/.fakegit`` and a ``git+file://`` dependency, turn 2's
Kilo ran ``.fakegit ls-remote`` and ``.fakegit clone`` as its own child, with no tool call. Now Kilo declares the
tool directories of all five and their npm files (``package.json``, ``package-lock.json``, ``.npmrc``) in
``loads_at_start``, and the user's and workspace's ``.npmrc`` in ``startup_state`` while a directory holds a plugin:
the run ends as the agent's failure before Kilo starts again. A plugin file alone stays no fault
(``test_cli_config_integrity.py``); a plugin directory the task ships, and an ``.npmrc`` the agent writes while none
is there, run as before.

What did not reproduce (:func:`test_rc_files_dotenv_and_bunfig_run_nothing_of_the_clis_own`): neither CLI sources a
shell rc file (``~/.bashrc``, ``~/.bash_profile``, ``~/.profile``, ``~/.zshrc``...) itself -- not at Kilo's turn 2
start, not later in Droid's one turn, not in their shell tools' own shells -- nor loads a ``.env`` (in the workspace or
HOME) into its environment, nor a ``bunfig.toml``/``.bunfig.toml`` ``preload``: their Bun executables autoload none.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench.agents.cli import run_cli
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.workspace import Workspace
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from tests._support import run_closing
from tests.agents._cli_scripts import ancestry_marker, text_of, turns_script
from tests.agents.test_relay_integrity import MODEL, REAL_ANSWER, SHELL, refused

QUERIES = ("Do the task.", "Now the next one.")
MARK = "/home/agent/.mark.sh"
#: A line in the marker per run: the label, `` [control]`` when the control's tool call ran it, then the command lines
#: of its ancestors.
MARKER = ancestry_marker("/workspace/RAN", "MARK_CONTROL")
CONTROL = " [control]"
#: A ``git`` for npm (``.npmrc``): marks, then runs the real one.
FAKEGIT = f"#!/bin/sh\nsh {MARK} fakegit\nexec git \"$@\"\n"
NPMRC = "git=/home/agent/.fakegit\n"
#: A configuration directory's dependencies: a git repository in HOME (made by :data:`GITDEP`).
PACKAGE = json.dumps({"name": "cfg", "version": "1.0.0", "dependencies": {"gdep": "git+file:///home/agent/gitdep"}})
PLUGIN = "export default async () => ({})\n"
TOOL = ('import fs from "fs"\nfs.appendFileSync("/workspace/RAN", "tool-imported\\n")\n'
        'export default {description: "t", args: {}, async execute() { return "t" }}\n')
GITDEP = ("mkdir -p /home/agent/gitdep && cd /home/agent/gitdep && echo '{\"name\": \"gdep\", \"version\": \"1.0.0\"}' "
          "> package.json && git init -q && git -c user.email=a@b -c user.name=a add -A && "
          "git -c user.email=a@b -c user.name=a commit -qm dep && cd /workspace")


def _write(files: dict[str, str], *extra: str) -> str:
    """A tool command writing ``files`` (with their parents), the marker and the fake git, then ``extra``."""
    steps = [f"mkdir -p $(dirname {path}) && echo {base64.b64encode(text.encode()).decode()} | base64 -d > {path}"
             for path, text in {MARK: MARKER, "/home/agent/.fakegit": FAKEGIT, **files}.items()]
    return " && ".join([*steps, "chmod +x /home/agent/.fakegit", *extra, "echo installed"])


def _call(cli: str, command: str) -> tuple[str, dict[str, Any]]:
    tool, arguments = SHELL[cli]
    return tool, {"command": command, **arguments}


def run(cli: str, turns: list[list[tuple[str, dict[str, Any]]]], stub, tmp_path: Path,
        shipped: dict[str, str] | None = None):
    """``cli`` for ``len(turns)`` user turns, the model asking for each turn's tool calls; (workspace, result)."""
    requests: list[dict[str, Any]] = []
    stub.default = turns_script(turns, QUERIES, requests, answer=REAL_ANSWER)
    for name, text in {"NOTES.md": "notes\n", **(shipped or {})}.items():
        (tmp_path / "env" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "env" / name).write_text(text)
    client = ModelClient(model="openai/stub", api_base=stub.url, retry=RetryPolicy(max_attempts=1, timeout=30))
    ws = Workspace.create(tmp_path / "env", parent=tmp_path)
    result = run_closing(run_cli(cli, workspace=ws, queries=list(QUERIES[:len(turns)]), system=None,
                                 model_name=MODEL, client=client, submit=None, options=AgentOptions(max_seconds=150),
                                 log_path=tmp_path / "raw.jsonl"))
    return ws, result


def _ran(ws: Workspace) -> list[str]:
    marker = ws.path / "RAN"
    return marker.read_text().splitlines() if marker.exists() else []


def _own(ws: Workspace) -> list[str]:
    """The marker's lines that no control call ran."""
    return [line for line in _ran(ws) if not line.split(" <- ")[0].endswith(CONTROL)]


def _ends_before_kilo_starts_again(ws: Workspace, result, where: str) -> None:
    assert _ran(ws) == [], "\n".join(_ran(ws))
    assert refused(result) == [] and result.harness_error is None, result.stderr[-2000:]
    fault = result.agent_fault or ""
    assert "changed what kilo loads into its own process or prompt when it starts" in fault, fault
    assert where in fault, fault
    assert result.stop_reason == "agent_fault" and result.turn_texts == (REAL_ANSWER,), result.turn_texts


#: Per place: the plugin file that makes Kilo install the directory's dependencies, and the npm files beside it.
NPM_PLACES = {
    "global": {"/home/agent/.config/kilo/plugins/p.js": PLUGIN, "/home/agent/.config/kilo/package.json": PACKAGE,
               "/home/agent/.config/kilo/.npmrc": NPMRC},
    "project-user-npmrc": {"/workspace/.kilo/plugin/p.ts": PLUGIN, "/workspace/.kilo/package.json": PACKAGE,
                           "/home/agent/.npmrc": NPMRC},
    "home-kilocode": {"/home/agent/.kilocode/plugins/p.js": PLUGIN, "/home/agent/.kilocode/package.json": PACKAGE,
                      "/home/agent/.kilocode/.npmrc": NPMRC},
}


@pytest.mark.parametrize("place", sorted(NPM_PLACES))
def test_kilo_installs_no_npm_dependency_the_agent_configures(place, agents, stub_env, tmp_path):
    """Turn 1 writes a plugin file, a ``package.json`` with a git dependency and an ``.npmrc`` naming its own
    ``git``; turn 2 runs one ordinary call. Before: Kilo's dependency install at turn 2's start ran the agent's
    ``git`` (``fakegit`` lines whose ancestry is ``.kilo run --continue``, no tool call). Now the run ends as the
    agent's failure before Kilo starts again, naming the ``package.json`` (and the ``.npmrc``)."""
    files = NPM_PLACES[place]
    turns = [[_call("kilo", _write(files, GITDEP))], [_call("kilo", "sleep 3; echo second")]]
    ws, result = run("kilo", turns, stub_env, tmp_path)
    try:
        _ends_before_kilo_starts_again(ws, result, next(path for path in files if path.endswith("package.json")))
        assert next(path for path in files if path.endswith(".npmrc")) in (result.agent_fault or "")
    finally:
        ws.close()


@pytest.mark.parametrize("plugin", ["shipped", "agent"])
def test_kilo_compares_the_users_npmrc_while_a_plugin_makes_it_install(plugin, agents, stub_env, tmp_path):
    """The task ships a ``package.json`` with a git dependency in ``.kilo`` (and a plugin file there, or the agent
    writes one); turn 1 writes ``~/.npmrc`` (naming its ``git``) and the dependency's repository, and removes the lock
    an unfinished install at turn 1's start left (``~/.local/state/kilo/locks``: turn 2's would wait on it). Before:
    turn 2's Kilo ran the agent's ``git``. Now ``~/.npmrc`` is compared while a configuration directory holds a
    plugin: the run ends before turn 2."""
    shipped = {".kilo/package.json": PACKAGE, **({".kilo/plugins/p.js": PLUGIN} if plugin == "shipped" else {})}
    files = {"/home/agent/.npmrc": NPMRC, **({"/workspace/.kilo/plugins/p.js": PLUGIN} if plugin == "agent" else {})}
    write = _write(files, GITDEP, "rm -rf /home/agent/.local/state/kilo/locks")
    turns = [[_call("kilo", write)], [_call("kilo", "sleep 3; echo second")]]
    ws, result = run("kilo", turns, stub_env, tmp_path, shipped)
    try:
        _ends_before_kilo_starts_again(ws, result, "/home/agent/.npmrc")
    finally:
        ws.close()


@pytest.mark.parametrize("case", ["shipped-plugin", "agent-npmrc"])
def test_kilo_runs_as_before_when_nothing_it_installs_changed(case, agents, stub_env, tmp_path):
    """The fidelity guard: a plugin directory the task ships (Kilo tries its install in both turns and leaves the
    compared files alone), and ``.npmrc`` files the agent writes while no directory holds a plugin (for its own npm),
    end in no fault: turn 2 runs and answers."""
    shipped = {".kilo/plugins/p.js": PLUGIN, ".kilo/package.json": json.dumps({"name": "cfg"})} \
        if case == "shipped-plugin" else {}
    first = "echo hello > /workspace/hello.txt" if shipped else \
        "echo fund=false > ~/.npmrc && echo audit=false > /workspace/.npmrc && echo written"
    turns = [[_call("kilo", first)], [_call("kilo", "cat /workspace/NOTES.md")]]
    ws, result = run("kilo", turns, stub_env, tmp_path, shipped)
    try:
        assert result.harness_error is None and result.agent_fault is None, (result.agent_fault,
                                                                             result.stderr[-2000:])
        assert result.turn_texts == (REAL_ANSWER, REAL_ANSWER), result.turn_texts
        outputs = [text_of(call.result.content) for call in result.trajectory.calls_to("bash")]
        assert len(outputs) == 2 and "notes" in outputs[1], outputs
    finally:
        ws.close()


def test_kilo_home_config_directories_custom_tools_never_load(agents, stub_env, tmp_path):
    """Turn 1 writes a custom tool into ``~/.kilo/tools`` and one into ``~/.kilocode/tool``. Before: both were
    imported into Kilo at turn 2's start (``tool-imported`` in the marker, no tool call). Now the run ends as the
    agent's failure before Kilo starts again, naming them."""
    files = {"/home/agent/.kilo/tools/t1.ts": TOOL, "/home/agent/.kilocode/tool/t2.js": TOOL}
    ws, result = run("kilo", [[_call("kilo", _write(files))], [_call("kilo", "echo second")]], stub_env, tmp_path)
    try:
        _ends_before_kilo_starts_again(ws, result, "/home/agent/.kilo/tools/t1.ts")
        assert "/home/agent/.kilocode/tool/t2.js" in (result.agent_fault or "")
    finally:
        ws.close()


RC_FILES = (".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin",
            ".config/fish/config.fish")
PRELOAD = 'require("fs").appendFileSync("/workspace/RAN", "bun-preload " + process.argv.join(" ") + "\\n")\n'
DOTENV = ("IFB_DOTENV=1\nBUN_OPTIONS=--preload=/home/agent/.pre.js\nNODE_OPTIONS=--require=/home/agent/.pre.js\n"
          "BASH_ENV=/home/agent/.bashenv\nENV=/home/agent/.bashenv\nSHELL=/home/agent/.fakeshell\n")
#: The rc files, ``.env`` files and ``bunfig.toml`` preloads the agent writes.
STARTUP_FILES = {
    **{f"/home/agent/{rc}": f"sh {MARK} rc-{rc}\n" for rc in RC_FILES},
    "/home/agent/.bashenv": f"sh {MARK} bash-env\n",
    "/home/agent/.fakeshell": f"#!/bin/sh\nsh {MARK} shell\nexec /bin/sh \"$@\"\n",
    "/home/agent/.pre.js": PRELOAD,
    **{f"{where}/{name}": DOTENV for where in ("/workspace", "/home/agent")
       for name in (".env", ".env.local", ".env.production", ".env.development")},
    **{path: 'preload = ["/home/agent/.pre.js"]\n' for path in (
        "/workspace/bunfig.toml", "/workspace/.bunfig.toml", "/home/agent/.bunfig.toml",
        "/home/agent/.config/.bunfig.toml")},
}
#: What the CLI's environment holds of the ``.env`` files (a tool command inherits it).
PROBE = "sleep 2; env | grep -E '^(IFB_|BUN_OPTIONS|NODE_OPTIONS|BASH_ENV|ENV|SHELL)=' ; echo probed"
#: The control: the agent's own login and interactive shells source the rc files (a tool call in the trajectory).
RC_CONTROL = "export MARK_CONTROL=1; bash -lc true; bash -ic true 2>/dev/null; echo control"


@pytest.mark.parametrize("cli", ["kilo", "droid"])
def test_rc_files_dotenv_and_bunfig_run_nothing_of_the_clis_own(cli, agents, stub_env, tmp_path):
    """Turn 1's first call writes shell rc files, ``.env`` files and ``bunfig.toml`` preloads in the workspace and
    HOME; Kilo then starts again for turn 2 (Droid, single-turn, goes on in its one turn). No rc file ran but in the
    control, and the CLI's environment holds none of the ``.env``'s variables: neither CLI starts a shell of its own
    that sources them, nor autoloads ``.env`` or ``bunfig.toml`` (holds before and after)."""
    write = _call(cli, _write(STARTUP_FILES, "chmod +x /home/agent/.fakeshell"))
    later = [_call(cli, PROBE), _call(cli, RC_CONTROL)]
    turns = [[write, *later]] if cli == "droid" else [[write], later]
    ws, result = run(cli, turns, stub_env, tmp_path)
    try:
        assert _own(ws) == [], "\n".join(_own(ws))
        assert result.harness_error is None and result.agent_fault is None, (result.agent_fault,
                                                                             result.stderr[-2000:])
        outputs = [text_of(call.result.content) for call in result.trajectory.calls_to(SHELL[cli][0])]
        assert len(outputs) == 3 and "probed" in outputs[1] and "=" not in outputs[1], outputs
        assert {"rc-.bash_profile", "rc-.bashrc"} <= {line.split(" <- ")[0].removesuffix(CONTROL)
                                                      for line in _ran(ws)}, _ran(ws)
    finally:
        ws.close()

