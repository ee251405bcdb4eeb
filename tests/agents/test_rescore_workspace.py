"""Re-scoring an agent run from its trajectory decides its workspace checks too: the final workspace is kept
beside the trajectory (``agents/workspace_archive.py``) and re-opened in a fresh sandbox workspace."""

from __future__ import annotations

import json
import shutil

import pytest

from pytest_ifbench.sandbox import sandbox_problem
from tests._support import stub_args, write_agent_suite
from tests.agents.test_agent_suite import SUITE, scripted

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")


@pytest.fixture
def agent_suite(pytester):
    return write_agent_suite(pytester.path, "suites/agents.yaml", SUITE)


def _verdicts(path) -> dict[str, object]:
    (record,) = json.loads(path.read_text())["instances"]
    return {check["id"]: (check["passed"], check.get("error")) for check in record["checks"]}


def test_a_rescore_decides_the_workspace_checks_as_the_run_did(pytester, stub_env, agent_suite):
    scripted(stub_env)
    pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-trajectories=traj")
    live = _verdicts(pytester.path / "ifbench-results.json")
    assert live["file"] == (True, None) and live["tests"] == (True, None), live
    kept = sorted(p.name for p in (pytester.path / "traj").iterdir())
    assert kept == ["suites_agents.yaml--greet.json", "suites_agents.yaml--greet.workspace.tar.gz"], kept

    calls = stub_env.calls
    rescored = pytester.run("ifbench", "score", "--suite", "suites", "--trajectories", "traj",
                            "--results", "rescored.json", "--", *stub_args(stub_env))
    assert _verdicts(pytester.path / "rescored.json") == live, rescored.stdout.str()[-3000:]
    assert stub_env.calls == calls  # the agent is not run again, and the judge's reply is the cached one

    # Without the archive (a trajectory from elsewhere), the workspace checks say why they cannot be decided.
    (pytester.path / "traj" / "suites_agents.yaml--greet.workspace.tar.gz").unlink()
    pytester.run("ifbench", "score", "--suite", "suites", "--trajectories", "traj", "--results", "bare.json",
                 "--", *stub_args(stub_env))
    bare = _verdicts(pytester.path / "bare.json")
    assert bare["file"][1] and "needs an agent run" in bare["file"][1], bare
    assert bare["wrote"] == live["wrote"]  # a trajectory check needs the trajectory only


def test_a_damaged_archive_errors_the_instance_with_its_reason(pytester, stub_env, agent_suite):
    scripted(stub_env)
    pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-trajectories=traj")
    archive = pytester.path / "traj" / "suites_agents.yaml--greet.workspace.tar.gz"
    archive.write_bytes(b"not a tar")
    pytester.run("ifbench", "score", "--suite", "suites", "--trajectories", "traj", "--results", "rescored.json",
                 "--", *stub_args(stub_env))
    (record,) = json.loads((pytester.path / "rescored.json").read_text())["instances"]
    assert record["status"] == "error" and "not a workspace archive" in record["error"], record.get("error")
    shutil.rmtree(pytester.path / "traj")
