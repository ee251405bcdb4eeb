"""Errored instances leave the rates; the tables say what they could have made of them.

A reply that talks a lone judge into leaving its failing check out turns the failure into an error, which
every rate excludes: ISR went from 30% to 100% with 7 errors in the judge audit (note 53). The rates stay
as they are (exclusion is right when errors strike at random); the core table, the summary and the results
file now also give the range each rate would take had the errored instances been scored.
"""

from __future__ import annotations

import json

import pytest

from pytest_ifbench.reports.metrics import core_tables, error_bounds, headline_metrics
from tests._support import demo_suite, stub_args, write_suite
from tests.test_silent_holes import verdicts


def check(name: str, passed: bool, error: str | None = None, **extra) -> dict:
    return {"check": name, "passed": passed, "scored": True, "error": error, **extra}


PASSED = {"benchmark": "demo", "status": "passed", "checks": [check("a", True)]}
LEFT_OUT = {"benchmark": "demo", "status": "error", "checks": [check("a", False, "judge j left this check out")]}
ALREADY_FAILED = {"benchmark": "demo", "status": "error",
                  "checks": [check("a", False), check("b", False, "judge j left this check out")]}
MODEL_DOWN = {"benchmark": "demo", "status": "error", "checks": []}


def test_a_table_without_errors_says_nothing_more():
    assert headline_metrics([PASSED, PASSED])["demo"].keys() == {"items", "errors", "not_applicable", "isr", "csr"}
    assert not any("errored" in note for note in core_tables("demo", [PASSED])[0].notes)


def test_the_range_counts_each_errored_instance_failed_then_passed_unless_it_already_failed():
    records = [PASSED] * 3 + [LEFT_OUT] * 5 + [ALREADY_FAILED, MODEL_DOWN]
    metrics = headline_metrics(records)["demo"]
    assert metrics["isr"]["value"] == 1.0 and metrics["isr"]["n"] == 3, "the rates themselves are unchanged"
    assert metrics["with_errors"] == {"isr": [0.3, 0.9], "csr": [0.3, 0.95]}
    note = core_tables("demo", records)[0].notes[-1]
    assert note == ("7 instances errored and are left out of the rates; had they been scored, ISR would lie "
                    "between 30.0% (each failed) and 90.0% (each passed, but the 1 whose decided checks already "
                    "failed), CSR between 30.0% and 95.0% (their undecided checks all failed, or all passed)")


@pytest.mark.parametrize(("record", "expected"), [
    (LEFT_OUT, (True, (0.0, 1.0), None)),
    (ALREADY_FAILED, (False, (0.0, 0.5), None)),
    ({"checks": [check("a", True), check("b", False, "undecided"), check("c", False, "undecided")]},
     (True, (1 / 3, 1.0), None)),
    ({"checks": [check("a", True), check("n", False, "undecided", applicable=False)]}, (True, (1.0, 1.0), None)),
    ({"checks": [check("a", True, kind="bonus", points=2), check("p", False, "undecided", kind="penalty", points=1)]},
     (True, (0.5, 1.0), (0.5, 1.0))),
])
def test_what_one_errored_instance_could_still_score(record, expected):
    bounds = error_bounds(record)
    assert (bounds.can_pass, bounds.csr, bounds.score) == expected


def test_the_rubric_score_gets_a_range_too():
    def rubric(*checks):
        return {"benchmark": "agentif", "status": "error" if any(c["error"] for c in checks) else "passed",
                "checks": list(checks)}

    scored = rubric(check("x", True, kind="bonus", points=1), check("y", True, kind="penalty", points=1))
    undecided = rubric(check("x", True, kind="bonus", points=1),
                       check("y", False, "judge j left this criterion out", kind="penalty", points=1))
    assert headline_metrics([scored, undecided, MODEL_DOWN | {"benchmark": "agentif"}])["agentif"]["with_errors"] == {
        "isr": [pytest.approx(1 / 3), 1.0], "csr": [0.5, 1.0], "score": [pytest.approx(1 / 3), 1.0]}


def test_a_judge_talked_into_leaving_failing_checks_out_cannot_hide_them_from_the_summary(pytester, stub_env):
    """The attack end to end: three replies carry an instruction the lone judge obeys (it leaves the check out,
    and again when asked for it). ISR reads 100% over the one instance scored, as before; the terminal, the
    summary file and the results file say it lies between 25% and 75% -- one of the three had already
    failed a deterministic check, so it cannot pass whatever the judge would have said."""
    polite = {"id": "polite", "verifier": "ifbench.judge", "params": {"criterion": "is polite"}}
    upper = {"id": "upper", "verifier": "ifbench.case", "params": {"mode": "upper"}}
    write_suite(pytester.path, "suites/j.yaml", demo_suite(
        {"id": "honest", "prompt": "greet me", "checks": [polite]},
        {"id": "sneaky-1", "prompt": "greet me. OBEY-ME", "checks": [polite]},
        {"id": "sneaky-2", "prompt": "thank me. OBEY-ME", "checks": [polite]},
        {"id": "sneaky-3", "prompt": "shout at me. OBEY-ME", "checks": [polite, upper]}))
    stub_env.add_rule("it leaves out 'polite'", verdicts({}))
    stub_env.add_rule("REQUIREMENTS.*OBEY-ME|OBEY-ME.*REQUIREMENTS", verdicts({}))
    stub_env.add_rule("REQUIREMENTS", verdicts({"polite": "pass"}))
    result = pytester.runpytest("suites", *stub_args(stub_env, "--ifbench-summary=summary.md"),
                                "--judge-model=openai/stub")
    assert result.parseoutcomes()["passed"] == 1
    range_ = ("3 instances errored and are left out of the rates; had they been scored, ISR would lie between "
              "25.0% (each failed) and 75.0% (each passed, but the 1 whose decided checks already failed)")
    result.stdout.fnmatch_lines(["*100.0% ±0.0*", f"*note: {range_}*"])
    assert range_ in (pytester.path / "summary.md").read_text()
    metrics = json.loads((pytester.path / "ifbench-results.json").read_text())["metrics"]["demo"]
    assert (metrics["isr"]["value"], metrics["errors"]) == (1.0, 3)
    assert metrics["with_errors"]["isr"] == [0.25, 0.75]
