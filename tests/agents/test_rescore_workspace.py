"""Re-scoring an agent run from its trajectory decides its workspace checks too: the final workspace is kept
beside the trajectory (``agents/workspace_archive.py``) and re-opened in a fresh sandbox workspace."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from pytest_ifbench.sandbox import sandbox_problem
from tests._support import stub_args, write_agent_suite
from tests.agents.test_agent_suite import STEPS, SUITE, call, scripted

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


ODD = """
ifbench: 1
benchmark: agentdemo
defaults:
  protocol: agent
  protocol_options: {max_steps: 4, command_timeout: 60}
instances:
  - id: odd
    environment: env
    prompt: Leave an odd workspace.
    checks:
      - {id: file, verifier: ifbench.file_contains, params: {path: hello.txt, text: hello}}
      - {id: unreadable, verifier: ifbench.file_contains, params: {path: secret.txt, text: hello}}
      - {id: links, verifier: ifbench.workspace_command, params: {command: 'test "$(readlink py)" = /usr/bin/python3 && test "$(readlink pw)" = ../../../etc/passwd && test -L .venv/bin/python'}}
      - {id: read-only-dir, verifier: ifbench.workspace_command, params: {command: 'test -d d && test ! -w d'}}
      - {id: sparse, verifier: ifbench.workspace_command, params: {command: 'test "$(stat -c %s junk.bin)" = 157286400'}}
