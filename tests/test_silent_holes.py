"""No silent holes in the reports: each test fails on the behaviour issue 23 found."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

from pytest_ifbench import errored
from pytest_ifbench.reports.metrics import COLUMNS, core_tables
from pytest_ifbench.reports.summary_writer import scored_what
from pytest_ifbench.testing import Fault, Reply
from tests._support import demo_suite, stub_args, write_suite
from tests.test_judge_trajectory import REGISTRY, answering, judge

CONDITIONAL = {"id": "c", "verifier": "manyih.if_judge",
               "params": {"prompt": "Are tool calls in XML tags? {response}",
                          "condition": "Does {response} call a tool?", "compat": "reference"}}


def verdicts(answer: dict[str, str]):
    def reply(body):
        prompt = next(m["content"] for m in body["messages"] if "REQUIREMENTS" in m["content"])
        asked = re.findall(r"- id: (\S+)", prompt)
        return Reply(content=json.dumps({"checks": [{"id": i, "verdict": answer[i], "reasoning": "r"}
                                                    for i in asked if i in answer]}))
    return reply


def results_of(pytester) -> dict[str, dict]:
    data = json.loads((pytester.path / "ifbench-results.json").read_text())
    return {r["instance"]: r for r in data["instances"]}


def test_an_instance_with_no_applicable_check_is_neither_passed_nor_failed(pytester, stub_env):
    write_suite(pytester.path, "suites/na.yaml", demo_suite({"id": "na", "prompt": "hi", "checks": [CONDITIONAL]}))
    stub_env.add_rule("REQUIREMENTS", verdicts({"c": "not_applicable"}))
    result = pytester.runpytest("suites", *stub_args(stub_env), "--judge-model=openai/stub")
    result.assert_outcomes(skipped=1)
    assert result.ret == 0
    record = results_of(pytester)["na"]
    assert record["status"] == "not_applicable"
    row = dict(zip(COLUMNS, core_tables("demo", [record])[0].rows[0]))
    assert (row["items"], row["errors"], row["n/a"], row["ISR"]) == (1, 0, 1, "-")


def test_a_judge_error_after_the_run_keeps_the_turns_decided_checks_and_tokens(pytester, stub_env):
    instance = {"id": "j", "prompt": "hi", "checks": [
        {"id": "words", "verifier": "ifbench.word_count", "params": {"min": 1}},
        {"id": "polite", "verifier": "ifbench.judge", "params": {"criterion": "is polite"}}]}
    write_suite(pytester.path, "suites/j.yaml", demo_suite(instance))
    stub_env.add_rule("REQUIREMENTS", Reply(content="no json here"))
    result = pytester.runpytest("suites", *stub_args(stub_env), "--judge-model=openai/stub")
    result.assert_outcomes(errors=1)
    record = results_of(pytester)["j"]
    assert record["status"] == "error" and record["error_kind"] == "judge"
    assert record["turns"] and record["turns"][0]["response"]["text"] == "stub reply to: hi"
    checks = {c["check"]: c for c in record["checks"]}
    assert checks["words"]["passed"] is True and checks["words"]["error"] is None
    assert checks["polite"]["error"].startswith("undecided: judge")
    assert [c["check"] for c in record["errored_checks"]] == ["polite"]
    assert record["tokens"]["prompt"] > 0 and record["durations"]["generation"] >= 0
    assert len(record["judge_calls"]) == 2, "the malformed answer and its repair were paid for"



def test_a_judge_call_that_fails_keeps_the_paid_reply_as_a_judge_error(pytester, stub_env):
    """The judge's provider answering HTTP 500 (after its retries): the instance was a `model` error with no
    turns, no tokens and no cost, though the model's reply had been paid for; its deterministic check was
    lost too. It is a judge error keeping all of them, as a judge answering garbage already was."""
    instance = {"id": "j", "prompt": "hi", "checks": [
        {"id": "words", "verifier": "ifbench.word_count", "params": {"min": 1}},
        {"id": "polite", "verifier": "ifbench.judge", "params": {"criterion": "is polite"}}]}
    write_suite(pytester.path, "suites/j.yaml", demo_suite(instance))
    stub_env.inject_faults(Fault(kind="status", status=500, message="judge backend down"), match="REQUIREMENTS")
    result = pytester.runpytest("suites", *stub_args(stub_env), "--judge-model=openai/stub",
                                "--ifbench-max-attempts=1")
    result.assert_outcomes(errors=1)
    record = results_of(pytester)["j"]
    assert (record["status"], record["error_kind"]) == ("error", "judge"), record["error"]
    assert record["error"].startswith("judge 'openai/stub' failed: ") and "judge backend down" in record["error"]
    assert record["turns"][0]["response"]["text"] == "stub reply to: hi" and record["tokens"]["prompt"] > 0
    checks = {c["check"]: c for c in record["checks"]}
    assert checks["words"]["passed"] is True and checks["polite"]["error"].startswith("undecided: judge")
    assert stub_env.calls == 2


def test_a_check_the_judge_left_out_of_its_answer_is_an_error_not_a_failure(pytester, stub_env):
    """The reply judge answering one of two checks: the other was failed ("the judge omitted this check")
    and counted in ISR and CSR as the model's failure, a zero nobody gave. It is an error on that check, as
    the trajectory judge's omissions are; the answered check and the paid calls stay in the record."""
    instance = {"id": "j", "prompt": "hi", "checks": [
        {"id": "polite", "verifier": "ifbench.judge", "params": {"criterion": "is polite"}},
        {"id": "short", "verifier": "ifbench.judge", "params": {"criterion": "is short"}}]}
    write_suite(pytester.path, "suites/j.yaml", demo_suite(instance))
    stub_env.add_rule("REQUIREMENTS", verdicts({"polite": "pass"}))
    stub_env.add_rule("it leaves out 'short'", verdicts({"polite": "pass"}))  # asked again: still left out
    result = pytester.runpytest("suites", *stub_args(stub_env), "--judge-model=openai/stub", "-rA")
    result.stdout.fnmatch_lines(["*error: judge openai/stub left this check out of its answer*"])
    record = results_of(pytester)["j"]
    assert errored(record), "left out of ISR and CSR, counted as an error"
    checks = {c["check"]: c for c in record["checks"]}
    assert checks["polite"]["passed"] is True
    assert checks["short"]["error"] == "judge openai/stub left this check out of its answer", checks["short"]
    assert len(record["judge_calls"]) == 2 and stub_env.calls == 3, "asked for it once more, both paid calls kept"
    row = dict(zip(COLUMNS, core_tables("demo", [record])[0].rows[0]))
    assert row["errors"] == 1 and row["ISR"] == "-", row


