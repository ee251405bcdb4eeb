"""EvolIF metrics on hand-computed outcome sequences (paper §3.4 and appendix B)."""

from __future__ import annotations

import pytest

from pytest_ifbench.benchmarks.evolif import metrics as M
from pytest_ifbench.benchmarks.evolif import plugin

VERIFIERS = ["evolif.format", "evolif.length", "evolif.case", "evolif.emotion"]


def record(name: str, turns: list[tuple[int, int]], *, ended: str = "completed", patience: int | None = 3,
           status: str | None = None, model: str = "m") -> dict:
    """A result record whose turn t has turns[t-1] = (satisfied, constraints)."""
    checks = []
    for index, (satisfied, total) in enumerate(turns, start=1):
        for j in range(total):
            checks.append({"id": f"turn{index}.c{j}", "verifier": VERIFIERS[j % len(VERIFIERS)],
                           "passed": j < satisfied, "scored": True, "turn_ran": index, "metadata": {}})
    return {
        "nodeid": f"s.yaml::{name}", "instance": name, "benchmark": "evolif", "model": model,
        "status": status or ("passed" if all(s == n for s, n in turns) else "failed"), "ended": ended,
        "turns": [{"index": i} for i in range(1, len(turns) + 1)], "checks": checks,
        "metadata": {} if patience is None else {"patience": patience},
    }


# A: S F F S F F F, exhausted at P=3 | B: S S S S | C: F S F S (ends on a success) | D: S S F (only the last fails)
A = [(2, 2), (1, 2), (0, 1), (3, 3), (1, 2), (0, 2), (0, 2)]
B = [(1, 1)] * 4
C = [(0, 1), (1, 1), (1, 2), (2, 2)]
D = [(1, 1), (1, 1), (0, 1)]


def records(patience: int | None = 3) -> list[dict]:
    return [record("A", A, ended="patience_exhausted", patience=patience), record("B", B, patience=patience),
            record("C", C, patience=patience), record("D", D, patience=patience)]


def test_per_dialogue_scores():
    scores = {d.name: M.score_dialogue(d.fractions, d.successes) for d in M.dialogues(records())}
    a = scores["A"]
    assert (a.length, a.accuracy, a.successes, a.lss) == (7, 3.0, 2, 1)
    assert (a.recovered, a.recover_chances, a.rec) == (1, 4, 0.25)
    assert a.csr == pytest.approx(3 / 7) and a.isr == pytest.approx(2 / 7)
    b = scores["B"]
    assert (b.length, b.accuracy, b.successes, b.lss, b.rec) == (4, 4.0, 4, 4, None)


def test_rec_denominator_when_the_dialogue_ends_on_a_success():
    # Eq. 4 counts every failure that has a next turn: C fails at turns 1 and 3, both followed
    # by a success, so REC = 2/2 (a "failures - 1" denominator would give 2/1).
    c = M.score_dialogue([0, 1, 0.5, 1], [False, True, False, True])
    assert (c.recovered, c.recover_chances, c.rec) == (2, 2, 1.0)
    # Ending on a failure: the last failure has no next turn and is not counted.
    assert M.recovery([False, True, False]) == (1, 1)


def test_rec_zero_over_zero_is_left_out_of_the_average():
    assert M.score_dialogue([1, 1, 0], [True, True, False]).rec is None  # D: only the last turn failed
    assert M.score_dialogue([1], [True]).rec is None  # no failure at all
    summary = M.summarise([M.score_dialogue(d.fractions, d.successes) for d in M.dialogues(records())])
    assert summary.rec == pytest.approx((0.25 + 1.0) / 2) and summary.rec_dialogues == 2
    only_perfect = M.summarise([M.score_dialogue([1, 1], [True, True])])
    assert only_perfect.rec is None and only_perfect.rec_dialogues == 0


def test_aggregate_metrics_by_the_papers_formulas():
    s = M.summarise([M.score_dialogue(d.fractions, d.successes) for d in M.dialogues(records())])
    assert s.dialogues == 4
    assert s.edr_len == pytest.approx((7 + 4 + 4 + 3) / 4)
    assert s.edr_acc == pytest.approx((3.0 + 4 + 2.5 + 2) / 4)
    assert s.edr_succ == pytest.approx((2 + 4 + 2 + 2) / 4)
    assert s.edr_lss == pytest.approx((1 + 4 + 1 + 2) / 4)
    assert s.csr == pytest.approx(11.5 / 18)  # pooled over all 18 turns (appendix B.1)
    assert s.isr == pytest.approx(10 / 18)
    assert s.sta == pytest.approx((2 / 7 + 1 + 2 / 4 + 2 / 3) / 4)  # macro average of per-dialogue ISR


