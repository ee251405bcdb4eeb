"""OctoBench ISR/CSR on hand-built verdict sets: omissions, not-applicable and errored checks, panels
(mean ± std), the paper mode against the authors' reference scorer, and the authors' judge output."""

from __future__ import annotations

import json

import pytest

from pytest_ifbench.benchmarks.octobench import metrics, scoring
from pytest_ifbench.benchmarks.octobench.generate import rescore_lines
from tests._support import shared_sample

JUDGES = ("j1", "j2", "j3")


def check(ident: str, *results: str, category: str = "system_prompt", check_type: str = "compliance",
          verifier: str = "ifbench.judge") -> dict:
    """A judged check's record entry; ``results`` one per judge (``omitted``: the check errored)."""
    if "omitted" in results:
        return {"id": ident, "verifier": verifier, "scored": True, "kind": "check", "category": category,
                "metadata": {"check_type": check_type}, "passed": False,
                "error": "judge j1 left this check out of its answer"}
    votes = [{"judge": j, "result": r, "passed": r == "success", "applicable": r != "not_applicable"}
             for j, r in zip(JUDGES, results)]
    applicable = [v for v in votes if v["applicable"]]
    is_applicable = 2 * (len(votes) - len(applicable)) <= len(votes)
    passed = is_applicable and 2 * sum(v["passed"] for v in applicable) > len(applicable)
    entry = {"id": ident, "verifier": verifier, "scored": True, "kind": "check", "category": category,
             "metadata": {"check_type": check_type}, "passed": passed, "error": None,
             "verdict": {"passed": passed, "details": {"judges": votes}}}
    if not is_applicable:
        entry["applicable"] = False
        entry["verdict"]["applicable"] = False
    return entry


def deterministic(ident: str, passed: bool) -> dict:
    return {"id": ident, "verifier": "ifbench.tool_not_called", "scored": True, "kind": "check",
            "category": "tool_schema", "metadata": {"check_type": "compliance"}, "passed": passed, "error": None,
            "verdict": {"passed": passed, "details": {}}}


def record(name: str, *checks: dict, status: str | None = None, **extra) -> dict:
    passed = all(c["passed"] for c in checks if c.get("applicable", True))
    return {"instance": name, "benchmark": "octobench", "status": status or ("passed" if passed else "failed"),
            "checks": list(checks), "scaffold": "claude_code", "category": "system_prompt", **extra}


def test_omitted_check_fails_in_paper_mode_and_passes_in_reference():
    # The authors' sample situation: the judge leaves the one failing check out of its answer.
    rec = record("a", check("c1", "success"), check("c2", "success"), check("c3", "omitted"))
    paper = scoring.instance_score(rec)
    reference = scoring.instance_score(rec, mode="reference")
    assert (paper.passed, paper.share, paper.checks) == (False, pytest.approx(2 / 3), 3)
    assert (reference.passed, reference.share, reference.checks) == (True, 1.0, 2)


def test_not_applicable_is_left_out_in_paper_mode_and_fails_in_reference():
    rec = record("a", check("c1", "success"), check("c2", "not_applicable"))
    assert scoring.instance_score(rec) == scoring.Score(passed=True, share=1.0, checks=1)
    assert scoring.instance_score(rec, mode="reference") == scoring.Score(passed=False, share=0.5, checks=2)
    only_na = record("b", check("c1", "not_applicable"))
    assert scoring.instance_score(only_na) is None  # K_i = 0: not counted
    assert scoring.instance_score(only_na, mode="reference").share == 0.0


def test_errored_instance_is_not_scored_in_paper_mode_and_zero_in_reference():
    rec = record("a", status="error")
    assert scoring.instance_score(rec) is None
    assert scoring.instance_score(rec, mode="reference") == scoring.Score(passed=False, share=0.0, checks=0)
    assert scoring.instance_score(rec, mode="reference", select=lambda c: True) is None  # not in breakdowns
    found = scoring.rates([rec, record("b", check("c", "success"))])
    assert (found.n, found.errors, found.isr) == (1, 1, 1.0)