def test_a_dialogue_whose_model_fails_at_turn_two_keeps_turn_one_paid_for(pytester, stub_env):
    from pytest_ifbench.testing import Fault

    instance = {"id": "d", "protocol": "multi_turn", "turns": [
        {"user": "first turn", "checks": [{"id": "t1", "verifier": "ifbench.word_count", "params": {"min": 1}}]},
        {"user": "second turn", "checks": [{"id": "t2", "verifier": "ifbench.word_count", "params": {"min": 1}}]}]}
    write_suite(pytester.path, "suites/d.yaml", demo_suite(instance))
    stub_env.inject_faults(Fault(kind="status", status=400, message="refused"), match="second turn")
    result = pytester.runpytest("suites", *stub_args(stub_env))
    result.assert_outcomes(errors=1)
    record = results_of(pytester)["d"]
    assert record["status"] == "error" and record["error_kind"] == "model"
    assert record["paid_calls"] == 1 and record["tokens"]["prompt"] > 0, "turn 1 was paid for"


def test_a_dialogue_failing_at_turn_two_lists_turn_one_s_judge_call(pytester, stub_env):
    """Patience judges each turn before the next: turn 1's judge call is counted in the errored record's
    tokens and listed in its ``judge_calls`` (it was counted, and not listed)."""
    from pytest_ifbench.testing import Fault

    instance = {"id": "d", "protocol": "multi_turn", "protocol_options": {"patience": 2}, "turns": [
        {"user": "first turn", "checks": [{"id": "t1", "verifier": "ifbench.judge",
                                           "params": {"criterion": "The reply is polite."}}]},
        {"user": "second turn", "checks": [{"id": "t2", "verifier": "ifbench.word_count", "params": {"min": 1}}]}]}
    write_suite(pytester.path, "suites/d.yaml", demo_suite(instance))
    stub_env.add_rule("REQUIREMENTS", Reply(content='{"checks": [{"id": "turn1.t1", "reasoning": "ok", '
                                                    '"verdict": "pass"}]}'))
    stub_env.inject_faults(Fault(kind="status", status=400, message="refused"), match="second turn")
    result = pytester.runpytest("suites", *stub_args(stub_env), "--judge-model=openai/stub")
    result.assert_outcomes(errors=1)
    record = results_of(pytester)["d"]
    assert record["status"] == "error" and record["error_kind"] == "model"
    assert record["paid_calls"] == 2, "turn 1 and its judge were paid for"
    (judged,) = record["judge_calls"]
    assert judged["text"].startswith('{"checks"') and judged["prompt_tokens"] > 0


