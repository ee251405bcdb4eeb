"""Agent instances end to end through pytest: the built-in loop against the stub server, tool calls
really executed in the sandbox, trajectory/workspace/judged checks, the results file, Allure,
recorded trajectories, start-up errors, and a killed run that resumes from the cache."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench.sandbox import sandbox_problem
from pytest_ifbench.testing import Reply, StubServer
from tests._support import stub_args, write_agent_suite, write_suite
from tests.agents._cli_scripts import CLI_WRITE, cli_script

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")

SUITE = """
ifbench: 1
benchmark: agentdemo
defaults:
  protocol: agent
  protocol_options: {max_steps: 8, command_timeout: 20}
instances:
  - id: greet
    environment: env
    prompt: Create hello.txt containing hello, check it, then finish.
    checks:
      - {id: file, verifier: ifbench.file_contains, params: {path: hello.txt, text: hello}}
      - {id: wrote, verifier: ifbench.tool_called, params: {tool: write_file}}
      - {id: ran, verifier: ifbench.tool_called, params: {tool: bash, arguments: cat}}
      - {id: no-reset, verifier: ifbench.tool_not_called, params: {arguments: 'reset --hard'}}
      - {id: tests, verifier: ifbench.workspace_command, params: {command: 'grep -q hello hello.txt'}}
      - {id: summary, verifier: ifbench.judge, params: {criterion: The final answer says what was done.}}
      - {id: asked-about-docs, verifier: ifbench.judge,
         params: {criterion: 'If asked about docs: answered; not applicable if not asked.'}}
