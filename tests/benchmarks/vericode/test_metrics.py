"""Vibe Checker metrics: IF_instruction, IF_task, pass@1, FR_k, positions, categories, plots."""

from __future__ import annotations

import pytest

from pytest_ifbench.benchmarks.vericode import metrics as m
from pytest_ifbench.benchmarks.vericode import plugin


def record(task, k, protocol="single_turn", instructions=(), functional=True, status=None, testbed="bigvibe",
           categories=None):
    checks = [{"id": f"i{n}", "passed": passed, "scored": True, "category": (categories or {}).get(n, "style"),
               "metadata": {"role": "instruction", "position": n, "instruction": "style_3",
                            "category": (categories or {}).get(n, "style")}}
              for n, passed in enumerate(instructions, start=1)]
    checks.append({"id": "functional", "passed": functional, "scored": True, "metadata": {"role": "functional"}})
    return {"instance": f"{task}-k{k}-{protocol}", "benchmark": "vericode", "protocol": protocol,
            "status": status or ("passed" if functional and all(instructions) else "failed"),
            "metadata": {"task": task, "k": k, "testbed": testbed}, "checks": checks}


def rows(table):
    return {row[0]: dict(zip(table.columns, row)) for row in table.rows}


def test_functional_regression_formula():
    assert m.functional_regression(0.8, 0.6) == pytest.approx(0.25)
    assert m.functional_regression(0.5, 0.6) == pytest.approx(-0.2)  # improvement: negative regression
    assert m.functional_regression(0.0, 0.0) is None
    assert m.functional_regression(None, 0.5) is None


def test_fr_k_from_records():
    base = [record(f"t{n}", 0, functional=n < 4) for n in range(5)]  # S_0 = 4/5
    k2 = [record(f"t{n}", 2, instructions=(True, False), functional=n < 3) for n in range(5)]  # S_2 = 3/5
    table = m.main_table(base + k2, "x")
    got = rows(table)
    assert got["k=0 (original prompt)"]["pass@1"] == "80.0% ±17.9 [37.6, 96.4]"  # Wilson over 5
    assert got["single_turn k=2"]["pass@1"] == "60.0% ±21.9 [23.1, 88.2]"
    # (0.8 - 0.6) / 0.8, with the percentile bootstrap over the 5 tasks (each brings its k=0 and k=2 along)
    assert got["single_turn k=2"]["FR_k"] == "25.0% ±21.8 [0.0, 75.0]"
    assert any("FR_k (a ratio of two rates over the same tasks): percentile bootstrap" in n for n in table.notes)
    assert m.fr_estimate(base, k2) == m.fr_estimate(base, k2), "a fixed seed"


def test_fr_k_pairs_s0_with_the_tasks_present():
    base = [record("a", 0, functional=True), record("b", 0, functional=False)]
    only_a = [record("a", 1, instructions=(True,), functional=False)]
    assert m.paired_base(base, only_a) == 1.0
    # one task: nothing to resample, no interval to claim
    assert rows(m.main_table(base + only_a, "x"))["single_turn k=1"]["FR_k"] == "100.0% ±inf [-inf, inf]"


def test_if_instruction_and_if_task_exclude_the_functional_check():
    group = [record("a", 3, instructions=(True, True, False), functional=True),
             record("b", 3, instructions=(True, True, True), functional=False)]
    inst, task = m.if_scores(group)
    assert inst == pytest.approx((2 / 3 + 1) / 2)
    assert task == pytest.approx(0.5)
    assert m.pass_at_1(group) == 0.5


def test_errored_instances_are_counted_not_scored():
    group = [record("a", 1, instructions=(True,)), record("b", 1, instructions=(False,), status="error")]
    got = rows(m.main_table(group, "x"))["single_turn k=1"]
    assert got["items"] == 2 and got["errors"] == 1
    # one instance: no spread to estimate (t: SE inf, the whole range); Wilson: [20.7, 100]
    assert got["IF_instruction"] == "100.0% ±inf [0.0, 100.0]" and got["IF_task"] == "100.0% ±0.0 [20.7, 100.0]"


