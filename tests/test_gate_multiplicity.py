"""The gates test several changes at once: their false-alarm rate is alpha, not alpha per test.

``ifbench compare --fail-on-regression`` (and the in-run gates) fail a run when any benchmark's ISR, CSR or
score drops significantly. Each was tested at alpha alone, so a run of five unchanged benchmarks failed the
gate about a third of the time by chance. Their p-values are now adjusted together by Holm's method.
"""

from __future__ import annotations

import random

import pytest

from pytest_ifbench.reports import stats
from pytest_ifbench.reports.compare import Run, compare, gated, isr_delta, mean_delta
from pytest_ifbench.reports.compare_render import holm_note, outcome_line


def test_holm_multiplies_the_sorted_p_values_by_k_down_to_1_and_keeps_them_ordered():
    assert stats.holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert stats.holm([0.2]) == [0.2] and stats.holm([]) == []
    assert stats.holm([0.6, 0.9]) == [1.0, 1.0], "capped at 1"


def test_unchanged_benchmarks_fail_the_gate_at_most_alpha_of_the_time():
    """400 pairs of runs of ten benchmarks whose instances pass at random, alike in both runs: tested one by
    one at 0.05, one pair in eight had a 'significant regression' (49 of 400); adjusted, at most one in 40 (a
    drop is one side of a two-sided test at 0.05)."""
    rng = random.Random(7)
    alone = together = 0
    for _ in range(400):
        tests = []
        for benchmark in range(10):
            base = [rng.random() < 0.5 for _ in range(40)]
            new = [rng.random() < 0.5 for _ in range(40)]
            tests.append((benchmark, isr_delta(base, new)))
        alone += any(delta.regression(0.05) for _, delta in tests)
        together += bool(gated(tests, 0.05))
    assert alone / 400 > 0.1, alone
    assert together / 400 <= 0.025, together


def _run(name: str, outcomes: dict[str, list[bool]]) -> Run:
    records = {}
    for benchmark, passed in outcomes.items():
        for i, ok in enumerate(passed):
            nodeid = f"suites/{benchmark}.yaml::q{i:02d}"
            records[nodeid] = {"nodeid": nodeid, "benchmark": benchmark, "status": "passed" if ok else "failed",
                               "checks": [{"check": "c", "verifier": "ifbench.case", "scored": True, "passed": ok}]}
    return Run(name=name, meta={"format": 1}, records=records)


def test_one_drop_significant_alone_does_not_fail_a_gate_of_two_tests_and_the_verdict_says_why():
    """Six of twenty instances of one benchmark flipped (exact McNemar p = 0.031 for ISR, the same for CSR);
    the other benchmark did not move, so its two tests could not reach alpha and are left out. Alone that
    failed the gate; over the two tests that could, it is p 0.062."""
    base = _run("base.json", {"a": [True] * 20, "b": [True] * 20})
    new = _run("new.json", {"a": [False] * 6 + [True] * 14, "b": [True] * 20})
    comparison = compare(base, new)
    assert [d.p for g in comparison.groups if g.benchmark == "a" for d in g.deltas] == [pytest.approx(2 / 64)] * 2
    assert comparison.regressions() == []
    assert outcome_line(comparison) == (
        "no significant regression at alpha 0.05 (Holm over 2 tests) (alone, a ISR -30.0 pts ±10.5 [-52.0, -8.0] "
        "(p 0.031, adjusted 0.062), a CSR -30.0 pts ±10.2 [-50.0, -10.0] (p 0.031, adjusted 0.062): not once the "
        "gate's 2 tests are taken together)")
    eight = _run("new.json", {"a": [False] * 8 + [True] * 12, "b": [True] * 20})
    drops = compare(base, eight).regressions()
    assert [(t.group.benchmark, t.delta.metric, round(t.adjusted, 4)) for t in drops] == [
        ("a", "ISR", 0.0156), ("a", "CSR", 0.0156)], "eight flips: p 0.0078 each, 0.016 adjusted: a drop"


def test_a_test_that_cannot_reach_alpha_does_not_weaken_the_others():
    """Nine of ten moved instances went pass -> fail (p 0.021 for ISR and CSR); the rubric score of the one
    scored instance moved too, and over one instance no outcome is significant (least p 1.0). Counted, it
    made Holm over 3 tests (0.064: no regression); left out, over 2 (0.043: the gate fails)."""
    base, new = [True] * 9 + [False] + [True] * 10, [False] * 9 + [True] + [True] * 10
    tests = [("a", isr_delta(base, new)),
             ("a", mean_delta("CSR", [float(b) for b in base], [float(n) for n in new])),
             ("a", mean_delta("score", [0.8], [0.2]))]
    assert [round(d.p, 4) for _, d in tests] == [0.0215, 0.0215, 1.0]
    assert [d.least_p for _, d in tests] == [2 / 2 ** 10, 2 / 2 ** 10, 1.0]
    assert [(t.delta.metric, round(t.adjusted, 3)) for t in gated(tests, 0.05)] == [("ISR", 0.043), ("CSR", 0.043)]
    assert holm_note(tests, 0.05) == " (Holm over 2 tests; 1 left out: too few instances changed to reach alpha)"
    assert holm_note(tests[:2], 0.05) == " (Holm over 2 tests)"
    unchanged = [("b", isr_delta([True] * 10, [True] * 10))]
    assert holm_note(unchanged, 0.05) == "" and gated(unchanged, 0.05) == []