def test_headline_intervals_take_the_dialogue_as_the_unit():
    (headline, interval) = M.tables(records())[0].rows
    assert headline[0] == "all" and interval[:2] == ("±SE [95% CI]", "4")
    # EDR_*: t over the 4 dialogues, never below 0; turn ISR 10/18 with the cluster-robust SE over dialogues:
    # sqrt(4/3 * sum_d (succ_d - 10/18 * N_d)^2) / 18 = 0.168 (16.8 points; 11.7 if the 18 turns were independent)
    assert interval[2:] == ("4.50 ±0.87 [1.75, 7.25]", "2.88 ±0.43 [1.52, 4.23]", "2.50 ±0.50 [0.91, 4.09]",
                            "2.00 ±0.71 [0.00, 4.25]", "63.9% ±13.2 [21.8, 100.0]", "55.6% ±16.8 [2.0, 100.0]",
                            "62.5% ±37.5 [0.0, 100.0]", "61.3% ±15.1 [13.4, 100.0]")
    assert M.INTERVAL_NOTE in M.tables(records())[0].notes


def test_longest_success_run_and_empty_turns():
    assert M.longest_success_run([True, True, False, True, True, True, False]) == 3
    assert M.longest_success_run([]) == 0
    dialogue = M.dialogue_from_record(record("E", [(0, 0), (1, 2)]))
    assert dialogue.fractions == [1.0, 0.5] and dialogue.successes == [True, False]


@pytest.mark.parametrize(("outcomes", "patience", "expected"), [
    ("SFFSFFF", 1, 2), ("SFFSFFF", 2, 3), ("SFFSFFF", 3, 7), ("SSSS", 1, 4), ("FSFS", 1, 1), ("FSFS", 2, 4),
    ("", 3, 0),
])
def test_turns_under_patience(outcomes, patience, expected):
    assert M.turns_under_patience([c == "S" for c in outcomes], patience) == expected


def test_patience_sweep_from_one_run():
    tables = {t.title: t for t in plugin.BENCHMARK.pytest_ifbench_metrics("evolif", records())}
    sweep = tables["evolif: endurance by patience (Table 3)"]
    rows = {row[0]: row for row in sweep.rows}
    assert list(rows) == ["P=1", "P=2", "P=3 (run)"]

    def values(row):
        return tuple(cell.split()[0] for cell in row[1:3])

    # P=1: A ends at turn 2 (1 + .5), B 4, C ends at turn 1 (0), D 2 -> EDR_acc 1.875
    assert values(rows["P=1"]) == ("2.50", "1.88")
    # P=2: A ends at turn 3 (1.5), B 4, C runs out (2.5), D 2 -> 2.5
    assert values(rows["P=2"]) == ("3.50", "2.50")
    assert values(rows["P=3 (run)"]) == ("4.50", "2.88")
    # every cell with its interval by dialogue: EDR_len = the mean of the 4 dialogues' lengths at P=1, t(3)
    lengths = [float(M.turns_under_patience(d.successes, 1)) for d in M.dialogues(records())]
    assert rows["P=1"][1] == M.stats.mean(lengths, bounds=(0.0, float("inf"))).plain(2) == "2.50 ±0.65 [0.45, 4.55]"
    assert all("±" in cell and "[" in cell for row in sweep.rows for cell in row[1:])
    assert "the dialogue is the unit" in sweep.notes[-1]


def test_patience_is_inferred_when_the_records_do_not_say():
    items = M.dialogues(records(patience=None))
    assert M.derivable_patience(items) == 3  # A ended after three failed turns
    assert M.run_patience(items) == 3
    completed = M.dialogues([record("B", B, patience=None)])
    assert M.derivable_patience(completed) is None


def test_sweep_stops_at_the_run_patience():
    recs = [record("X", [(0, 1), (0, 1)], ended="patience_exhausted", patience=2), record("B", B, patience=2)]
    sweep = next(t for t in M.tables(recs) if "patience" in t.title)
    assert [row[0] for row in sweep.rows] == ["P=1", "P=2 (run)"]
    assert any("cannot be derived" in note for note in sweep.notes)


