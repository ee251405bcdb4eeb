"""Droid's hooks stay off through a full settings refresh: real Droid runs whose tool calls enable hooks, rewrite
(or delete) ifbench's runtime overlay, then make Droid refresh its settings.

Droid runs with ``--settings <overlay>`` holding ``{"hooks": {"hooksDisabled": true}}``, which outranks the user's
settings (see ``test_cli_hooks_integrity.py``). It reads the overlay at start and caches it, but a full settings
refresh drops that cache and reads the file again from the same path -- and its ``Create`` tool refreshes after
writing any ``.factory/skills/<name>/SKILL.md``. With the overlay in HOME, one run could (1) enable hooks in
``~/.factory/settings.json`` and rewrite or delete the overlay with a shell call, (2) ``Create`` a skill, and then
(3) its hooks ran as Droid's child at the next tool call's ``PreToolUse``/``PostToolUse``, at ``Stop`` and at
``SessionEnd``, wrote files with no tool call and put "tests: 0 failed, 12 passed" into the tool result the model
and the judge read. Now the overlay lies in the agents directory, which every run shows read-only: the rewrite
fails (``EROFS``), the refresh reads the same overlay again, and no hook runs.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import pytest

from pytest_ifbench.agents.cli import run_cli
from pytest_ifbench.agents.clis import HOME, AgentClis, Invocation, write_home
from pytest_ifbench.agents.clis.droid import CLI as DROID
from pytest_ifbench.agents.clis.droid import OVERLAY, Droid
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.wire import BUILTIN_WIRE_FORMATS
from pytest_ifbench.agents.workspace import Workspace
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.testing import Reply
from tests._support import run_closing
from tests.agents.test_cli_hooks_integrity import HOOK, HOOK_SCRIPT, HOOKS, INJECTED, SET_JSON
from tests.agents.test_relay_integrity import MODEL, REAL_ANSWER

DISABLED = {"hooks": {"hooksDisabled": True}}
#: A skill written with ``Create``: Droid refreshes all its settings once it is written.
SKILL = ".factory/skills/notes/SKILL.md"
SKILL_TEXT = "---\nname: notes\ndescription: Read the notes first.\n---\nRead NOTES.md.\n"
#: Where ifbench kept the overlay before: in HOME (the control below keeps it there).
HOME_OVERLAY = ".factory/ifbench-runtime-settings.json"


class HomeOverlayDroid(Droid):
    """Droid with its overlay in HOME, where the agent's tool commands can rewrite it (the control)."""

    __slots__ = ()

    def configure(self, ws, *, url, model, system):
        env = super().configure(ws, url=url, model=model, system=system)
        write_home(ws, HOME_OVERLAY, json.dumps(DISABLED))
        return env

    def invocation(self, binary, query, *, turn, model, system):
        argv = list(super().invocation(binary, query, turn=turn, model=model, system=system).argv)
        argv[argv.index("--settings") + 1] = f"{HOME}/{HOME_OVERLAY}"
        return Invocation(argv=tuple(argv))


def _overlay(clis: AgentClis | None = None) -> str:
    """The overlay the CLI declaration names (``--settings``), as Droid sees it in the sandbox."""
    argv = (clis or AgentClis()).get("droid").invocation("/x/droid", "q", turn=0, model=MODEL, system=None).argv
    return argv[argv.index("--settings") + 1]


def _install(overlay: str, how: str) -> str:
    """The first tool command: the hook script, hooks enabled in the user's settings, and the overlay rewritten
    to enable them (``rewritten``) or deleted (``removed``) -- each step run whether or not one before failed."""
    def decoded(text: str, path: str) -> str:
        return f"echo {base64.b64encode(text.encode()).decode()} | base64 -d > {path}"
    hooks = json.dumps({"hooks": {**HOOKS, "hooksDisabled": False}})
    change = {"rewritten": f"node /tmp/set.js {overlay} '{json.dumps({'hooks': {'hooksDisabled': False}})}'",
              "removed": f"rm -f {overlay}"}[how]
    steps = [decoded(HOOK, HOOK_SCRIPT), decoded(SET_JSON, "/tmp/set.js"),
             f"node /tmp/set.js $HOME/.factory/settings.json '{hooks}'", f"{change} 2>&1", "sleep 2", "echo installed"]
    return "; ".join(steps)