def test_per_protocol_and_k_rows_and_undefined_fr_without_base():
    group = [record("a", 1, "multi_turn", (False,)), record("a", 2, "multi_turn", (True, False)),
             record("a", 1, "single_turn", (True,))]
    table = m.main_table(group, "x")
    assert [r[0] for r in table.rows] == ["single_turn k=1", "single_turn all k", "multi_turn k=1",
                                          "multi_turn k=2", "multi_turn all k"]
    assert rows(table)["multi_turn all k"]["IF_instruction"] == "25.0% ±25.0 [0.0, 100.0]"  # mean of 0 and 1/2
    assert all(r[-1] == "-" for r in table.rows)
    assert any("FR_k is undefined" in note for note in table.notes)


def test_position_table():
    group = [record("a", 3, "single_turn", (True, False, True)), record("b", 3, "single_turn", (True, False, False)),
             record("a", 2, "multi_turn", (False, True))]
    table = m.position_table(group, "x")
    got = {row[0]: row[1:] for row in table.rows}
    assert table.columns == ("", "pos 1", "pos 2", "pos 3")
    # clustered by instance; no spread over 2 instances is still the Wilson width of 2 units, never a bare share
    assert got["single_turn k=3"] == ("100.0% ±0.0 [34.2, 100.0] (2)", "0.0% ±0.0 [0.0, 65.8] (2)",
                                      "50.0% ±50.0 [0.0, 100.0] (2)")
    assert got["multi_turn k=2"] == ("0.0% ±inf [0.0, 100.0] (1)", "100.0% ±inf [0.0, 100.0] (1)", "-")
    assert "cluster-robust SE over instances" in table.notes[-1]


def test_category_and_instruction_breakdowns():
    group = [record("a", 2, "single_turn", (True, False), categories={1: "doc", 2: "error"}),
             record("b", 2, "multi_turn", (True, True), categories={1: "doc", 2: "error"})]
    table = m.breakdown_table(group, "x", "category")
    got = {row[0]: row[1:] for row in table.rows}
    assert got["Documentation & Commenting"] == ("100.0% ±inf [0.0, 100.0] (1)", "100.0% ±inf [0.0, 100.0] (1)")
    assert got["Error Handling & Exception Management"] == ("0.0% ±inf [0.0, 100.0] (1)",
                                                            "100.0% ±inf [0.0, 100.0] (1)")
    by_instruction = m.breakdown_table(group, "x", "instruction")
    assert by_instruction.rows[0][0] == "style_3 Line length"


def test_hook_groups_by_testbed_and_ignores_other_benchmarks():
    assert plugin.BENCHMARK.pytest_ifbench_metrics("smoke", []) is None
    group = [record("a", 0), record("a", 1, instructions=(True,)), record("q", 0, testbed="quick")]
    titles = [t.title for t in plugin.BENCHMARK.pytest_ifbench_metrics("vericode", group)]
    assert "vericode [bigvibe]: instruction following and functionality" in titles
    assert "vericode [quick]: instruction following and functionality" in titles


def test_plot_if_by_position(tmp_path):
    assert plugin.BENCHMARK.pytest_ifbench_plots("smoke", [], tmp_path) is None
    group = [record("a", 2, "single_turn", (True, False)), record("a", 2, "multi_turn", (False, True)),
             record("a", 1, "multi_turn", (True,))]
    paths = plugin.BENCHMARK.pytest_ifbench_plots("vericode", group, tmp_path / "plots")
    assert [p.name for p in paths] == ["vericode_if_by_position_bigvibe.png"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_instance_with_an_undecided_check_is_an_error_as_in_the_core():
    """A check whose verifier raised has no decision: the core's metrics leave the instance out and count it
    as an error; VeriCode counted it as a failure (pass@1 50%, FR_1 50% instead of 100% and 0%)."""
    undecided = record("a", 1, instructions=(True,), functional=False)
    undecided["checks"][-1]["error"] = "verifier audit.boom raised RuntimeError: sandbox exploded"
    group = [record("a", 0), record("b", 0), undecided, record("b", 1, instructions=(True,))]
    got = rows(m.main_table(group, "x"))["single_turn k=1"]
    assert got["items"] == 2 and got["errors"] == 1
    assert got["pass@1"] == "100.0% ±0.0 [20.7, 100.0]" and got["FR_k"].startswith("0.0%"), got