def test_reference_reward_is_rounded_to_three_decimals():
    checks = [check(f"c{i}", "success") for i in range(1999)] + [check("bad", "fail")]
    rec = record("a", *checks)
    assert scoring.instance_score(rec, mode="reference") == scoring.Score(passed=True, share=1.0, checks=2000)
    assert scoring.instance_score(rec).passed is False


def test_isr_csr_equations_over_instances():
    records = [
        record("a", check("c1", "success"), check("c2", "success")),
        record("b", check("c1", "success"), check("c2", "fail"), deterministic("d", True), check("c4", "fail")),
        record("c", check("c1", "not_applicable"), deterministic("d", False)),
    ]
    found = scoring.rates(records)
    assert found.n == 3
    assert found.isr == pytest.approx(1 / 3)
    assert found.csr == pytest.approx((1 + 2 / 4 + 0) / 3)


def test_panel_mean_and_std_across_judges():
    # j1 passes everything; j2 fails c2 of instance a; j3 says c2 is not applicable there.
    records = [record("a", check("c1", "success", "success", "success"),
                      check("c2", "success", "fail", "not_applicable")),
               record("b", check("c1", "success", "success", "fail"))]
    per = scoring.panel(records).per_judge
    assert [per[j].isr for j in JUDGES] == [1.0, 0.5, 0.5]
    assert [per[j].csr for j in JUDGES] == [1.0, 0.75, 0.5]
    mean, std = scoring.panel(records).mean_std("isr")
    assert mean == pytest.approx(2 / 3) and std == pytest.approx(0.2357, abs=1e-4)  # population std
    assert scoring.panel(records).cell("isr") == "66.7 ± 23.6"
    table = metrics.overall(records)
    assert [row[0] for row in table.rows] == ["j1", "j2", "j3", "mean ± std", "across judges ±SE [95% CI]",
                                              "instances ±SE [95% CI]"]
    # the judge spread (SE = sd/sqrt(3), t(2)) apart from the sampling error of the verdict over 2 instances
    assert table.rows[-2] == ("across judges ±SE [95% CI]", 2, 0, "66.7% ±16.7 [0.0, 100.0]",
                              "75.0% ±14.4 [12.9, 100.0]", "50.0% ±28.9 [0.0, 100.0]", "66.7% ±22.0 [0.0, 100.0]")
    assert table.rows[-1] == ("instances ±SE [95% CI]", 2, 0, "50.0% ±35.4 [9.5, 90.5]", "75.0% ±25.0 [0.0, 100.0]",
                              "50.0% ±35.4 [9.5, 90.5]", "75.0% ±25.0 [0.0, 100.0]")


def test_a_judge_that_left_a_check_out_the_panel_decided_omitted_it_in_its_own_rates():
    """Two of three said fail, the third left the check out: the panel's verdict is a fail, and in the third
    judge's own rates the check is its omission (a fail in paper mode, not counted in reference), never the
    others' verdict taken for its own."""
    decided = check("c2", "fail", "fail")
    decided["verdict"]["details"]["omitted"] = ["j3"]
    rec = record("a", check("c1", "success", "success", "success"), decided)
    assert scoring.check_result(decided) == "fail" and scoring.check_result(decided, "j3") == "omitted"
    assert scoring.instance_score(rec, judge="j3") == scoring.Score(passed=False, share=0.5, checks=2)
    assert scoring.instance_score(rec, judge="j3", mode="reference") == scoring.Score(passed=True, share=1.0,
                                                                                     checks=1)
    assert scoring.instance_score(rec, judge="j1") == scoring.Score(passed=False, share=0.5, checks=2)