"""


def call(name: str, arguments: dict[str, Any], n: int) -> dict[str, Any]:
    return {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


STEPS = [
    [call("write_file", {"path": "hello.txt", "content": "hello\n"}, 1)],
    [call("bash", {"command": "cat hello.txt"}, 2)],
    [call("finish", {"answer": "I wrote hello.txt and checked it."}, 3)],
]


def scripted(stub: StubServer, steps: list[list[dict[str, Any]]] = STEPS) -> None:
    """Agent requests: the next scripted step (by how many assistant turns the request holds).
    Judge requests (a JSON schema answer): success, and not_applicable for the conditional check."""

    def answer(body: dict[str, Any]) -> Reply:
        if body.get("response_format"):
            schema = body["response_format"]["json_schema"]["schema"]
            ids = schema["properties"]["checks"]["items"]["properties"]["id"]["enum"]
            checks = [{"id": i, "reasoning": "seen in the transcript",
                       "result": "not_applicable" if i == "asked-about-docs" else "success"} for i in ids]
            return Reply(content=json.dumps({"checks": checks}))
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return Reply(tool_calls=steps[min(done, len(steps) - 1)])

    stub.default = answer


@pytest.fixture
def agent_suite(pytester: pytest.Pytester) -> Path:
    return write_agent_suite(pytester.path, "suites/agents.yaml", SUITE)


def test_agent_instance_end_to_end(pytester, stub_env, agent_suite):
    scripted(stub_env)
    result = pytester.runpytest("suites", *stub_args(stub_env), "-v", "--alluredir=allure",
                                           "--ifbench-trajectories=traj")
    result.stdout.fnmatch_lines(["*agents.yaml::greet PASSED*"])
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 1 and "failed" not in outcomes and "error" not in outcomes, outcomes
    assert outcomes.get("skipped") == 1  # the not-applicable judged check
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    assert record["status"] == "passed"
    agent = record["agent"]
    assert agent["stop_reason"] == "finished" and agent["steps"] == 3 and agent["runner"] == "loop"
    names = [c["function"]["name"] for m in agent["trajectory"]["messages"] for c in m.get("tool_calls") or []]
    assert names == ["write_file", "bash", "finish"]
    tool_results = [m["content"] for m in agent["trajectory"]["messages"] if m["role"] == "tool"]
    assert "hello" in tool_results[1]  # `cat hello.txt` really ran in the workspace
    checks = {c["id"]: c for c in record["checks"]}
    assert checks["asked-about-docs"]["applicable"] is False
    assert all(c["passed"] for i, c in checks.items() if i != "asked-about-docs")
    # The trajectory file was written, the workspace is gone, Allure has the transcript.
    (written,) = (pytester.path / "traj").glob("*.json")
    assert json.loads(written.read_text())["meta"]["instance_id"] == "greet"
    assert not Path(agent["workspace"]).exists()
    attachments = [p.read_text(errors="replace") for p in (pytester.path / "allure").glob("*-attachment.txt")]
    assert any("[assistant turn 2]" in text and "cat hello.txt" in text for text in attachments)


def test_recorded_trajectory_is_scored_without_a_model(pytester, stub_env, agent_suite):
    scripted(stub_env)
    pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-trajectories=traj")
    calls = stub_env.calls
    (written,) = (pytester.path / "traj").glob("*.json")
    result = pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-no-cache",
                                           f"--ifbench-recorded-trajectories={written}", "-v")
    # Trajectory checks pass from the recording; workspace checks on the final workspace kept beside it.
    result.stdout.fnmatch_lines(["*SUBPASS*[[]file[]]*", "*SUBPASS*[[]wrote[]]*"])
    assert stub_env.calls - calls == 1  # only the judge: no agent step was run



@pytest.mark.parametrize("keep", [False, True], ids=["workspace-removed", "workspace-kept"])
def test_a_judge_that_fails_after_the_run_leaves_the_workspace_checks_decided(pytester, stub_env, agent_suite,
                                                                               keep):
    """The judge answers garbage twice: the instance errors, its record keeps the run, both judge calls it paid
    for and every check that needs no judge, decided on the final workspace (which the error used to close
    first: "the workspace is closed"); the workspace goes afterwards, or stays with --ifbench-keep-workspaces."""
    scripted(stub_env)
    agent = stub_env.default

    def garbage_judge(body: dict[str, Any]) -> Reply:
        return Reply(content="no json here") if body.get("response_format") else agent(body)

    stub_env.default = garbage_judge
    workspaces = pytester.path / "ws"  # a kept one stays there, not in the system's temporary directory
    workspaces.mkdir()
    result = pytester.runpytest("suites", *stub_args(stub_env), f"--ifbench-workspaces={workspaces}",
                                *(["--ifbench-keep-workspaces"] if keep else []))
    result.assert_outcomes(errors=1)
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    assert record["status"] == "error" and record["error_kind"] == "judge", record["error"]
    checks = {c["check"]: c for c in record["checks"]}
    for name in ("file", "wrote", "ran", "no-reset", "tests"):
        assert checks[name]["passed"] is True and checks[name]["error"] is None, checks[name]
    assert sorted(c["check"] for c in record["errored_checks"]) == ["asked-about-docs", "summary"]
    assert len(record["judge_calls"]) == 2, "the malformed answer and its repair were paid for"
    kept = Path(record["agent"]["workspace"])
    assert kept.exists() is keep
    if keep:  # on disk, no longer a quota's tmpfs that the next run would release as a killed run's
        assert (kept / "hello.txt").read_text() == "hello\n" and not os.path.ismount(kept.parent)



def test_a_sample_that_errors_takes_no_workspace_of_the_others_with_it(pytester, stub_env, agent_suite):
    """Two samples of an agent instance, the first model request refused: the instance errors with it, and the
    other sample, which ran to the end, leaves no workspace behind (its episode was dropped with it open)."""
    from pytest_ifbench.testing import Fault

    suite = agent_suite.read_text().replace("  protocol_options:", "  generation: {samples: 2}\n  protocol_options:")
    agent_suite.write_text(suite)
    scripted(stub_env)
    stub_env.inject_faults(Fault(kind="status", status=400, message="refused"))
    workspaces = pytester.path / "ws"
    workspaces.mkdir()
    result = pytester.runpytest("suites", *stub_args(stub_env), f"--ifbench-workspaces={workspaces}")
    result.assert_outcomes(errors=1)
    assert stub_env.calls > 1, "the other sample ran"
    assert not list(workspaces.iterdir())
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    answered = [r for r in stub_env.requests if r.fault is None and r.body]
    assert record["paid_calls"] == len(answered), "the other sample's calls were paid for"



def test_a_model_call_that_fails_mid_run_leaves_the_steps_paid_for_in_the_record(pytester, stub_env, agent_suite):
    """The provider refuses the third step's call: the instance errors (not the agent's doing), and its record
    still counts the two steps the run paid for (it had zero tokens, so the summary lost their cost)."""
    from pytest_ifbench.testing import Fault

    scripted(stub_env)
    agent = stub_env.default

    def refuse_the_third_step(body: dict[str, Any]) -> Reply:
        if not body.get("response_format") and sum(m["role"] == "assistant" for m in body["messages"]) == 1:
            threading.Thread(target=stub_env.inject_faults, args=(Fault(kind="status", status=400, message="no"),),
                             kwargs={"match": "Create hello"}).start()  # the script's lock is held here
        return agent(body)

    stub_env.default = refuse_the_third_step
    result = pytester.runpytest("suites", *stub_args(stub_env))
    result.assert_outcomes(errors=1)
    assert stub_env.calls == 3
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    assert record["status"] == "error" and record["error_kind"] == "model" and "HTTP 400" in record["error"]
    assert record["paid_calls"] == 2 and record["tokens"]["prompt"] > 0 and record["tokens"]["completion"] > 0


def test_missing_sandbox_stops_at_start_up(pytester, stub_env, agent_suite):
    pytester.makeconftest("""
        import pytest_ifbench.sandbox._namespaces as ns
        ns._probe_cache[:] = ["bubblewrap (bwrap) is not installed: apt-get install bubblewrap"]
    """)
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env))
    result.stderr.fnmatch_lines(["*1 agent instance(s) selected, but bubblewrap (bwrap) is not installed*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert stub_env.calls == 0


@pytest.mark.parametrize(("option", "reason"), [
    ("--ifbench-agent-runner=nosuchcli", "agent runner 'nosuchcli': unknown agent CLI*"),
    ("--ifbench-workspaces=no-such-dir", "--ifbench-workspaces *no-such-dir: no such directory*"),
    # a limit's value was every agent item's traceback, recorded as `crashed`, naming no option
    ("--ifbench-agent-max-steps=0", "--ifbench-agent-max-steps=0: must be positive, got 0*"),
    ("--ifbench-agent-max-seconds=-5", "--ifbench-agent-max-seconds=-5.0: must be positive, got -5.0*"),
    # a profile's name was every agent item's error, recorded as the model's
    ("--ifbench-agent-tools=nope", "--ifbench-agent-tools: unknown tool profile 'nope' (known: claude_code, *"),
])
def test_a_start_up_problem_under_xdist_stops_the_run_in_one_line(pytester, stub_env, agent_suite, option, reason):
    """Under -n the workers collect, so the controller checks: a worker's usage error was an INTERNALERROR
    (exit 3) with the reason lost."""
    write_suite(pytester.path, "suites/text.yaml", """
        ifbench: 1
        benchmark: plain
        instances:
          - {id: hi, prompt: hi, checks: [{id: lower, verifier: ifbench.case, params: {mode: lower}}]}
    """)
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env), "-n", "2", option)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output, output[-3000:]
    result.stdout.fnmatch_lines([f"*pytest-ifbench: {reason}"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert stub_env.calls == 0
    # Checked on what is selected: without the agent instance the same options run the rest.
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env), "-n", "2", option, "-k", "hi")
    result.assert_outcomes(passed=1)


def test_a_suite_s_unknown_tool_profile_stops_the_run_naming_the_instance(pytester, stub_env):
    write_suite(pytester.path, "suites/tools.yaml", """
        ifbench: 1
        benchmark: plain
        instances:
          - id: fix
            prompt: Fix it.
            protocol: agent
            protocol_options: {runner: loop, tools: claude-code}
            checks: [{id: wrote, verifier: ifbench.tool_called, params: {tool: write_file}}]
    """)
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env))
    result.stderr.fnmatch_lines(["*pytest-ifbench: suites/tools.yaml: instance 'fix': protocol_options.tools: "
                                 "unknown tool profile 'claude-code' (known: claude_code, *)"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR and stub_env.calls == 0


def test_harness_failure_is_an_error_not_a_failed_check(pytester, stub_env, agent_suite):
    scripted(stub_env)
    result = pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-agent-runner=nosuchcli")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*agent runner 'nosuchcli': unknown agent CLI*"])


def test_killed_agent_run_resumes_paying_only_for_missing_calls(pytester, stub_env, agent_suite):
    steps = [[call("bash", {"command": f"echo step {i}"}, i)] for i in range(1, 7)]
    steps.append([call("finish", {"answer": "done"}, 7)])
    scripted(stub_env, steps)
    stub_env.latency = 0.4
    args = [sys.executable, "-m", "pytest", "suites", *stub_args(stub_env, "--ifbench-concurrency=1")]
    proc = subprocess.Popen(args, cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and stub_env.calls < 3:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    cache = pytester.path / ".ifbench-cache"
    paid = len([p for p in cache.rglob("*.json") if not p.name.startswith(".")])
    assert 2 <= paid < 7, paid
    stub_env.latency = 0.0
    before = stub_env.calls
    result = pytester.runpytest("suites", *stub_args(stub_env))
    agent_calls = stub_env.calls - before - 1  # one judge call
    assert agent_calls == 7 - paid, (agent_calls, paid)
    # A third run is served entirely from the cache (judge included).
    before = stub_env.calls
    pytester.runpytest("suites", *stub_args(stub_env))
    assert stub_env.calls == before
    assert "agents.yaml::greet" in result.stdout.str()


# --------------------------------------------------------------------------- real agent CLIs through pytest

CLI_SUITE = """
ifbench: 1
benchmark: clidemo
instances:
  - id: write-hello
    protocol: agent
    scaffold: {scaffold}
    protocol_options: {{runner: {runner}, max_seconds: 120}}
    prompt: Create hello.txt in the workspace.
    checks:
      - {{id: file, verifier: ifbench.file_contains, params: {{path: hello.txt, text: hello}}}}
      - {{id: used-write, verifier: ifbench.tool_called, params: {{tool: {tool}}}}}
      - {{id: no-reset, verifier: ifbench.tool_not_called, params: {{arguments: 'reset --hard'}}}}
      - {{id: reports, verifier: ifbench.judge, params: {{criterion: The final answer says the file was written.}}}}
