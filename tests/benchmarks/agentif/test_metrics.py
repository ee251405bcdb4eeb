"""The score (eq. 1-2) on hand-built verdicts: clamping, penalties, errors excluded, breakdowns, panels;
and judge agreement with humans (Table 3)."""

from __future__ import annotations

import json
import statistics

import pytest

from pytest_ifbench.benchmarks.agentif import agreement, metrics
from pytest_ifbench.reports.metrics import rubric_score


def check(cid, kind, points, passed, *, category=None, votes=None, error=None):
    details = {"judges": [{"judge": j, "passed": p, "satisfied": p if kind == "bonus" else not p}
                          for j, p in (votes or {}).items()]}
    return {"id": cid, "verifier": "agentif.rubric", "kind": kind, "points": points, "passed": passed,
            "category": category, "error": error, "scored": True, "verdict": {"passed": passed, "details": details}}


def record(instance, checks, *, status=None, category="open_workflow", domain="work", attachments=False,
           duration=10.0):
    return {"instance": instance, "benchmark": "agentif", "status": status or "passed", "checks": checks,
            "category": category, "markers": ["with_attachments"] if attachments else [],
            "metadata": {"domain": domain}, "agent": {"duration": duration}}


def test_equation_one_bonus_and_penalty():
    checks = [check("a", "bonus", 2, True), check("b", "bonus", 1, False), check("c", "bonus", 1, True),
              check("p", "penalty", 1, False)]  # penalty triggered: did not pass
    # S+ = 3, S- = 1, S_max = 4
    assert metrics.task_score(checks) == pytest.approx(0.5)
    assert rubric_score(record("t", checks)) == pytest.approx(0.5)  # the core agrees


def test_clamped_at_zero_and_untriggered_penalties_cost_nothing():
    assert metrics.task_score([check("a", "bonus", 1, True), check("p", "penalty", 3, False)]) == 0.0
    assert metrics.task_score([check("a", "bonus", 1, True), check("p", "penalty", 3, True)]) == 1.0
    assert metrics.task_score([check("p", "penalty", 1, True)]) is None  # S_max = 0: no score


def test_final_score_is_the_mean_over_tasks_and_errors_are_excluded():
    records = [
        record("t1", [check("a", "bonus", 1, True)]),
        record("t2", [check("a", "bonus", 1, False), check("b", "bonus", 1, True)]),
        record("t3", [check("a", "bonus", 1, False, error="judge openai/j left this criterion out")]),
        {"instance": "t4", "status": "error", "checks": [], "error": "harness"},
    ]
    scored = metrics._scored(records)
    assert [r["instance"] for r, _ in scored] == ["t1", "t2"]
    assert metrics.final_score([s for _, s in scored]) == pytest.approx(0.75)
    table = metrics.tables(records)[0]
    rows = dict(table.rows)
    assert rows["tasks"] == 4 and rows["errors (excluded)"] == 2 and rows["scored"] == 2
    assert rows["overall score (eq. 2)"] == "0.750"
    assert rows["overall score ±SE [95% CI]"] == "0.750 ±0.250 [0.000, 1.000]"  # t(1) over the 2 scored tasks
    assert any("excluded" in note for note in table.notes)


def test_breakdowns_dimension_attachments_category_domain_latency():
    records = [
        record("t1", [check("a", "bonus", 2, True, category="factuality"),
                      check("p", "penalty", 1, False, category="negative_constraint")],
               category="latent_inference", domain="life", attachments=True, duration=30.0),
        record("t2", [check("a", "bonus", 1, True, category="factuality"),
                      check("b", "bonus", 1, False, category="logic"),
                      check("p", "penalty", 1, True, category="negative_constraint")],
               category="open_workflow", domain="work", duration=10.0),
    ]
    tables = metrics.tables(records)
    rows = dict(tables[0].rows)
    assert rows["avg latency (s)"] == "20.0"
    # rubric dimensions: points-weighted, clustered by task (2 tasks: factuality 3 of 3 points, no spread,
    # still the Wilson width of 2 clusters; logic in one task only: no spread to estimate)
    assert rows["rubric: factuality"] == "1.000 ±0.000 [0.342, 1.000]"
    assert rows["rubric: logic"] == "0.000 ±inf [0.000, 1.000]"
    assert rows["rubric: negative_constraint"] == "0.500 ±0.500 [0.000, 1.000]"
    assert metrics.dimension_estimate(records, "factuality").value == metrics.dimension_score(records, "factuality")
    # means of task scores with their t interval; one task: the whole range, never a bare score
    one = "0.500 ±inf [0.000, 1.000] (n=1)"
    assert rows["with attachments"] == one and rows["without attachments"] == one
    assert rows["category: latent_inference"] == one and rows["category: iterative_refinement"] == "-"
    domains = dict(tables[1].rows)
    assert domains == {"work": one, "life": one, "study": "-"}
    assert "over the domain's tasks" in tables[1].notes[0]


