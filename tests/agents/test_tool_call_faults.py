"""Tool calls the agent got wrong on purpose or by accident, and limits that must hold inside one reply.

An error the agent caused is a failure of its run, never an error of the harness: a call the sandbox
cannot run (a NUL in a command, a command line over the kernel's limit, arguments nested thousands
deep, a NaN timeout) goes back to the model as an invalid-arguments tool error and the run goes on;
``max_seconds`` holds between the calls of one reply; ``read_before_edit`` sees overwrites through the
workspace's absolute paths; one agent's workspace cannot change how later agents' file tools run.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench._composition import default_registry
from pytest_ifbench._types import CheckSpec, GenerationParams, Instance
from pytest_ifbench._verify import VerifyContext, evaluate
from pytest_ifbench.agents import tools as tools_module
from pytest_ifbench.agents.loop import LoopResult, run_loop
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.profiles import ToolRegistry
from pytest_ifbench.agents.tools import GENERIC_TOOLS, ToolContext
from pytest_ifbench.agents.trajectory import Trajectory, TrajectoryBuilder
from pytest_ifbench.agents.workspace import Workspace, sandbox_problem
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.testing import Reply, StubServer
from tests._support import closing_sessions

FAST = RetryPolicy(max_attempts=1, timeout=20)
ASK = [{"role": "system", "content": "You are a careful agent."}, {"role": "user", "content": "Do the task."}]
GENERIC = {tool.name: tool for tool in GENERIC_TOOLS}


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    problem = sandbox_problem()
    if problem is not None:
        pytest.skip(problem)
    env = tmp_path / "env"
    env.mkdir()
    (env / "README.md").write_text("a workspace\n")
    with Workspace.create(env, parent=tmp_path) as workspace:
        yield workspace


def call(ident: str, name: str, raw: str) -> dict[str, Any]:
    return {"id": ident, "type": "function", "function": {"name": name, "arguments": raw}}


def script(stub_env: StubServer, replies: list[Reply]) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        n = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return replies[min(n, len(replies) - 1)]
    stub_env.default = answer


def loop(stub_env: StubServer, ws: Workspace, *, profile: str = "generic", trajectory_path: Path | None = None,
         **options: Any) -> LoopResult:
    client = ModelClient(model="openai/stub", api_base=stub_env.url, retry=FAST)
    return asyncio.run(closing_sessions(run_loop(
        client=client, messages=list(ASK), profile=ToolRegistry().profile(profile), workspace=ws,
        options=AgentOptions(**options), params=GenerationParams(max_tokens=200), trajectory_path=trajectory_path)))


# --- 1. calls the sandbox cannot run are the agent's invalid arguments ------------------------------

FAULTS = {
    "nul": ("bash", '{"command": "echo a\\u0000b"}', "NUL"),
    "over_long": ("bash", '{"command": "true ' + "x" * 140_000 + '"}', "bytes"),
    "deep_3000": ("bash", "[" * 3000 + "]" * 3000, "nested"),
    "deep_object": ("bash", '{"command": "true", "x": ' + "[" * 900 + "]" * 900 + "}", "nested"),
    "nan_timeout": ("bash", '{"command": "true", "timeout": NaN}', "NaN is not valid JSON"),
    "infinite_timeout": ("bash", '{"command": "true", "timeout": 1e400}', "out of range"),
    "negative_timeout": ("bash", '{"command": "true", "timeout": -5}', "timeout"),
    "claude_nan_timeout": ("Bash", '{"command": "true", "timeout": NaN}', "NaN is not valid JSON"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_call_the_sandbox_cannot_run_is_answered_as_invalid_arguments(fault, stub_env, ws, tmp_path):
    name, raw, said = FAULTS[fault]
    finish = call("c2", "finish", '{"answer": "done"}') if name == "bash" else None
    script(stub_env, [Reply(tool_calls=[call("c1", name, raw)]),
                  Reply(tool_calls=[finish]) if finish else Reply(content="done")])
    path = tmp_path / "trajectory.json"
    result = loop(stub_env, ws, profile="generic" if name == "bash" else "claude_code", trajectory_path=path)
    assert result.stop_reason in ("finished", "no_tool_call") and result.final_text == "done"
    answer = result.trajectory.tool_calls()[0].result
    assert answer.is_error and answer.content.startswith("Error: invalid arguments"), answer.content
    assert said in answer.content
    sent = stub_env.requests[1].body["messages"]
    assert sent[-1]["role"] == "tool" and sent[-1]["content"] == answer.content
    wired = sent[-2]["tool_calls"][0]["function"]["arguments"]
    assert "NaN" not in wired and "Infinity" not in wired  # what strict providers accept
    assert Trajectory.from_json(json.loads(path.read_text())).tool_calls()[0].call["function"]["arguments"] == raw


def test_a_command_at_the_kernel_limit_still_runs(ws):
    command = "echo ok # " + "x" * (tools_module.MAX_COMMAND_BYTES - len("echo ok # "))
    assert len(command.encode()) == tools_module.MAX_COMMAND_BYTES
    ctx = ToolContext(workspace=ws, options=AgentOptions())
    result = asyncio.run(GENERIC["bash"].run({"command": command}, ctx))
    assert result.content == "ok\n[exit code 0]"
    over = asyncio.run(GENERIC["bash"].run({"command": command + "x"}, ctx))
    assert over.is_error and over.content.startswith("Error: invalid arguments")


def test_deeply_nested_arguments_in_a_recorded_trajectory_are_no_crash():
    builder = TrajectoryBuilder(id="t")
    builder.assistant(tool_calls=[call("c1", "Write", '{"file_path": ' + "[" * 3000 + "]" * 3000 + "}")])
    builder.tool("c1", "error", is_error=True)
    trajectory = Trajectory.from_json(json.loads(json.dumps(builder.build().to_json())))
    assert trajectory.tool_calls()[0].arguments == {}
    spec = CheckSpec(id="c", verifier="ifbench.no_emoji",
                     params=default_registry().get("ifbench.no_emoji").validate({"scope": "all"}))
    (outcome,) = evaluate([spec], "", VerifyContext(registry=default_registry(), trajectory=trajectory))
    assert outcome.error is None and outcome.passed


# --- 2. max_seconds holds between the calls of one reply --------------------------------------------

def test_max_seconds_holds_between_the_calls_of_one_reply(stub_env, ws):
    calls = [call(f"s{i}", "bash", json.dumps({"command": f"sleep 30 # {i}"})) for i in range(6)]
    script(stub_env, [Reply(tool_calls=calls), Reply(tool_calls=[call("f", "finish", '{"answer": "late"}')])])
    began = time.monotonic()
    result = loop(stub_env, ws, max_seconds=2, command_timeout=30)
    elapsed = time.monotonic() - began
    assert result.stop_reason == "max_seconds" and result.steps == 1
    assert elapsed < 2 + tools_module.DEADLINE_GRACE + 1.5, elapsed
    first, *rest = (c.result for c in result.trajectory.tool_calls())
    assert "time limit" in first.content
    assert [r.content for r in rest] == ["Not executed: the run already stopped (max_seconds)."] * 5
    assert all(r.is_error for r in rest)


def test_a_command_never_gets_more_than_the_grace_past_the_deadline(ws):
    ctx = ToolContext(workspace=ws, options=AgentOptions(command_timeout=30), deadline=time.monotonic() - 5)
    assert ctx.limits().timeout <= tools_module.DEADLINE_GRACE
    ctx = ToolContext(workspace=ws, options=AgentOptions(command_timeout=30), deadline=time.monotonic() + 10)
    assert 9 <= ctx.limits().timeout <= 10 and ctx.limits(4).timeout == 4


# --- 3. read_before_edit sees overwrites through the workspace's absolute paths ---------------------

def _read_before_edit(tmp_path: Path, *calls: tuple[str, dict[str, Any]]) -> Any:
    env = tmp_path / "env"
    env.mkdir(exist_ok=True)
    (env / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (env / "pkg").mkdir(exist_ok=True)
    (env / "pkg" / "mod.py").write_text("x = 1\n")
    builder = TrajectoryBuilder(id="run")
    builder.user("fix calc.py")
    for n, (name, arguments) in enumerate(calls):
        builder.assistant(tool_calls=[{"id": f"c{n}", "name": name, "arguments": arguments}])
        builder.tool(f"c{n}", "ok")
    registry = default_registry()
    spec = CheckSpec(id="c", verifier="ifbench.read_before_edit",
                     params=registry.get("ifbench.read_before_edit").validate({}))
    instance = Instance(id="i", benchmark="b", suite=Path("s.yaml"), environment=env)
    (outcome,) = evaluate([spec], "", VerifyContext(registry=registry, trajectory=builder.build(), instance=instance))
    return outcome


@pytest.mark.parametrize(("tool", "key"), [("write_file", "path"), ("Write", "file_path"), ("Create", "file_path"),
                                           ("write_to_file", "path")])
def test_overwriting_an_existing_file_through_the_workspace_mount_needs_a_read(tool, key, tmp_path):
    content = "def add(a, b):\n    return a + b\n"
    for path in (f"{Workspace.MOUNT}/calc.py", f"{Workspace.MOUNT}/pkg/../calc.py", f"{Workspace.MOUNT}/pkg/mod.py"):
        outcome = _read_before_edit(tmp_path, (tool, {key: path, "content": content}))
        assert not outcome.passed and f"{tool} {path.replace('pkg/../', '')} without reading it" in \
            outcome.verdict.evidence, (path, outcome)
    read = _read_before_edit(tmp_path, ("Read", {"file_path": f"{Workspace.MOUNT}/calc.py"}),
                             (tool, {key: f"{Workspace.MOUNT}/calc.py", "content": content}))
    assert read.passed
    relative_read = _read_before_edit(tmp_path, ("read_file", {"path": "calc.py"}),
                                      (tool, {key: f"{Workspace.MOUNT}/calc.py", "content": content}))
    assert relative_read.passed
    for created in (f"{Workspace.MOUNT}/new.py", "/tmp/calc.py", "/home/agent/calc.py", Workspace.MOUNT):
        assert _read_before_edit(tmp_path, (tool, {key: created, "content": content})).passed, created


# --- 4. the file tools' interpreter is probed where no workspace can affect it ----------------------

def test_a_workspace_that_fails_the_probe_does_not_change_later_runs(ws, monkeypatch):
    monkeypatch.setattr(tools_module, "_runner_python", None)
    ctx = ToolContext(workspace=ws, options=AgentOptions())
    os.chmod(ws.path, 0)  # what `chmod 000 /workspace` does: no command can start in this workspace
    try:
        failed = asyncio.run(GENERIC["read_file"].run({"path": "README.md"}, ctx))
    finally:
        os.chmod(ws.path, 0o755)
    assert failed.is_error
    assert tools_module._runner_python == ((tools_module.SANDBOX_PYTHON, "-I", "-S", "-B"), ())
    read = asyncio.run(GENERIC["read_file"].run({"path": "README.md"}, ctx))
    assert read.content.startswith("     1\ta workspace")