def test_group_rates_and_survival():
    items = M.dialogues(records())
    rates = M.group_rates(items)
    # first constraint of each turn is format; format passes whenever satisfied >= 1
    assert rates["FMT"] == (sum(1 for turns in (A, B, C, D) for s, n in turns if n and s >= 1),
                            sum(1 for turns in (A, B, C, D) for s, n in turns if n))
    assert set(rates) == {"FMT", "LEN", "CS"}
    fmt = M.group_estimate(items, "FMT")
    assert fmt.value == pytest.approx(rates["FMT"][0] / rates["FMT"][1]) and fmt.n == 4 and fmt.method == "cluster"
    table7 = next(t for t in M.tables(records()) if "Table 7" in t.title)
    assert table7.columns[-1] == "±SE [95% CI]" and all("[" in row[-1] for row in table7.rows)
    survival = next(t for t in M.tables(records()) if "survival" in t.title)
    assert survival.rows[0][-1] == M.stats.proportion([True] * 4).pct()  # 4 of 4 running: Wilson, never bare
    assert M.survival([7, 4, 4, 3]) == [(1, 1.0), (2, 1.0), (3, 1.0), (4, 0.75), (5, 0.25), (6, 0.25), (7, 0.25)]
    assert M.survival([]) == []


def test_tables_render_and_skip_errors_and_other_benchmarks():
    from pytest_ifbench.reports.metrics import render_table

    assert plugin.BENCHMARK.pytest_ifbench_metrics("vericode", records()) is None
    errored = record("Z", [], status="error")
    tables = plugin.BENCHMARK.pytest_ifbench_metrics("evolif", records() + [errored])
    main = tables[0]
    assert main.rows[0] == ("all", 4, "4.50", "2.88", "2.50", "2.00", "63.89%", "55.56%", "62.50%", "61.31%")
    assert any("1 dialogue(s) errored" in n for n in main.notes)
    per_dialogue = tables[1]
    assert [r[0] for r in per_dialogue.rows] == ["A", "B", "C", "D"]
    assert per_dialogue.rows[0][-1] == "1/4" and per_dialogue.rows[1][-1] == "-"
    for table in tables:
        assert render_table(table)
    assert plugin.BENCHMARK.pytest_ifbench_metrics("evolif", [errored]) == []


def test_plots_are_pngs(tmp_path):
    recs = records() + [record("B2", B, model="other")]
    paths = plugin.BENCHMARK.pytest_ifbench_plots("evolif", recs, tmp_path / "plots")
    assert [p.name for p in paths] == ["evolif-survival.png", "evolif-groups.png"]
    for path in paths:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plugin.BENCHMARK.pytest_ifbench_plots("smoke", recs, tmp_path) is None


def test_an_exhausted_dialogue_shows_its_real_patience_even_with_stale_metadata():
    recs = [record("X", [(1, 1), (0, 1), (0, 1)], ended="patience_exhausted", patience=3)]
    items = M.dialogues(recs)
    assert M.dialogue_patience(items[0]) == 2 and M.run_patience(items) == 2
    assert M.tables(recs)[0].title.startswith("evolif: process metrics per turn (P=2;")
    from_options = record("Y", B, patience=None) | {"protocol_options": {"patience": 4, "subtests": "turn"}}
    assert M.dialogue_from_record(from_options).patience == 4


def test_a_dialogue_with_an_undecided_check_is_left_out_as_an_error_as_in_the_core():
    """A check whose verifier raised (or a judge left out) has no decision: the core's metrics leave its
    instance out and count it as an error; EvolIF scored the dialogue with the check as failed."""
    undecided = record("Z", [(1, 1), (0, 1)])
    undecided["checks"][-1]["error"] = "verifier evolif.length raised RuntimeError: boom"
    tables = plugin.BENCHMARK.pytest_ifbench_metrics("evolif", records() + [undecided])
    assert tables[0].rows[0] == ("all", 4, "4.50", "2.88", "2.50", "2.00", "63.89%", "55.56%", "62.50%", "61.31%")
    assert any("1 dialogue(s) errored" in n for n in tables[0].notes)