"""


@pytest.mark.parametrize("name", ["claude_code", "kilo", "droid"])
def test_a_real_agent_cli_runs_as_a_suite_item(name, agents, pytester, stub_env):
    stub_env.default = cli_script(name)
    write_suite(pytester.path, "suites/cli.yaml",
                CLI_SUITE.format(scaffold=name, runner=name, tool=CLI_WRITE[name][0]))
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env), "--ifbench-timeout=60", "-v",
                                           "--alluredir=allure")
    result.stdout.fnmatch_lines(["*cli.yaml::write-hello PASSED*"])
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    assert record["agent"]["runner"] == name and record["status"] == "passed", record.get("error")
    assert all(c["passed"] for c in record["checks"])
    raw = record["agent"]["trajectory"]
    assert any(c["function"]["name"] == CLI_WRITE[name][0] for m in raw["messages"] for c in m.get("tool_calls") or [])
    attachments = [p.read_text(errors="replace") for p in (pytester.path / "allure").glob("*-attachment.txt")]
    assert any(f"runner: {name}" in text for text in attachments)



TOO_LONG = "This model's maximum context length is 8192 tokens (context_length_exceeded)"


@pytest.mark.parametrize("refused_step", [2, 1])
def test_a_run_that_fills_the_context_window_is_scored_as_it_stands(pytester, stub_env, agent_suite, refused_step):
    """The provider refuses the second step as too long for the model's window: the run's own step filled it,
    so the run stops (``context_window``) and is scored as it stands, like a limit (it was an error, which
    ISR and CSR leave out: an agent could flood its own context to get out of a failing instance). Refused
    on the first call, the task itself does not fit the model: still the model's error."""
    from pytest_ifbench.testing import Fault

    scripted(stub_env)
    agent = stub_env.default
    too_long = Fault(kind="status", status=400, message=TOO_LONG)
    if refused_step == 1:
        stub_env.inject_faults(too_long, match="Create hello")

    def refuse(body: dict[str, Any]) -> Reply:
        if refused_step == 2 and sum(m["role"] == "assistant" for m in body.get("messages") or ()) == 0:
            threading.Thread(target=stub_env.inject_faults, args=(too_long,), kwargs={"match": "Create hello"}).start()
        return agent(body)

    stub_env.default = refuse
    pytester.runpytest("suites", *stub_args(stub_env))
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    if refused_step == 1:
        assert record["status"] == "error" and record["error_kind"] == "model", record
        return
    assert record["status"] == "failed" and record["agent"]["stop_reason"] == "context_window", record
    checks = {c["check"]: c["passed"] for c in record["checks"]}
    assert checks["file"] is True and checks["wrote"] is True and checks["ran"] is False
    assert record["agent"]["steps"] == 2 and record["tokens"]["prompt"] > 0  # the refused call was made