"""  # noqa: E501
ODD_COMMAND = ("echo hello > hello.txt; echo hello > secret.txt; chmod 000 secret.txt; ln -s /usr/bin/python3 py; "
               "ln -s ../../../etc/passwd pw; python3 -m venv --without-pip .venv; mkdir d; chmod 500 d; "
               "truncate -s 150M junk.bin")


def test_a_rescore_gives_the_live_verdicts_whatever_the_agent_left(pytester, stub_env):
    """Links leading out of the workspace (a venv's among them), a file no one may read, a read-only directory
    and a 150M sparse file: live, every check but the unreadable file's passed; the re-score errored (links),
    passed the unreadable file, failed the read-only directory, or lost the archive (the sparse file)."""
    write_agent_suite(pytester.path, "suites/agents.yaml", ODD)
    scripted(stub_env, [[call("bash", {"command": ODD_COMMAND}, 1)], [call("finish", {"answer": "done"}, 2)]])
    pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-trajectories=traj")
    (live_record,) = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
    live = _verdicts(pytester.path / "ifbench-results.json")
    assert {check: verdict[0] for check, verdict in live.items()} == {
        "file": True, "unreadable": False, "links": True, "read-only-dir": True, "sparse": True}, live
    assert live_record["agent"]["workspace_archive"].endswith(".workspace.tar.gz"), live_record["agent"]

    rescored = pytester.run("ifbench", "score", "--suite", "suites", "--trajectories", "traj",
                            "--results", "rescored.json", "--", *stub_args(stub_env))
    (record,) = json.loads((pytester.path / "rescored.json").read_text())["instances"]
    assert (record["status"], _verdicts(pytester.path / "rescored.json")) == (live_record["status"], live), \
        rescored.stdout.str()[-3000:]
    subprocess.run(["chmod", "-R", "u+rwx", "--", str(pytester.path)], check=False)


DEEP = SUITE.replace("Create hello.txt", "Create hello.txt and a deep tree")


def test_a_deep_tree_the_agent_left_is_not_kept_and_not_an_error(pytester, stub_env):
    """``for i in $(seq 1100); do mkdir d && cd d; done``: packing it raised ``RecursionError`` and the
    instance errored (excluded from the scores), with trajectories kept only; now the run is scored as it
    would be without them, and the record says why its workspace was not kept."""
    write_agent_suite(pytester.path, "suites/agents.yaml", DEEP)
    deep = "mkdir -p e && cd e && for i in $(seq 1100); do mkdir d && cd d || break; done"
    scripted(stub_env, [STEPS[0], [call("bash", {"command": f"cat hello.txt; ({deep})"}, 2)], STEPS[2]])
    pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-trajectories=traj")
    (record,) = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
    assert record["status"] == "passed", record.get("error")
    assert record["agent"]["workspace_archive"].startswith("not kept: it holds a name over 256 directories deep")


def test_a_rescore_without_the_workspace_the_live_run_left_errors_what_reads_it(pytester, stub_env):
    """The deep tree was not kept: re-scored, the workspace checks cannot be decided again. They failed
    ("needs an agent run"), so the re-score disagreed with the live run; the instance is now an error saying
    why, while a suite whose checks read only the trajectory is re-scored as before."""
    write_agent_suite(pytester.path, "suites/agents.yaml", DEEP)
    write_agent_suite(pytester.path, "suites/steps.yaml", DEEP.replace("id: greet", "id: steps").replace(
        "      - {id: file, verifier: ifbench.file_contains, params: {path: hello.txt, text: hello}}\n", "").replace(
        "      - {id: tests, verifier: ifbench.workspace_command, params: {command: 'grep -q hello hello.txt'}}\n", ""))
    deep = "mkdir -p e && cd e && for i in $(seq 1100); do mkdir d && cd d || break; done"
    steps = [STEPS[0], [call("bash", {"command": f"cat hello.txt; ({deep})"}, 2)], STEPS[2]]
    scripted(stub_env, steps)
    pytester.runpytest("suites/agents.yaml", *stub_args(stub_env), "--ifbench-trajectories=traj")
    scripted(stub_env, steps)
    pytester.runpytest("suites/steps.yaml", *stub_args(stub_env), "--ifbench-trajectories=traj",
                       "--ifbench-results=steps.json")
    kept = json.loads((pytester.path / "traj" / "suites_agents.yaml--greet.json").read_text())
    assert kept["meta"]["workspace_not_kept"].startswith("not kept: it holds a name over 256 directories deep")

    pytester.run("ifbench", "score", "--suite", "suites/agents.yaml", "--trajectories", "traj",
                 "--results", "rescored.json", "--", *stub_args(stub_env))
    (record,) = json.loads((pytester.path / "rescored.json").read_text())["instances"]
    assert record["status"] == "error", record
    assert record["error"].startswith("the run's final workspace was not kept: it holds a name over 256"), record
    assert record["error"].endswith("its workspace checks cannot be decided again"), record["error"]

    pytester.run("ifbench", "score", "--suite", "suites/steps.yaml", "--trajectories", "traj",
                 "--results", "steps-rescored.json", "--", *stub_args(stub_env))
    assert _verdicts(pytester.path / "steps-rescored.json") == _verdicts(pytester.path / "steps.json")


def test_a_run_that_ended_in_an_error_stays_an_error_when_re_scored(pytester, stub_env, agent_suite):
    """The live run's model call failed (HTTP 400): the instance was an error, and the loop still wrote its
    trajectory (``stop_reason: model_error``). Re-scored from it, its checks were decided on an empty run (an
    audit's instance passed and counted in ISR and CSR; here the judge is then asked about nothing). It stays
    an error, saying why, and nothing is asked."""
    from pytest_ifbench.testing import Fault

    stub_env.inject_faults(Fault(kind="status", status=400, message="bad request"))
    pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-trajectories=traj", "--ifbench-max-attempts=1")
    (live,) = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
    assert (live["status"], live["error_kind"]) == ("error", "model"), live
    kept = json.loads((pytester.path / "traj" / "suites_agents.yaml--greet.json").read_text())
    assert kept["meta"]["stop_reason"] == "model_error"
    calls = stub_env.calls
    pytester.run("ifbench", "score", "--suite", "suites", "--trajectories", "traj", "--results", "rescored.json",
                 "--", *stub_args(stub_env))
    (record,) = json.loads((pytester.path / "rescored.json").read_text())["instances"]
    assert record["status"] == "error" and stub_env.calls == calls, record
    assert record["error"] == ("the recorded run of instance 'greet' ended in an error (model_error), as the live "
                               "run did: it is not scored"), record["error"]


def test_a_rescore_keeps_what_the_recorded_run_paid_as_cached(pytester, stub_env, agent_suite):
    """The re-score's record had 0 tokens and no cost for the agent (only the judge's cached call) and counted
    its steps from the trajectory's assistant turns. The recorded run's steps, tokens and cost (the loop's
    trajectory now records ``prompt_tokens`` too) are the record's, as cached: paid then, not now."""
    scripted(stub_env)
    pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-trajectories=traj")
    (live,) = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
    kept = json.loads((pytester.path / "traj" / "suites_agents.yaml--greet.json").read_text())["meta"]
    assert kept["prompt_tokens"] > 0 and kept["completion_tokens"] > 0 and kept["steps"] == live["agent"]["steps"]
    pytester.run("ifbench", "score", "--suite", "suites", "--trajectories", "traj", "--results", "rescored.json",
                 "--", *stub_args(stub_env))
    (record,) = json.loads((pytester.path / "rescored.json").read_text())["instances"]
    assert record["agent"]["steps"] == live["agent"]["steps"]
    assert record["tokens"]["cached_prompt"] >= kept["prompt_tokens"], record["tokens"]  # (the judge's too)
    assert record["tokens"]["cached_completion"] >= kept["completion_tokens"], record["tokens"]
    assert record["tokens"]["prompt"] == 0 == record["tokens"]["completion"]  # nothing paid by the re-score
