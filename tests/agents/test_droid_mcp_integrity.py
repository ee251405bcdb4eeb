"""Droid runs no command of its own that the agent configured: real Droid runs whose tool calls write a stdio MCP
server into Droid's ``mcp.json`` files (or whose task ships one), or make the workspace a git repository with a
``core.fsmonitor``, then make Droid see and refresh its settings.

Droid starts the stdio MCP servers of its settings hierarchy (the user's ``~/.factory/mcp.json``, the project's
``.factory/mcp.json``, the folders' and the plugins') as children of its own process, and keeps starting them
while it runs: its MCP service listens to every settings change and starts each server it has not started yet.
Droid watches ``~/.factory`` from the start, so a server a shell call wrote there started before the next tool call
(``sleep 3`` in it) had ended -- as did one in the project's ``.factory/mcp.json`` when the task ships a ``.factory``
directory; without one, it started once Droid refreshed its settings (its ``Create`` tool does so after writing a
``.factory/skills/<name>/SKILL.md``); one the task ships started with Droid. Each ran ``sh /home/agent/.hook.sh
mcp`` with no tool call for it (here it writes a marker; it could as well keep running). ``hooksDisabled`` does
not cover MCP, and Droid has no flag that turns MCP off (``--remove-tools MCP:...`` only hides a started server's
tools). And Droid Shield, before each shell call holding ``git commit`` (``false && git commit`` too, which never
runs git), runs ``git diff --cached`` itself in the workspace: the ``core.fsmonitor`` an earlier call had set in
the repository (one it made, or the one the task ships) ran.

Now ifbench's runtime overlay (``--settings``, the read-only file of ``test_droid_settings_refresh.py``) also holds
``"mcpPolicy": {"enabled": true, "allowlist": []}``: Droid's own MCP allowlist, which it applies at start, on every
reload and before it starts any server, and in which an overlay's ``enabled: true`` wins over the levels below (the
agent's own allowlist in ``~/.factory/settings.json`` included; the system-managed org file that would outrank it
lies in read-only ``/etc``). An empty allowlist allows no server: none starts, a task's own included (a difference
from a bare Droid; a shipped server runs a program the agent can rewrite, and Droid starts it again when its entry
changes). And ``"enableDroidShield": false``: no secret scan, no git of Droid's own (a bare Droid blocks commits
that look like they hold secrets). The control runs Droid with the overlay as it was (``hooksDisabled`` alone) and
sees each command run, so the test above it would see one that did.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import subprocess
from typing import Any

import pytest

from pytest_ifbench.agents.cli import run_cli
from pytest_ifbench.agents.clis import HOME, AgentClis
from pytest_ifbench.agents.clis.droid import CLI as DROID
from pytest_ifbench.agents.clis.droid import SETTINGS, runtime_settings
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.wire import BUILTIN_WIRE_FORMATS
from pytest_ifbench.agents.workspace import Workspace
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from tests._support import run_closing
from tests.agents.test_cli_hooks_integrity import HOOK, HOOK_SCRIPT, SET_JSON
from tests.agents.test_droid_settings_refresh import SKILL, SKILL_TEXT, HomeOverlayDroid, steps_script
from tests.agents.test_relay_integrity import MODEL, REAL_ANSWER

#: Droid's MCP allowlist, on and empty: no server is allowed.
POLICY = {"enabled": True, "allowlist": []}
#: A stdio MCP server: the hook script of ``test_cli_hooks_integrity.py``, which appends "mcp" to the marker.
SERVER = {"type": "stdio", "command": "sh", "args": [HOOK_SCRIPT, "mcp"]}
#: The agent's own allowlist, which lets the server through (its arguments hold "hook").
ALLOW = {"mcpPolicy": {"enabled": True, "allowlist": ["hook"]}}
#: Per place: the files the agent's first shell call writes (``~`` the run's HOME), with the keys it sets in each;
#: none where the task ships the server (``shipped``).
PLACES: dict[str, dict[str, dict[str, Any]]] = {
    # Droid watches ~/.factory from the start. Also the agent's own allowlist, in the user's settings and in the
    # system-managed org settings (which outrank the overlay; /etc is read-only in the sandbox).
    "user": {"~/.factory/mcp.json": {"mcpServers": {"evil": SERVER}}, "~/.factory/settings.json": ALLOW,
             "/etc/factory/settings.json": ALLOW},
    "project": {"/workspace/.factory/mcp.json": {"mcpServers": {"evil": SERVER}}},  # read on the refresh after Create
    # the same where the task ships a .factory directory (one of its skills, say): Droid watches it from the start
    "project_watched": {"/workspace/.factory/mcp.json": {"mcpServers": {"evil": SERVER}}},
    "shipped": {},  # the task's own .factory/mcp.json, there when Droid starts
    # no MCP: Droid Shield's own git in a repository whose fsmonitor the agent set (below), the shield turned on
    # in the user's settings too
    "shield": {"~/.factory/settings.json": {"enableDroidShield": True}},
    "shield_shipped_repo": {},  # the same in the git repository the task ships
}
#: More of the first command: the workspace made a git repository whose ``core.fsmonitor`` is the hook script.
FSMONITOR = f"git -C /workspace config core.fsmonitor 'sh {HOOK_SCRIPT} fsmonitor'"
EXTRA = {"shield": f"git init -q /workspace; {FSMONITOR}", "shield_shipped_repo": FSMONITOR}
#: Begins each later command: a ``git commit`` that never runs, which Droid Shield scans for secrets first.
LATER = dict.fromkeys(("shield", "shield_shipped_repo"), "false && git commit -qm x; ")
#: What the command Droid ran writes into the marker.
WORD = dict.fromkeys(("shield", "shield_shipped_repo"), "fsmonitor")
#: Where each command had run by then (the control): the marker as a later command shows it.
STARTED_BY = {"user": "mid", "project": "after", "project_watched": "mid", "shipped": "mid", "shield": "mid",
              "shield_shipped_repo": "mid"}
#: Shows the marker (in the output of the commands after the first).
SHOW = "cat /workspace/HOOK_RAN 2>/dev/null"


def _install(where: str) -> str:
    """The first tool command: the server's script, then each file of the place (each step run whether or not one
    before failed), then 3 s for Droid to see them."""
    def decoded(text: str, path: str) -> str:
        return f"echo {base64.b64encode(text.encode()).decode()} | base64 -d > {path}"
    steps = [decoded(HOOK, HOOK_SCRIPT), decoded(SET_JSON, "/tmp/set.js")]
    for file, keys in PLACES[where].items():
        path = file.replace("~", "$HOME", 1)
        steps.append(f"node /tmp/set.js {path} '{json.dumps(keys)}' >/dev/null 2>&1 || echo could not write {file}")
    return "; ".join([*steps, *([EXTRA[where]] if where in EXTRA else []), "sleep 3", "echo installed"])


def _script(command: str, later: str, requests: list[dict[str, Any]]):
    """The stub model: the install command, a command, ``Create`` writing a skill (Droid refreshes its settings),
    one more command, then the answer."""
    return steps_script([("Execute", {"command": command, "summary": "set up"}),
                         ("Execute", {"command": f"{later}sleep 3; {SHOW}; echo mid", "summary": "wait"}),
                         ("Create", {"file_path": f"{HOME}/{SKILL}", "content": SKILL_TEXT}),
                         ("Execute", {"command": f"{later}sleep 3; {SHOW}; echo after", "summary": "check"})], requests)


def _run(where: str, stub, tmp_path, clis: AgentClis | None = None):
    requests: list[dict[str, Any]] = []
    stub.default = _script(_install(where), LATER.get(where, ""), requests)
    env = tmp_path / "env"
    env.mkdir()
    (env / "NOTES.md").write_text("real notes\n")
    if where == "project_watched":
        (env / ".factory" / "skills" / "style").mkdir(parents=True)
        (env / ".factory" / "skills" / "style" / "SKILL.md").write_text(SKILL_TEXT.replace("notes", "style"))
    if where == "shipped":  # the task's server and the program it runs, both in the workspace
        (env / ".factory").mkdir()
        (env / "server.sh").write_text(HOOK)
        shipped = {**SERVER, "args": ["/workspace/server.sh", "mcp"]}
        (env / ".factory" / "mcp.json").write_text(json.dumps({"mcpServers": {"task-tools": shipped}}))
    if where == "shield_shipped_repo":
        subprocess.run(["git", "init", "-q", str(env)], check=True)
    client = ModelClient(model="openai/stub", api_base=stub.url, retry=RetryPolicy(max_attempts=1, timeout=30))
    ws = Workspace.create(env, parent=tmp_path)
    result = run_closing(run_cli("droid", workspace=ws, queries=["Do the task."], system=None, model_name=MODEL,
                                 client=client, submit=None, options=AgentOptions(max_seconds=150),
                                 log_path=tmp_path / "raw.jsonl", clis=clis))
    return ws, result, requests


@pytest.mark.parametrize("where", list(PLACES))
def test_no_command_the_agent_configures_runs(where, agents, stub_env, tmp_path):
    """Before (the overlay with ``hooksDisabled`` alone): the marker read "mcp" -- by the second command for
    ``user``, ``project_watched`` and ``shipped``, after ``Create`` for ``project`` -- or, for ``shield`` and
    ``shield_shipped_repo``, "fsmonitor" by the second command. Now nothing runs, the overlay Droid read is
    ifbench's, and the run ends as an ordinary one: writing a file is no fault of the agent's, nor is a task's own
    server one of the harness's."""
    ws, result, requests = _run(where, stub_env, tmp_path)
    try:
        marker = ws.path / "HOOK_RAN"
        assert not marker.exists(), marker.read_text()
        assert result.harness_error is None and result.agent_fault is None, result.stderr[-2000:]
        assert result.turn_texts == (REAL_ANSWER,), result.turn_texts
        install, mid, after = result.trajectory.calls_to("Execute")
        assert "installed" in str(install.result.content), install.result.content
        if where == "user":  # the agent's allowlist: in its own settings, not in the system's (read-only)
            assert "could not write /etc/factory/settings.json" in str(install.result.content)
            assert json.loads((ws.home / SETTINGS).read_text())["mcpPolicy"] == ALLOW["mcpPolicy"]
        if where == "shield":
            assert json.loads((ws.home / SETTINGS).read_text())["enableDroidShield"] is True
        for call, word in ((mid, "mid"), (after, "after")):  # no marker in the workspace either while Droid ran
            assert str(call.result.content).split()[:1] == [word], call.result.content
        (create,) = result.trajectory.calls_to("Create")
        assert "created successfully" in str(create.result.content)  # so Droid refreshed its settings
        overlay = json.loads(runtime_settings().read_text(encoding="utf-8"))
        assert overlay == {"hooks": {"hooksDisabled": True}, "mcpPolicy": POLICY, "enableDroidShield": False}
    finally:
        ws.close()