def test_panel_score_per_judge_with_mean_and_std():
    records = [
        record("t1", [check("a", "bonus", 1, True, votes={"j1": True, "j2": True, "j3": False}),
                      check("b", "bonus", 1, True, votes={"j1": True, "j2": False, "j3": True})]),
        record("t2", [check("a", "bonus", 1, False, votes={"j1": False, "j2": False, "j3": True}),
                      check("p", "penalty", 1, True, votes={"j1": True, "j2": False, "j3": True})]),
    ]
    per_task = metrics.per_task(records)
    assert per_task["t1"]["judges"] == {"j1": 1.0, "j2": 0.5, "j3": 0.5}
    assert per_task["t2"]["judges"] == {"j1": 0.0, "j2": 0.0, "j3": 1.0}
    panel = metrics.tables(records)[-1]
    rows = {row[0]: row[2] for row in panel.rows}
    finals = [0.5, 0.25, 0.75]
    # each judge's score with its sampling interval over the 2 tasks, t(1)
    assert [rows["j1"], rows["j2"], rows["j3"]] == ["0.500 ±0.500 [0.000, 1.000]", "0.250 ±0.250 [0.000, 1.000]",
                                                    "0.750 ±0.250 [0.000, 1.000]"]
    assert rows["mean ± std"] == f"{statistics.fmean(finals):.3f} ± {statistics.pstdev(finals):.3f}"
    assert rows["across judges ±SE [95% CI]"] == "0.500 ±0.144 [0.000, 1.000]"  # sd 0.25 / sqrt(3), t(2)


def test_cohen_kappa_and_agreement_cli(tmp_path, capsys):
    assert agreement.cohen_kappa([(True, True), (False, False)]) == 1.0
    assert agreement.cohen_kappa([(True, False), (False, True)]) == -1.0
    pairs = [(True, True), (True, False), (False, False), (True, True)]
    # observed 0.75; p_a = .75, p_b = .5 -> expected .5; kappa = .5
    assert agreement.cohen_kappa(pairs) == pytest.approx(0.5)
    results = {"instances": [{"instance": "taskif_1", "metadata": {"question_id": "taskif_1"}, "checks": [
        check("c1", "bonus", 1, True, votes={"ja": True, "jb": False}),
        check("c2", "penalty", 1, True, votes={"ja": True, "jb": True}),  # satisfied=False: penalty not applied
    ]}]}
    (tmp_path / "results.json").write_text(json.dumps(results))
    (tmp_path / "human.jsonl").write_text(
        '{"question_id": "taskif_1", "criterion": "c1", "satisfied": true}\n'
        '{"instance": "taskif_1", "criterion_id": "c2", "satisfied": false}\n'
        '{"question_id": "taskif_9", "criterion": "c1", "satisfied": true}\n')
    out = tmp_path / "rows.json"
    status = agreement.main(["--human", str(tmp_path / "human.jsonl"), "--results", str(tmp_path / "results.json"),
                             "--out", str(out)])
    assert status == 0
    rows = {r["judge"]: r for r in json.loads(out.read_text())}
    assert rows["ja"]["agreement"] == 1.0 and rows["ja"]["items"] == 2 and rows["ja"]["missing"] == 1
    assert rows["jb"]["agreement"] == 0.5
    assert "100.0%" in capsys.readouterr().out


def test_human_annotations_are_json_lines_split_at_newlines_only(tmp_path):
    """An annotator's note holding U+2028 (valid in a JSON string, and ``json.dumps(..., ensure_ascii=False)``
    writes it so) cut the line in two: the file was refused with a bare JSON error naming no file or line."""
    human = tmp_path / "human.jsonl"
    human.write_text(json.dumps({"question_id": "t", "criterion": "c1", "satisfied": True, "note": "a\u2028b"},
                                ensure_ascii=False) + "\n{broken\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"human\.jsonl:2: not JSON"):
        agreement.read_human(human)
    human.write_text(human.read_text(encoding="utf-8").split("\n")[0] + "\n", encoding="utf-8")
    assert agreement.read_human(human) == {("t", "c1"): True}


def test_agreement_through_the_ifbench_command(tmp_path):
    from pytest_ifbench.cli.main import main

    (tmp_path / "h.jsonl").write_text('{"question_id": "x", "criterion": "c1", "satisfied": true}\n')
    (tmp_path / "r.json").write_text(json.dumps({"instances": [{"instance": "x", "checks": [
        check("c1", "bonus", 1, True, votes={"j": True})]}]}))
    assert main(["generate", "agentif", "agreement", "--human", str(tmp_path / "h.jsonl"),
                 "--results", str(tmp_path / "r.json")]) == 0
    assert main(["generate", "agentif"]) == 2
