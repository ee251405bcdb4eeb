"""AgentIF end to end through pytest: the official layout and a YAML suite, the built-in loop on the stub
server really working in the sandbox, then one rubric judge call that sees the attachments, the answer and
the produced files; results, markers, the needs_web skip and the metrics."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_ifbench.benchmarks.agentif import metrics, screenshot
from pytest_ifbench.sandbox import sandbox_problem
from pytest_ifbench.testing import Reply, StubServer
from tests._support import stub_args, write_suite

from .test_official import official_layout

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")


def call(name: str, arguments: dict[str, Any], n: int) -> dict[str, Any]:
    return {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


STEPS = [
    [call("bash", {"command": "cat plans.csv"}, 1)],
    [call("write_file", {"path": "report.md", "content": "# Report\nPlan B is cheapest: 20/month.\n"}, 2)],
    [call("write_file", {"path": "index.html", "content": "<h1>Plan B wins</h1>"}, 3)],
    [call("finish", {"answer": "Plan B is the cheapest; see report.md."}, 4)],
]


def scripted(stub: StubServer, satisfied: dict[str, bool]) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        if body.get("response_format"):
            schema = body["response_format"]["json_schema"]["schema"]
            ids = schema["properties"]["criteria_results"]["items"]["properties"]["id"]["enum"]
            return Reply(content=json.dumps({"criteria_results": [
                {"id": i, "satisfied": satisfied.get(i, True), "reasoning": f"checked {i}"} for i in ids]}))
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return Reply(tool_calls=STEPS[min(done, len(STEPS) - 1)])

    stub.default = answer


def test_official_file_runs_unchanged(pytester, stub_env, monkeypatch):
    monkeypatch.setenv("IFBENCH_AGENTIF_CACHE", str(pytester.path / "cache"))
    official_layout(pytester.path / "release")
    scripted(stub_env, {"c1": True, "c2": True, "c3": True})  # taskif_1: the penalty applies
    result = pytester.runpytest("release/data.jsonl", *stub_args(stub_env, "--judge-model=openai/stub"),
                                "-v", "-m", "with_attachments", "-rs")
    result.stdout.fnmatch_lines(["*data.jsonl::taskif_1 FAILED*"])
    assert "taskif_2" not in result.stdout.str()  # deselected: no attachments
    if screenshot.chromium() is None:
        result.stdout.fnmatch_lines(["*agentif: no screenshot: Chromium is not installed (apt-get install chromium)*"])
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    assert record["instance"] == "taskif_1" and record["agent"]["stop_reason"] == "finished"
    checks = {c["id"]: c for c in record["checks"]}
    assert checks["c1"]["passed"] and checks["c2"]["passed"] and not checks["c3"]["passed"]
    assert checks["c3"]["kind"] == "penalty" and checks["c3"]["verdict"]["details"]["judges"][0]["satisfied"]
    assert metrics.task_score(metrics.rubric_checks(record)) == pytest.approx(2 / 3)  # (3 - 1) / 3
    judge_calls = [r for r in stub_env.requests if r.body and r.body.get("response_format")]
    assert len(judge_calls) == 1  # one call per task per judge, every item in it
    prompt = judge_calls[0].body["messages"][1]["content"]
    assert "--- file: plans.csv ---\nplan\tmonthly\nA\t30\nB\t20" in prompt  # attachment converted
    assert "--- file: photo.png ---\nimage PNG 40x30 RGB" in prompt
    assert "=== AGENT ANSWER ===\nPlan B is the cheapest; see report.md." in prompt
    files = prompt.split("=== AGENT FILES ===", 1)[1].split("=== REFERENCE ANSWER ===", 1)[0]
    assert "--- file: report.md ---\n# Report\nPlan B is cheapest" in files
    assert "--- file: index.html ---\nPlan B wins" in files
    assert "plans.csv" not in files and "photo.png" not in files  # unchanged attachments are not "produced"
    if screenshot.chromium() is not None:
        assert "[screenshot of index.html at 1280x900]" in files
    assert "--- file: report_ref.md ---\nPlan B" in prompt and "Plan B (20/month)." in prompt
    agent_requests = [r for r in stub_env.requests if r.body and not r.body.get("response_format")]
    workspace_listing = agent_requests[1].body["messages"][-1]["content"]
    assert "A,30" in workspace_listing  # `cat plans.csv` ran in a workspace holding the attachment


SUITE = """
ifbench: 1
benchmark: agentif
defaults:
  protocol: agentif
  protocol_options: {max_steps: 8, command_timeout: 20}
