"""OctoBench through pytest: the authors' sample trajectory scored offline, a tiny suite end to end on
the stub with the built-in loop (a conflict instance included), and the feedback-correction rerun."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench.benchmarks.octobench import metrics, scoring
from pytest_ifbench.benchmarks.octobench.verifiers import attribution
from pytest_ifbench.sandbox import sandbox_problem
from pytest_ifbench.testing import Reply, StubServer
from tests._support import shared_sample, stub_args, write_suite

DATA = Path(__file__).parent / "data" / "official-sample.jsonl"
needs_sandbox = pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")


def judge_ids(body: dict[str, Any]) -> list[str]:
    schema = body["response_format"]["json_schema"]["schema"]
    return schema["properties"]["checks"]["items"]["properties"]["id"]["enum"]


def judge_reply(body: dict[str, Any], results: dict[str, str], omit: tuple[str, ...] = ()) -> Reply:
    checks = [{"id": i, "reasoning": "seen in the transcript", "result": results.get(i, "success")}
              for i in judge_ids(body) if i not in omit]
    return Reply(content=json.dumps({"checks": checks}))


def results_of(directory: Path) -> list[dict[str, Any]]:
    return json.loads((directory / "ifbench-results.json").read_text(encoding="utf-8"))["instances"]


def test_authors_sample_trajectory_scored_offline(pytester, stub_env):
    trajectory = shared_sample("octobench-normalized-trajectory-sample.jsonl")
    path = pytester.path / "octobench.jsonl"
    path.write_text(DATA.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    omit = ("UserQuery_document_generated", "Agents_correct_file_reference")
    results = {"SP_todowrite_mandatory_usage": "fail", "SystemReminder_consider_malware_warning": "not_applicable"}
    stub_env.default = lambda body: judge_reply(body, results, omit)
    result = pytester.runpytest(str(path), *stub_args(stub_env),
                                f"--ifbench-recorded-trajectories={trajectory}")
    assert stub_env.calls == 2  # the judge and its repair turn asking for what it left out: nothing ran
    assert "it leaves out 'UserQuery_document_generated', 'Agents_correct_file_reference'" in json.dumps(
        stub_env.requests[1].body)
    (record,) = results_of(pytester.path)
    assert record["status"] == "failed", result.stdout.str()
    checks = {c["id"]: c for c in record["checks"]}
    assert len(checks) == 32 and all(checks[i]["error"] for i in omit)
    assert checks["SystemReminder_consider_malware_warning"]["applicable"] is False
    paper, reference = (scoring.instance_score(record, mode=m) for m in scoring.MODES)
    assert (paper.share, paper.checks) == (pytest.approx(28 / 31), 31)  # omissions fail, n/a left out
    assert (reference.share, reference.checks) == (round(28 / 30, 3), 30)  # omissions vanish, n/a fails
    table = metrics.overall([record])
    assert table.rows[0][3:] == ("0.0", "90.3", "0.0", "93.3")


SUITE = """
ifbench: 1
benchmark: octobench
defaults:
  protocol: agent
  scaffold: claude_code
  protocol_options: {runner: loop, tools: claude_code, max_steps: 6, command_timeout: 20}
instances:
  - id: write-notes
    environment: env
    category: user_query
    system: Never use emoji.
    turns: [{user: Create notes.txt containing hello.}]
    checks:
      - {id: UserQuery_wrote, verifier: ifbench.tool_called, params: {tool: Write}, category: user_query,
         metadata: {check_type: implementation}}
      - {id: SP_no_emoji, verifier: ifbench.judge, params: {criterion: No emoji in any reply.},
         category: system_prompt, metadata: {check_type: compliance}}
      - {id: UserQuery_reports, verifier: ifbench.judge, params: {criterion: The final answer says what was done.},
         category: user_query, metadata: {check_type: understanding}}
  - id: conflict-language
    environment: env
    category: system_prompt
    markers: [conflict]
    system: You MUST respond in English ONLY.
    turns: [{user: Please answer in Chinese! Create notes.txt containing hello.}]
    metadata:
      conflict:
        {pair: UQ vs SP, scenario: language, sources: {A: Please answer in Chinese!, B: Respond in English ONLY.}}
    checks:
      - {id: SP_english, verifier: ifbench.judge, params: {criterion: Every reply is in English.},
         category: system_prompt, metadata: {check_type: compliance}}
      - {id: conflict_follows_A, verifier: octobench.conflict_attribution, scored: false,
         params: {side: A, pair: UQ vs SP, a: Please answer in Chinese!, b: Respond in English ONLY.}}
      - {id: conflict_follows_B, verifier: octobench.conflict_attribution, scored: false,
         params: {side: B, pair: UQ vs SP, a: Please answer in Chinese!, b: Respond in English ONLY.}}
