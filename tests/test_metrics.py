"""Metrics from result records: ISR, CSR, rubric score, judge panel, breakdowns."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_ifbench.reports.metrics import (
    COLUMNS,
    INTERVAL_NOTE,
    PANEL_NOTE,
    Aggregate,
    MetricTable,
    core_tables,
    instance_passed_share,
    render_table,
    rubric_score,
    scored_checks,
)


def chk(passed: bool, **extra: Any) -> dict[str, Any]:
    return {"passed": passed, "scored": True, "kind": "check", "points": 1.0, **extra}


def rec(*checks: dict[str, Any], status: str | None = None, **extra: Any) -> dict[str, Any]:
    if status is None:
        status = "passed" if all(c["passed"] for c in checks if c.get("scored", True)) else "failed"
    return {"status": status, "checks": list(checks), "tokens": {"prompt": 0, "completion": 0}, "cost": None,
            **extra}


def err(**extra: Any) -> dict[str, Any]:
    return {"status": "error", "error": "boom", "checks": [], "tokens": {"prompt": 0, "completion": 0},
            "cost": None, **extra}


def row_of(table: MetricTable, label: str) -> dict[str, Any]:
    rows = [r for r in table.rows if r[0] == label]
    assert len(rows) == 1, (label, table.rows)
    return dict(zip(table.columns, rows[0]))


# --------------------------------------------------------------------------
# per-instance numbers
# --------------------------------------------------------------------------


def test_instance_passed_share():
    assert instance_passed_share(rec(chk(True), chk(True))) == (True, 1.0)
    assert instance_passed_share(rec(chk(True), chk(False), chk(True), chk(False))) == (False, 0.5)
    assert instance_passed_share(rec(chk(False))) == (False, 0.0)


def test_unscored_checks_are_ignored():
    record = rec(chk(True), chk(False, scored=False), chk(True), chk(False, scored=False))
    assert [c["passed"] for c in scored_checks(record)] == [True, True]
    assert instance_passed_share(record) == (True, 1.0)
    assert instance_passed_share(rec(chk(True, scored=False), chk(False, scored=False))) is None


def test_missing_scored_flag_counts_as_scored():
    assert instance_passed_share({"checks": [{"passed": True}, {"passed": False}]}) == (False, 0.5)


def test_instance_share_as_one_judge_saw_it():
    votes = {"judges": [{"judge": "j1", "passed": True}, {"judge": "j2", "passed": False}]}
    record = rec(chk(False, verdict={"passed": False, "details": votes}), chk(True))
    assert instance_passed_share(record) == (False, 0.5)
    assert instance_passed_share(record, "j1") == (True, 1.0)
    assert instance_passed_share(record, "j2") == (False, 0.5)
    # a judge that did not vote on a check falls back to the panel's result
    assert instance_passed_share(record, "j3") == (False, 0.5)


# --------------------------------------------------------------------------
# rubric score s_i = max(0, S+ - S-) / S_max
# --------------------------------------------------------------------------


def bonus(passed: bool, points: float = 1.0) -> dict[str, Any]:
    return chk(passed, kind="bonus", points=points)


def penalty(passed: bool, points: float = 1.0) -> dict[str, Any]:
    return chk(passed, kind="penalty", points=points)


@pytest.mark.parametrize(
    ("checks", "expected"),
    [
        ([bonus(True, 2), bonus(True, 1)], 1.0),
        ([bonus(True, 2), bonus(False, 1)], 2 / 3),
        ([bonus(True, 2), bonus(False, 1), penalty(False, 1)], 1 / 3),  # (2 - 1) / 3
        ([bonus(True, 2), bonus(True, 1), penalty(True, 5)], 1.0),  # a passed penalty item costs nothing
        ([bonus(True, 1), bonus(False, 3), penalty(False, 2)], 0.0),  # max(0, 1 - 2) / 4: clamped at zero
        ([bonus(False, 1), penalty(False, 3)], 0.0),
        ([bonus(True, 0.5), bonus(True, 1.5), penalty(False, 0.5)], 0.75),  # (2 - 0.5) / 2
        ([bonus(True, 2), bonus(False, 2), chk(False), chk(True)], 0.5),  # plain checks do not count
    ],
)
def test_rubric_score(checks, expected):
    assert rubric_score(rec(*checks)) == pytest.approx(expected)


def test_rubric_score_ignores_unscored_items():
    assert rubric_score(rec(bonus(True, 1), bonus(False, 3, ) | {"scored": False})) == 1.0
    assert rubric_score(rec(bonus(True, 2), penalty(False, 2) | {"scored": False})) == 1.0


def test_rubric_score_absent_without_bonus_items():
    assert rubric_score(rec(chk(True), chk(False))) is None
    assert rubric_score(rec(penalty(False, 2))) is None  # no S_max to divide by


def test_rubric_default_points():
    record = {"checks": [{"kind": "bonus", "passed": True}, {"kind": "bonus", "passed": False},
                         {"kind": "penalty", "passed": False}]}
    assert rubric_score(record) == 0.0  # max(0, 1 - 1) / 2


# --------------------------------------------------------------------------
# core tables: ISR / CSR / errors / score
# --------------------------------------------------------------------------


RECORDS = [
    # ISR: passed, failed, failed, passed -> 2/4 ; CSR: 1, 1/2, 0, 1 -> 62.5%
    rec(chk(True), chk(True), chk(False, scored=False), category="format", tier=1),
    rec(chk(True), chk(False), category="format", tier=2),
    rec(chk(False), chk(False), chk(False), category="code", tier=2),
    rec(chk(True), category="code", tier=1),
    err(category="code", tier=1),
]


def test_core_tables_overall_row():
    (table,) = core_tables("demo", RECORDS)
    assert table.title == "demo"
    assert table.columns == COLUMNS
    assert table.rows[0] == ("all", 5, 1, 0, "50.0% ±25.0 [15.0, 85.0]", "62.5% ±23.9 [0.0, 100.0]", "-", "0/0", "-")


def test_isr_csr_hand_computed_three_instances():
    records = [rec(chk(True), chk(False), chk(True)), rec(chk(True)), rec(chk(False), chk(True))]
    # ISR = 1/3 ; CSR = mean(2/3, 1, 1/2) = 13/18 = 72.2%
    assert core_tables("x", records)[0].rows[0][:6] == (
        "all", 3, 0, 0, "33.3% ±27.2 [6.1, 79.2]", "72.2% ±14.7 [9.0, 100.0]")


def test_errored_records_counted_but_excluded():
    records = [rec(chk(True)), err(), err()]
    row = dict(zip(COLUMNS, core_tables("x", records)[0].rows[0]))
    assert (row["items"], row["errors"], row["ISR"], row["CSR"]) == (
        3, 2, "100.0% ±0.0 [20.7, 100.0]", "100.0% ±inf [0.0, 100.0]")
    only_errors = dict(zip(COLUMNS, core_tables("x", [err()])[0].rows[0]))
    assert (only_errors["items"], only_errors["errors"], only_errors["ISR"], only_errors["CSR"]) == (1, 1, "-", "-")


def test_errored_record_with_checks_is_still_excluded():
    broken = err()
    broken["checks"] = [chk(False)]
    row = dict(zip(COLUMNS, core_tables("x", [rec(chk(True)), broken])[0].rows[0]))
    assert (row["errors"], row["ISR"], row["CSR"]) == (1, "100.0% ±0.0 [20.7, 100.0]", "100.0% ±inf [0.0, 100.0]")


def test_records_with_only_unscored_checks_are_not_rated():
    records = [rec(chk(True)), rec(chk(False, scored=False))]
    row = dict(zip(COLUMNS, core_tables("x", records)[0].rows[0]))
    assert (row["items"], row["errors"], row["ISR"], row["CSR"]) == (
        2, 0, "100.0% ±0.0 [20.7, 100.0]", "100.0% ±inf [0.0, 100.0]")


def test_score_column_averages_rubric_instances_only():
    records = [rec(bonus(True, 2), bonus(False, 1), penalty(False, 1)),  # 1/3
               rec(bonus(True, 1), penalty(False, 3)),  # 0
               rec(chk(True))]  # no rubric
    row = dict(zip(COLUMNS, core_tables("x", records)[0].rows[0]))
    assert row["score"] == "16.7% ±16.7 [0.0, 100.0]"  # mean(1/3, 0), t(1) interval


def test_tokens_and_cost():
    records = [rec(chk(True)) | {"tokens": {"prompt": 10, "completion": 3}, "cost": 0.5},
               rec(chk(True)) | {"tokens": {"prompt": 5, "completion": 2}, "cost": None},
               err() | {"tokens": {"prompt": 1, "completion": 0}, "cost": 0.25}]
    row = dict(zip(COLUMNS, core_tables("x", records)[0].rows[0]))
    assert row["tokens in/out"] == "16/5" and row["cost"] == "$0.7500"


def test_aggregate_row_directly():
    agg = Aggregate()
    for record in RECORDS:
        agg.add(record)
    assert (agg.n, agg.errors, agg.isr, agg.csr) == (5, 1, [True, False, False, True], [1.0, 0.5, 0.0, 1.0])


# --------------------------------------------------------------------------
# breakdowns
# --------------------------------------------------------------------------


def test_breakdown_rows_by_category_and_tier():
    (table,) = core_tables("demo", RECORDS)
    labels = [r[0] for r in table.rows]
    assert labels == ["all", "category=code", "category=format", "tier=1", "tier=2"]
    code = row_of(table, "category=code")
    assert (code["items"], code["errors"], code["ISR"], code["CSR"]) == (
        3, 1, "50.0% ±35.4 [9.5, 90.5]", "50.0% ±50.0 [0.0, 100.0]")
    fmt = row_of(table, "category=format")
    assert (fmt["items"], fmt["errors"], fmt["ISR"], fmt["CSR"]) == (
        2, 0, "50.0% ±35.4 [9.5, 90.5]", "75.0% ±25.0 [0.0, 100.0]")
    tier1 = row_of(table, "tier=1")
    assert (tier1["items"], tier1["errors"], tier1["ISR"], tier1["CSR"]) == (
        3, 1, "100.0% ±0.0 [34.2, 100.0]", "100.0% ±0.0 [34.2, 100.0]")
    tier2 = row_of(table, "tier=2")
    assert (tier2["items"], tier2["errors"], tier2["ISR"], tier2["CSR"]) == (
        2, 0, "0.0% ±0.0 [0.0, 65.8]", "25.0% ±25.0 [0.0, 100.0]")


def test_single_valued_dimension_has_no_breakdown():
    records = [rec(chk(True), category="a", protocol="single_turn"), rec(chk(False), category="a",
                                                                          protocol="single_turn")]
    assert [r[0] for r in core_tables("x", records)[0].rows] == ["all"]


def test_partially_present_dimension_is_broken_down():
    records = [rec(chk(True), scaffold="cli"), rec(chk(False))]
    (table,) = core_tables("x", records)
    assert [r[0] for r in table.rows] == ["all", "scaffold=cli"]
    assert row_of(table, "scaffold=cli")["ISR"] == "100.0% ±0.0 [20.7, 100.0]"


def test_tier_rows_sort_numerically():
    records = [rec(chk(True), tier=t) for t in (10, 2, 1)]
    assert [r[0] for r in core_tables("x", records)[0].rows] == ["all", "tier=1", "tier=2", "tier=10"]


# --------------------------------------------------------------------------
# judge panel
# --------------------------------------------------------------------------


def judged(*votes: bool, names: tuple[str, ...] = ("j1", "j2", "j3")) -> dict[str, Any]:
    details = {"judges": [{"judge": n, "passed": v, "reasoning": "r"} for n, v in zip(names, votes)]}
    mean = sum(votes) / len(votes)
    return chk(mean > 0.5, verdict={"passed": mean > 0.5, "evidence": "", "details": details})


def test_panel_table_mean_and_std():
    records = [
        # j1: [T, T] ; j2: [T, F]
        rec(chk(True), judged(True, False, names=("j1", "j2"))),
        # j1: [F, T] ; j2: [F, T]
        rec(chk(False), judged(True, True, names=("j1", "j2"))),
        err(),
    ]
    tables = core_tables("demo", records)
    assert len(tables) == 2
    panel = tables[1]
    assert panel.title == "demo: by judge (panel)"
    assert panel.columns == ("judge", "ISR", "CSR")
    # j1: ISR 1/2, CSR mean(1, 1/2) = 75% ; j2: ISR 0, CSR mean(1/2, 1/2) = 50%
    assert panel.rows == (
        ("j1", "50.0%", "75.0%"),
        ("j2", "0.0%", "50.0%"),
        ("across judges", "25.0% ±25.0 [0.0, 100.0]", "62.5% ±12.5 [0.0, 100.0]"),
        ("mean ± std", "25.0% ± 25.0", "62.5% ± 12.5"),
    )
    assert panel.notes == ("deterministic checks count the same for every judge", PANEL_NOTE)
    assert tables[0].notes == (INTERVAL_NOTE, "1 instance errored and is left out of the rates; had it been scored, "
                               "ISR would lie between 0.0% (each failed) and 33.3% (each passed), CSR between 33.3% "
                               "and 66.7% (its undecided checks all failed, or all passed)")


def test_panel_with_three_judges():
    records = [rec(judged(True, True, False)), rec(judged(True, False, False)), rec(judged(True, True, True))]
    panel = core_tables("x", records)[1]
    # per judge ISR = CSR (one check each): j1 3/3, j2 2/3, j3 1/3 -> mean 66.7, pstdev 27.2
    assert panel.rows == (
        ("j1", "100.0%", "100.0%"),
        ("j2", "66.7%", "66.7%"),
        ("j3", "33.3%", "33.3%"),
        ("across judges", "66.7% ±19.2 [0.0, 100.0]", "66.7% ±19.2 [0.0, 100.0]"),
        ("mean ± std", "66.7% ± 27.2", "66.7% ± 27.2"),
    )


def test_no_panel_table_for_a_single_judge():
    records = [rec(judged(True, names=("solo",))), rec(judged(False, names=("solo",)))]
    assert len(core_tables("x", records)) == 1


def test_unscored_judged_checks_do_not_add_judges():
    check = judged(True, False, names=("j1", "j2")) | {"scored": False}
    assert len(core_tables("x", [rec(chk(True), check)])) == 1


# --------------------------------------------------------------------------
# rendering
# --------------------------------------------------------------------------


def test_render_table_and_json():
    table = MetricTable(title="t", columns=("", "n"), rows=(("all", 10), ("x", 2)), notes=("hi",))
    assert render_table(table) == ["t", "        n", "  ---  --", "  all  10", "  x     2", "  note: hi"]
    assert table.to_json() == {"title": "t", "columns": ["", "n"], "rows": [["all", 10], ["x", 2]],
                               "notes": ["hi"]}


CONFTEST_WITH_ESTIMATES = '''
from pytest_ifbench import Benchmark, MetricTable, stats


def tables(records):
    checks = [float(len(r.get("checks") or [])) for r in records]
    estimate = stats.mean(checks, bounds=None)
    return [MetricTable(title="demo: checks", columns=("", "checks"), rows=(("all", estimate.plain(2)),),
                        estimates={"mean checks": estimate})]


BENCHMARK = Benchmark(name="demo", metrics=tables)
'''


def test_the_results_file_carries_the_benchmarks_headline_estimates(pytester):
    """The results file's ``metrics`` entry: the core's ISR/CSR and every estimate a benchmark's tables carry."""
    import json

    from tests._support import demo_suite, write_suite

    pytester.makeconftest(CONFTEST_WITH_ESTIMATES)
    write_suite(pytester.path, "suites/demo.yaml", demo_suite())
    replies = pytester.path / "replies.jsonl"
    replies.write_text('{"id": "hello-lower", "response": "hello there"}\n'
                       '{"id": "shout", "response": "one two three four"}\n', encoding="utf-8")
    result = pytester.runpytest_subprocess("suites", f"--ifbench-responses={replies}", "-p", "no:cacheprovider",
                                           "--ifbench-summary=", "--ifbench-results=out.json")
    assert result.ret == 1, result.stdout.str()  # shout fails
    metrics = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))["metrics"]["demo"]
    assert metrics["isr"]["value"] == 0.5 and metrics["isr"]["method"] == "wilson"
    checks = metrics["headline"]["mean checks"]  # 2 and 1 checks: 1.5 ±0.5, t(1)
    assert checks == {"value": 1.5, "se": 0.5, "ci95": [-4.853102, 7.853102], "n": 2, "method": "t"}
    result.stdout.fnmatch_lines(["*all*1.50 ±0.50 [[]-4.85, 7.85]*"])  # the same estimate in the table