def test_breakdowns_by_source_type_and_counts():
    records = [record("a", check("c1", "success", category="user_query", check_type="implementation"),
                      check("c2", "fail"), deterministic("d", True)),
               record("b", check("c1", "omitted"), check("c2", "not_applicable", category="memory"))]
    found = {t.title: t for t in metrics.tables(records)}
    sources = found["octobench: by check source (Tables 12-14)"]
    labels = [row[0] for row in sources.rows]
    assert labels == ["System Prompt", "User Query", "Memory", "Tool schema"]
    user = next(row for row in sources.rows if row[0] == "User Query")
    assert user[1:4] == (1, "100.0", "100.0")  # one judge voted: no std
    # the sampling interval of every breakdown row, the instance as the unit (one instance: Wilson 1 of 1, t: ±inf)
    assert user[-2:] == ("100.0% ±0.0 [20.7, 100.0]", "100.0% ±inf [0.0, 100.0]")
    assert sources.columns[-2:] == ("ISR ±SE [95% CI]", "CSR ±SE [95% CI]") and "Wilson" in sources.notes[-1]
    counts = found["octobench: checks per instance"]
    assert counts.rows == (("a", 1, 2, 0, 0), ("b", 0, 2, 1, 1))
    types = [row[0] for row in found["octobench: by check type (Table 8)"].rows]
    assert types == ["compliance", "implementation"]


def test_isr_by_interaction_turns_table_and_plot(tmp_path):
    def run(n: int) -> dict:
        return {"trajectory": {"messages": [{"role": "assistant"}] * n}}

    records = [record("a", check("c", "success"), agent=run(3)), record("b", check("c", "fail"), agent=run(15)),
               record("c", check("c", "success"), agent=run(12))]
    table = next(t for t in metrics.tables(records) if "interaction turns" in t.title)
    assert [(row[0], row[1]) for row in table.rows] == [("1-10", 1), ("11-20", 2)]
    (path,) = metrics.plots(records, tmp_path)
    assert path.name == "octobench_isr_by_turns.png" and path.stat().st_size > 1000


def test_authors_judge_output_rescored(tmp_path):
    path = shared_sample("octobench-judge-scores-sample.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    row = data["results"][0]
    assert scoring.reference_reward(row["eval_result"]) == row["reward"] == 0.938
    assert scoring.paper_score(row["eval_result"]).share == pytest.approx(30 / 32)
    # Drop a failing check from the judge's answer: the authors' reward rises, ours does not.
    checklist = json.loads(json.dumps(row["eval_result"]))
    answer = json.loads(json.dumps(row["eval_result"]))
    answer["SP"]["checks"] = [c for c in answer["SP"]["checks"] if c["check_id"] != "SP_todowrite_mandatory_usage"]
    assert scoring.reference_reward(answer) == round(30 / 31, 3)
    assert scoring.paper_score(answer, checklist).share == pytest.approx(30 / 32)
    assert scoring.omissions(answer, checklist) == ["SP_todowrite_mandatory_usage"]
    assert scoring.reference_reward({"error": "Expecting value"}) == 0.0
    assert scoring.paper_score({"error": "Expecting value"}) is None
    lines = rescore_lines([path])
    assert any("benchmark-md-emoji-test-001" in line and "0.938" in line for line in lines)
    assert lines[-1].startswith("  overall: reference ISR 0.0% CSR 93.8% | ours ISR 0.0% CSR 93.8%")


def test_rescore_with_instances_finds_omissions(tmp_path):
    path = shared_sample("octobench-judge-scores-sample.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    checks = data["results"][0]["eval_result"]["User query"]["checks"]
    data["results"][0]["eval_result"]["User query"]["checks"] = [c for c in checks if c["result"] == "success"]
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    official = tmp_path / "official.jsonl"
    checklist = json.loads(path.read_text(encoding="utf-8"))["results"][0]["eval_result"]
    official.write_text(json.dumps({"instance_id": "benchmark-md-emoji-test-001", "user_query": ["q"],
                                    "checklist": checklist}, ensure_ascii=False) + "\n", encoding="utf-8")
    lines = rescore_lines([judge, judge], official)
    row = next(line for line in lines if "benchmark-md-emoji-test-001" in line)
    assert "0.968" in row and "0.938" in row and "UserQuery_document_generated" in row
    assert "  reference CSR: 96.8% ± 0.0" in lines and "  ours CSR: 93.8% ± 0.0" in lines