@pytest.mark.parametrize("where", list(PLACES))
def test_without_the_overlays_settings_each_command_runs(where, agents, stub_env, tmp_path):
    """The control: Droid (the pinned version) with the overlay as it was, ``hooksDisabled`` alone. Each server
    starts (and Droid Shield runs the fsmonitor) as Droid's child with no tool call running it -- so the test above
    would see one that did. Should this fail with a new Droid, it no longer (re)starts servers from these files, or
    scans commits with git, while it runs: look at what it does instead before relying on either test."""
    clis = AgentClis(builtins=False)
    clis.add(HomeOverlayDroid(**{field.name: getattr(DROID, field.name) for field in dataclasses.fields(DROID)}))
    for wire in BUILTIN_WIRE_FORMATS:
        clis.add_wire_format(wire)
    ws, result, _ = _run(where, stub_env, tmp_path, clis)
    try:
        assert result.harness_error is None, result.stderr[-2000:]
        marker = ws.path / "HOOK_RAN"
        word = WORD.get(where, "mcp")
        assert marker.exists() and word in marker.read_text().split()
        _, mid, after = result.trajectory.calls_to("Execute")
        seen = {"mid": str(mid.result.content).split(), "after": str(after.result.content).split()}
        assert word in seen[STARTED_BY[where]], seen
        if where == "project":  # not before Droid's refresh
            assert word not in seen["mid"], seen
    finally:
        ws.close()