SPLIT_PROTOCOL = """
from pytest_ifbench import Completion, Episode, JudgeError, TurnRecord
from pytest_ifbench._protocols import SAMPLE


def pytest_ifbench_register_protocols(protocols):
    @protocols.register("split")
    async def split(instance, runtime):  # each sample pays one call; the judge fails on sample 0 only
        reply = Completion(text="a reply", raw_text="a reply", prompt_tokens=10, completion_tokens=2, cost=0.01)
        episode = Episode(instance=instance, turns=[TurnRecord(index=1, messages=[], completion=reply)])
        if SAMPLE.get() == 0:
            error = JudgeError("the judge failed on sample 0")
            error.episode = episode
            raise error
        return episode
"""


def test_a_sample_whose_judge_fails_keeps_the_other_samples_paid_for(pytester):
    pytester.makeconftest(SPLIT_PROTOCOL)
    instance = {"id": "s", "protocol": "split", "prompt": "hi", "generation": {"samples": 2},
                "checks": [{"id": "words", "verifier": "ifbench.word_count", "params": {"min": 1}}]}
    write_suite(pytester.path, "suites/s.yaml", demo_suite(instance))
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--ifbench-summary=")
    result.assert_outcomes(errors=1)
    record = results_of(pytester)["s"]
    assert record["status"] == "error" and record["error_kind"] == "judge"
    assert record["tokens"]["prompt"] == 20 and record["tokens"]["completion"] == 4, "both samples were paid for"
    assert abs(record["cost"] - 0.02) < 1e-9

def test_an_undecided_rubric_check_is_an_error_in_the_core_table():
    bonus = {"check": "b1", "kind": "bonus", "points": 1, "scored": True, "passed": False,
             "error": "judge j left this criterion out of its answer"}
    record = {"status": "failed", "checks": [bonus, {**bonus, "check": "b2", "passed": True, "error": None}]}
    row = dict(zip(COLUMNS, core_tables("agentif", [record])[0].rows[0]))
    assert (row["errors"], row["ISR"], row["score"]) == (1, "-", "-")  # was: errors 0, score 0.0 %


def test_not_applicable_for_a_check_without_a_condition_is_an_error_on_that_check(stub_env):
    params = REGISTRY.get("manyih.if_judge").validate(
        {"prompt": "Is it polite? {response}", "condition": "", "compat": "paper"})
    from pytest_ifbench._types import CheckSpec, JudgeOmission

    check = CheckSpec(id="p", verifier="manyih.if_judge", params=params)
    stub_env.add_rule("", answering({"p": "not_applicable"}))
    out, _ = judge(stub_env, [check])
    assert isinstance(out["p"], JudgeOmission) and "has no condition" in out["p"].reason