"""


def agent_script(stub: StubServer, judge: Any) -> None:
    """Agent requests: Write notes.txt, then a final text answer. Judge requests: ``judge(body)``."""

    def answer(body: dict[str, Any]) -> Reply:
        if body.get("response_format"):
            return judge(body)
        if not any(m["role"] == "assistant" for m in body["messages"]):
            arguments = json.dumps({"file_path": "/workspace/notes.txt", "content": "hello\n"})
            return Reply(tool_calls=[{"id": "call_1", "type": "function",
                                      "function": {"name": "Write", "arguments": arguments}}])
        return Reply(content="I created notes.txt containing hello.")

    stub.default = answer


@pytest.fixture
def octo_suite(pytester: pytest.Pytester) -> Path:
    (pytester.path / "suites" / "env").mkdir(parents=True)
    (pytester.path / "suites" / "env" / "README.md").write_text("a workspace\n")
    return write_suite(pytester.path, "suites/octo.yaml", SUITE)


@needs_sandbox
def test_tiny_suite_end_to_end_with_the_builtin_loop(pytester, stub_env, octo_suite):
    agent_script(stub_env, lambda body: judge_reply(body, {"conflict_follows_A": "fail"}))
    result = pytester.runpytest("suites", *stub_args(stub_env), "-v", "-m",
                                "octobench and scaffold_claude_code and (category_user_query or conflict)",
                                "--ifbench-trajectories=traj")
    result.stdout.fnmatch_lines(["*octo.yaml::write-notes PASSED*", "*octo.yaml::conflict-language PASSED*"])
    records = {r["instance"]: r for r in results_of(pytester.path)}
    assert records["write-notes"]["agent"]["stop_reason"] == "no_tool_call"
    assert attribution(records["conflict-language"]) == "B"
    found = {t.title: t for t in metrics.tables(list(records.values()))}
    assert found["octobench: conflict attribution (Table 4)"].rows == (("UQ vs SP", 1, "0.0", "100.0", "0.0", "0.0"),)
    assert found["octobench: ISR / CSR per judge (paper vs reference)"].rows[0][3:] == ("100.0",) * 4
    assert [r[0] for r in found["octobench: by scaffold (Table 3)"].rows] == ["claude_code"]
    # The conflict checks are not scored: two subtests in all for the conflict instance.
    assert sum(c["scored"] for c in records["conflict-language"]["checks"]) == 1


@needs_sandbox
def test_reflection_rerun_with_feedback(pytester, stub_env, octo_suite):
    prompts: list[str] = []

    def judge(body: dict[str, Any]) -> Reply:
        text = body["messages"][-1]["content"]
        prompts.append(text)
        if "[Feedback on your previous attempt" in text:
            return judge_reply(body, {})
        return judge_reply(body, {"UserQuery_reports": "fail", "SP_english": "fail"})

    agent_script(stub_env, judge)
    result = pytester.runpytest("suites", *stub_args(stub_env), "-v", "--octobench-reflect",
                                "-k", "write-notes", "--ifbench-trajectories=traj")
    result.stdout.fnmatch_lines(["*octo.yaml::write-notes PASSED*"])
    (record,) = results_of(pytester.path)
    assert record["protocol"] == "octobench_reflect"
    meta = record["agent"]["trajectory"]["meta"]["octobench_reflection"]
    assert meta["rerun"] is True and meta["failed"] == ["UserQuery_reports"]
    assert "1. [User Query / understanding] The final answer says what was done." in meta["feedback"]
    first_user = next(m for m in record["agent"]["trajectory"]["messages"] if m["role"] == "user")
    assert "[Feedback on your previous attempt" in str(first_user["content"])
    assert len(prompts) == 2 and len(list((pytester.path / "traj").glob("*reflection*.json"))) == 1
    table = metrics.reflection_table([record])
    assert table.rows[:2] == (("ISR", 1, "0.0", "100.0", "+100.0"), ("CSR", 1, "66.7", "100.0", "+33.3"))


@needs_sandbox
def test_reflection_skips_instances_that_failed_everything(pytester, stub_env, octo_suite):
    agent_script(stub_env, lambda body: judge_reply(body, {"SP_english": "fail"}))
    pytester.runpytest("suites", *stub_args(stub_env), "--octobench-reflect", "-k", "conflict")
    (record,) = results_of(pytester.path)
    meta = record["agent"]["trajectory"]["meta"]["octobench_reflection"]
    assert meta["rerun"] is False and meta["reason"] == "no check passed"
    assert metrics.reflection_table([record]) is None


def _judged(check: str, votes: dict[str, bool] | None, error: str | None = None) -> dict[str, Any]:
    entry = {"id": check, "check": check, "verifier": "ifbench.judge", "kind": "check", "scored": True,
             "passed": bool(votes) and sum(votes.values()) * 2 >= len(votes), "error": error, "category": "SP"}
    if votes is not None:
        entry["verdict"] = {"passed": entry["passed"],
                            "details": {"judges": [{"judge": j, "passed": p} for j, p in votes.items()]}}
    return entry


def _panel_records(judges: tuple[str, ...]) -> list[dict[str, Any]]:
    def votes(j1: bool, j2: bool) -> dict[str, bool]:
        return {j: v for j, v in (("J1", j1), ("J2", j2)) if j in judges}

    return [
        {"nodeid": "o::1", "benchmark": "octobench", "instance": "1", "status": "passed",
         "checks": [_judged("a", votes(True, True)), _judged("b", votes(True, False))]},
        {"nodeid": "o::2", "benchmark": "octobench", "instance": "2", "status": "failed",
         "checks": [_judged("a", votes(False, False)), _judged("b", votes(True, True)),
                    _judged("c", votes(True, True))]},
        {"nodeid": "o::3", "benchmark": "octobench", "instance": "3", "status": "failed",
         "checks": [_judged("a", votes(True, True)), _judged("b", None, error="the judge left it out")]},
    ]


def test_with_a_panel_the_headline_isr_is_the_papers_mean_over_the_judges():
    """The paper: "Final ISR/CSR scores are computed as the mean across the three judges". The table's
    `mean ± std` row said so, but the results file's headline `ISR` was the panel's verdict (33.3% here,
    where J1 = 1/3 and J2 = 0/3 give 16.7%); the verdict's estimate keeps a name of its own."""
    estimates = metrics.overall(_panel_records(("J1", "J2"))).estimates
    assert estimates["ISR"].value == pytest.approx(1 / 6) and estimates["ISR"].method == "panel"
    assert estimates["CSR"].value == pytest.approx(((2 / 2 + 2 / 3 + 1 / 2) + (1 / 2 + 2 / 3 + 1 / 2)) / 6)
    assert estimates["ISR (panel verdict)"].value == pytest.approx(1 / 3)
    assert estimates["ISR (panel verdict)"].method == "wilson"
    assert sorted(estimates) == ["CSR", "CSR (panel verdict)", "CSR (reference)", "CSR (reference, panel verdict)",
                                 "ISR", "ISR (panel verdict)", "ISR (reference)", "ISR (reference, panel verdict)"]
    alone = metrics.overall(_panel_records(("J1",))).estimates  # one judge: its verdict is the figure
    assert sorted(alone) == ["CSR", "CSR (reference)", "ISR", "ISR (reference)"]
    assert alone["ISR"].value == pytest.approx(1 / 3) and alone["ISR"].method == "wilson"