@pytest.mark.parametrize("name", ["claude_code"])
def test_a_real_cli_whose_conversation_fills_the_context_window_is_scored_as_it_stands(name, agents, pytester,
                                                                                        stub_env):
    from pytest_ifbench.testing import Fault

    script = cli_script(name)
    answered = []

    def then_too_long(body: dict[str, Any]) -> Reply:
        if not answered:
            answered.append(body)
            faults = (Fault(kind="status", status=400, message=TOO_LONG),)
            threading.Thread(target=stub_env.inject_faults, args=faults).start()  # the script's lock is held here
        return script(body)

    stub_env.default = then_too_long
    write_suite(pytester.path, "suites/cli.yaml",
                CLI_SUITE.format(scaffold=name, runner=name, tool=CLI_WRITE[name][0]))
    pytester.runpytest_subprocess("suites", *stub_args(stub_env), "--ifbench-timeout=60")
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    assert record["status"] in ("passed", "failed") and record["agent"]["stop_reason"] == "context_window", record
    assert record["agent"]["steps"] == 2 and record["tokens"]["prompt"] > 0


def test_a_provider_failing_during_a_real_cli_run_keeps_its_paid_calls(agents, pytester, stub_env):
    """Claude Code's first call is answered, then the provider fails: a harness error (never the agent's),
    whose record counts the call the run paid for."""
    from pytest_ifbench.testing import Fault

    script = cli_script("claude_code")
    answered = []

    def then_fail(body: dict[str, Any]) -> Reply:
        if not answered:
            answered.append(body)
            down = tuple(Fault(kind="status", status=500, message="upstream exploded") for _ in range(20))
            threading.Thread(target=stub_env.inject_faults, args=down).start()  # the script's lock is held here
        return script(body)

    stub_env.default = then_fail
    write_suite(pytester.path, "suites/cli.yaml",
                CLI_SUITE.format(scaffold="claude_code", runner="claude_code", tool=CLI_WRITE["claude_code"][0]))
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env), "--ifbench-timeout=60")
    result.assert_outcomes(errors=1)
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    assert record["error_kind"] == "harness" and "upstream exploded" in record["error"], record["error"]
    assert record["paid_calls"] >= 1 and record["tokens"]["prompt"] > 0


def test_the_authors_normalized_trajectory_scores_offline(pytester, stub_env):
    """`ifbench score --trajectories` on the authors' released trajectory: no agent, no model."""
    from tests._support import shared_sample

    sample = shared_sample("octobench-normalized-trajectory-sample.jsonl")
    write_suite(pytester.path, "suites/recorded.yaml", """
        ifbench: 1
        benchmark: recorded
        instances:
          - id: benchmark-md-emoji-test-001
            protocol: agent
            prompt: (recorded)
            checks:
              - {id: read-a-file, verifier: ifbench.tool_called, params: {tool: Read}}
              - {id: no-reset, verifier: ifbench.tool_not_called, params: {arguments: 'reset --hard'}}
              - {id: no-emoji, verifier: ifbench.no_emoji, params: {scope: final}}
    """)
    result = pytester.run("ifbench", "score", "--suite", "suites", "--trajectories", str(sample), "--",
                          *stub_args(stub_env), "-v")
    result.stdout.fnmatch_lines(["*SUBPASS*[[]read-a-file[]]*", "*SUBPASS*[[]no-reset[]]*"])
    assert stub_env.calls == 0
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    assert record["agent"]["runner"] == "recorded" and record["agent"]["trajectory"]["messages"]