instances:
  - id: cheapest
    category: latent_inference
    environment: environments/cheapest
    prompt: Using plans.csv, find the cheapest plan and write report.md.
    metadata: {domain: work, reference_answer: Plan B.}
    checks:
      - {id: c1, verifier: agentif.rubric, kind: bonus, points: 1, category: factuality,
         metadata: {aspect: content}, params: {criterion: Names Plan B.}}
      - {id: c2, verifier: agentif.rubric, kind: penalty, points: 1, category: negative_constraint,
         metadata: {aspect: form}, params: {criterion: Invents a plan.}}
  - id: live-prices
    category: open_workflow
    prompt: Look up today's price of the iPhone 17 Pro Max.
    metadata: {domain: life, reference_answer: "", needs_web: true}
    checks:
      - {id: c1, verifier: agentif.rubric, kind: bonus, points: 1, category: factuality,
         metadata: {aspect: content}, params: {criterion: Gives a price.}}
"""


def test_yaml_suite_domain_marker_and_needs_web_skip(pytester, stub_env):
    (pytester.path / "suites" / "environments" / "cheapest").mkdir(parents=True)
    (pytester.path / "suites" / "environments" / "cheapest" / "plans.csv").write_text("plan,monthly\nA,30\nB,20\n")
    write_suite(pytester.path, "suites/agentif.yaml", SUITE)
    (pytester.path / "suites" / "conftest.py").write_text('collect_ignore = ["environments"]\n')
    scripted(stub_env, {"c1": True, "c2": False})
    result = pytester.runpytest("suites", *stub_args(stub_env, "--judge-model=openai/stub"), "-v", "-rs")
    result.stdout.fnmatch_lines(["*agentif.yaml::cheapest PASSED*", "*agentif.yaml::live-prices SKIPPED*",
                                 "*needs the live web, and no tool named web_search or web_fetch is registered*"])
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    assert "domain_work" in record["markers"] and "with_attachments" in record["markers"]
    assert metrics.task_score(metrics.rubric_checks(record)) == 1.0
    rows = dict(metrics.tables([record])[0].rows)
    # one task: the score and the rubric dimension with their (whole-range) intervals, never bare
    assert rows["category: latent_inference"] == "1.000 ±inf [0.000, 1.000] (n=1)"
    assert rows["rubric: factuality"] == "1.000 ±inf [0.000, 1.000]"
    collected = pytester.runpytest("suites", "--collect-only", "-q", "-m", "domain_life",
                                   *stub_args(stub_env))
    collected.stdout.fnmatch_lines(["*agentif.yaml::live-prices*"])


WEB_PLUGIN = '''
from pytest_ifbench.agents.tools import Tool, ToolResult


async def _search(args, ctx):
    return ToolResult(content="iPhone 17 Pro Max: 1199 USD")


def pytest_ifbench_register_tools(tools):
    tools.add_tool(Tool(name="web_search", description="Search the web.", run=_search,
                        parameters={"type": "object", "properties": {"query": {"type": "string"}}}))
'''


def test_needs_web_runs_when_a_web_tool_is_registered(pytester, stub_env):
    write_suite(pytester.path, "suites/agentif.yaml", SUITE)
    (pytester.path / "suites" / "environments" / "cheapest").mkdir(parents=True)
    (pytester.path / "suites" / "conftest.py").write_text('collect_ignore = ["environments"]\n' + WEB_PLUGIN)
    scripted(stub_env, {"c1": True})
    result = pytester.runpytest("suites", *stub_args(stub_env, "--judge-model=openai/stub"), "-v",
                                "-k", "live")
    result.stdout.fnmatch_lines(["*agentif.yaml::live-prices PASSED*"])
    tools = [t["function"]["name"] for t in next(r for r in stub_env.requests if r.body.get("tools")).body["tools"]]
    assert "web_search" in tools


def test_an_item_the_judge_leaves_out_is_an_error_and_the_task_is_not_scored(pytester, stub_env, monkeypatch):
    monkeypatch.setenv("IFBENCH_CHROMIUM", str(pytester.path / "no-chromium"))  # and Chromium is missing
    (pytester.path / "suites" / "environments" / "cheapest").mkdir(parents=True)
    write_suite(pytester.path, "suites/agentif.yaml", SUITE)
    (pytester.path / "suites" / "conftest.py").write_text('collect_ignore = ["environments"]\n')

    def answer(body: dict[str, Any]) -> Reply:
        if body.get("response_format"):  # c2 is left out
            return Reply(content=json.dumps({"criteria_results": [{"id": "c1", "satisfied": True, "reasoning": "ok"}]}))
        return Reply(tool_calls=STEPS[-1])

    stub_env.default = answer
    result = pytester.runpytest("suites", *stub_args(stub_env, "--judge-model=openai/stub"), "-v",
                                "-k", "cheapest")
    assert "left this criterion out" in result.stdout.str()
    result.stdout.fnmatch_lines(["agentif: no screenshot: Chromium is not installed (apt-get install chromium); "
                                 "HTML/SVG files reach the judge as text only"])
    judge_call = next(r for r in stub_env.requests if r.body.get("response_format"))
    assert "[no screenshot: Chromium is not installed (apt-get install chromium)]" in judge_call.body["messages"][1][
        "content"]
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    checks = {c["id"]: c for c in record["checks"]}
    assert checks["c1"]["passed"] and checks["c2"]["error"]
    assert metrics.errored(record)
    rows = dict(metrics.tables([record])[0].rows)
    assert rows["errors (excluded)"] == 1 and rows["scored"] == 0 and rows["overall score (eq. 2)"] == "-"


def test_a_rescore_without_the_files_the_agent_made_is_an_error_not_a_judged_task(pytester, stub_env):
    """The rubric judge reads the files the agent produced. When the run's workspace could not be kept beside
    its trajectory, a re-score judged the task without them ("no files shown"), paying for a verdict the
    live run would not give; it is an error saying why, and no judge call is made."""
    (pytester.path / "suites" / "environments" / "cheapest").mkdir(parents=True)
    (pytester.path / "suites" / "environments" / "cheapest" / "plans.csv").write_text("plan,monthly\nA,30\nB,20\n")
    write_suite(pytester.path, "suites/agentif.yaml", SUITE)
    (pytester.path / "suites" / "conftest.py").write_text('collect_ignore = ["environments"]\n')
    scripted(stub_env, {"c1": True, "c2": False})
    args = stub_args(stub_env, "--judge-model=openai/stub")
    pytester.runpytest("suites", *args, "-k", "cheapest", "--ifbench-trajectories=traj")
    trajectory = pytester.path / "traj" / "suites_agentif.yaml--cheapest.json"
    data = json.loads(trajectory.read_text())  # as the run leaves it when its workspace cannot be packed
    data["meta"]["workspace_not_kept"] = "not kept: it holds a name over 256 directories deep"
    trajectory.write_text(json.dumps(data))
    trajectory.with_name("suites_agentif.yaml--cheapest.workspace.tar.gz").unlink()

    calls = stub_env.calls
    pytester.run("ifbench", "score", "--suite", "suites/agentif.yaml", "--trajectories", "traj",
                 "--results", "rescored.json", "--", *args, "-k", "cheapest", "--ifbench-no-cache")
    (record,) = json.loads((pytester.path / "rescored.json").read_text())["instances"]
    assert record["status"] == "error", record
    assert record["error"] == ("the run's final workspace was not kept: it holds a name over 256 directories deep: "
                               "its workspace checks cannot be decided again"), record["error"]
    assert stub_env.calls == calls