def _script(command: str, requests: list[dict[str, Any]]):
    """The stub model: the install command, ``Create`` writing the skill, one more command, then the answer."""
    return steps_script([("Execute", {"command": command, "summary": "set up"}),
                         ("Create", {"file_path": f"{HOME}/{SKILL}", "content": SKILL_TEXT}),
                         ("Execute", {"command": "echo after", "summary": "check"})], requests)


def steps_script(steps: list[tuple[str, dict[str, Any]]], requests: list[dict[str, Any]]):
    """The stub model of a single-turn run: the tool calls ``steps`` one by one, then the answer (and the answer to
    any request without tools); each request is appended to ``requests``."""
    def reply(body: dict[str, Any]) -> Reply:
        requests.append(body)
        done = sum(1 for message in body.get("messages") or () if message.get("role") == "tool")
        if not body.get("tools") or done >= len(steps):
            return Reply(content=REAL_ANSWER)
        name, arguments = steps[done]
        return Reply(tool_calls=[{"function": {"name": name, "arguments": arguments}}])
    return reply


def _run(command: str, stub, tmp_path, clis: AgentClis | None = None):
    requests: list[dict[str, Any]] = []
    stub.default = _script(command, requests)
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "NOTES.md").write_text("real notes\n")
    client = ModelClient(model="openai/stub", api_base=stub.url, retry=RetryPolicy(max_attempts=1, timeout=30))
    ws = Workspace.create(tmp_path / "env", parent=tmp_path)
    result = run_closing(run_cli("droid", workspace=ws, queries=["Do the task."], system=None, model_name=MODEL,
                                 client=client, submit=None, options=AgentOptions(max_seconds=150),
                                 log_path=tmp_path / "raw.jsonl", clis=clis))
    return ws, result, requests


@pytest.mark.parametrize("how", ["rewritten", "removed"])
def test_a_settings_refresh_does_not_turn_the_agents_hooks_on(how, agents, stub_env, tmp_path):
    """Before (overlay in HOME): the marker held ``PreToolUse``, ``PostToolUse``, ``Stop`` and ``SessionEnd``
    and the injected result was in the requests and the trajectory, for either change. Now nothing of it runs,
    the overlay is as ifbench wrote it, and the run ends as an ordinary one."""
    overlay = _overlay()
    ws, result, requests = _run(_install(overlay, how), stub_env, tmp_path)
    try:
        marker = ws.path / "HOOK_RAN"
        assert not marker.exists(), marker.read_text()
        assert not any(INJECTED in json.dumps(body) for body in requests)
        assert INJECTED not in json.dumps(result.trajectory.to_json())
        assert result.harness_error is None and result.agent_fault is None, result.stderr[-2000:]
        assert result.turn_texts == (REAL_ANSWER,), result.turn_texts
        (create,) = result.trajectory.calls_to("Create")
        assert "created successfully" in str(create.result.content)  # so Droid refreshed its settings
        assert (ws.home / SKILL).read_text() == SKILL_TEXT
        install, after = result.trajectory.calls_to("Execute")
        assert "installed" in str(install.result.content) and "after" in str(after.result.content)
        host = ws.home / overlay.removeprefix(f"{HOME}/") if overlay.startswith(f"{HOME}/") else overlay
        assert open(host, encoding="utf-8").read() == OVERLAY  # as ifbench wrote it (hooksDisabled among the rest)
    finally:
        ws.close()


def test_the_refresh_reads_an_overlay_the_agent_can_write_again(agents, stub_env, tmp_path):
    """The control: Droid (the pinned version) with its overlay in HOME, where ifbench kept it before. The same
    run turns its hooks on -- so the test above would see a refresh that read a rewritten overlay. Should this fail
    with a new Droid, its refresh no longer re-reads the overlay: check what else drops it before relying on it."""
    clis = AgentClis(builtins=False)
    clis.add(HomeOverlayDroid(**{field.name: getattr(DROID, field.name) for field in dataclasses.fields(DROID)}))
    for wire in BUILTIN_WIRE_FORMATS:
        clis.add_wire_format(wire)
    overlay = _overlay(clis)
    assert overlay == f"{HOME}/{HOME_OVERLAY}"
    ws, result, requests = _run(_install(overlay, "rewritten"), stub_env, tmp_path, clis)
    try:
        assert result.harness_error is None, result.stderr[-2000:]
        marker = ws.path / "HOOK_RAN"
        assert marker.exists() and "PostToolUse" in marker.read_text().split()
        assert any(INJECTED in json.dumps(body) for body in requests)
    finally:
        ws.close()