def test_the_summary_says_what_was_scored_when_re_scoring():
    def config(**options):
        return SimpleNamespace(getoption=lambda name, default=None: options.get(name, default))

    records = [{"model": "local/smollm2"}]
    assert scored_what(config(), records) == "model: `local/smollm2`"
    text = scored_what(config(ifbench_recorded_trajectories=["runs/traj"]), records)
    assert "recorded agent trajectories (`traj`)" in text and "smollm2" not in text
    assert "pre-recorded responses (`r.jsonl`)" in scored_what(config(ifbench_responses="r.jsonl"), records)


def test_a_trajectory_re_score_does_not_name_a_responses_file_the_user_never_gave(tmp_path):
    """``ifbench score --trajectories`` alone passes pytest an empty responses file of its own: the summary
    said "scored: pre-recorded responses (`no-responses.jsonl`) and recorded agent trajectories"."""
    empty = tmp_path / "no-responses.jsonl"
    empty.write_text("")
    options = {"ifbench_responses": str(empty), "ifbench_recorded_trajectories": ["runs/traj"]}
    config = SimpleNamespace(getoption=lambda name, default=None: options.get(name, default))
    assert scored_what(config, [{"model": "x"}]) == ("scored: recorded agent trajectories (`traj`), re-scored "
                                                     "without calling the model under test")


def _one_failed_one_undecided(pytester, stub_env) -> None:
    instance = {"id": "j", "prompt": "hi", "checks": [
        {"id": "polite", "verifier": "ifbench.judge", "params": {"criterion": "is polite"}},
        {"id": "short", "verifier": "ifbench.judge", "params": {"criterion": "is short"}},
        {"id": "upper", "verifier": "ifbench.case", "params": {"mode": "upper"}}]}
    write_suite(pytester.path, "suites/j.yaml", demo_suite(instance))
    stub_env.add_rule("REQUIREMENTS", verdicts({"polite": "pass"}))  # 'short' left out
    stub_env.add_rule("it leaves out 'short'", verdicts({"polite": "pass"}))  # asked again: still left out
    stub_env.add_rule("", Reply(content="hello there"))  # 'upper' fails


def test_a_check_nothing_decided_is_reported_as_an_error_where_pytest_shows_it(pytester, stub_env):
    """pytest's own lines said what the summary and the results do not: the check 'failed' (SUBFAILED, "check
    'short' failed", "2 failed") where the instance is an error, left out of ISR and CSR. Its subtest and its
    instance are errors now, and a check the model failed beside it stays a failure; under xdist too."""
    _one_failed_one_undecided(pytester, stub_env)
    for workers in ((), ("-n", "2")):
        result = pytester.runpytest("suites", *stub_args(stub_env), "--judge-model=openai/stub", "-rA", *workers)
        outcomes = result.parseoutcomes()
        assert (outcomes.get("errors"), outcomes.get("failed")) == (2, 1), (workers, outcomes)
        result.stdout.fnmatch_lines_random([
            "SUBERROR[[]short[]] suites/j.yaml::j - check 'short' could not be decided: is short",
            "SUBFAILED[[]upper[]] suites/j.yaml::j - check 'upper' failed*",
            "ERROR suites/j.yaml::j - 1 of 3 checks failed: upper; 1 of 3 checks could not*",
            "1 of 3 checks failed: upper; 1 of 3 checks could not be decided (an error: the instance is left out of "
            "ISR and CSR): short",
            "*error: judge openai/stub left this check out of its answer*",
        ])
        assert "check 'short' failed" not in result.stdout.str()
        assert errored(results_of(pytester)["j"])


def test_allure_shows_a_check_nothing_decided_as_broken_and_names_it_so(pytester, stub_env):
    _one_failed_one_undecided(pytester, stub_env)
    pytester.runpytest("suites", *stub_args(stub_env), "--judge-model=openai/stub",
                       f"--alluredir={pytester.path / 'al'}")
    [test] = [json.loads(f.read_text()) for f in (pytester.path / "al").glob("*-result.json")]
    steps = {step["name"].split(":")[0]: step["status"] for step in test["steps"]}
    assert (test["status"], steps["short"], steps["upper"]) == ("broken", "broken", "failed"), (test["status"], steps)
    assert test["statusDetails"]["message"] == ("[judge error] 1 of 3 checks failed: upper; "
                                                "1 of 3 checks could not be decided: short")
