"""``compat: reference`` against verdicts recorded from the EvolIF authors' own code (data/README.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pytest_ifbench.benchmarks.evolif.authors_score import dialogue_rec, score
from pytest_ifbench.cli.main import main

DATA = Path(__file__).parent / "data"


def _cases() -> list[dict]:
    return [json.loads(line) for line in (DATA / "conformance-checkers.jsonl").read_text(encoding="utf-8").splitlines()]


def test_reference_mode_matches_every_recorded_checker_verdict(tmp_path: Path) -> None:
    cases = _cases()
    assert len(cases) >= 300
    out = tmp_path / "verdicts.jsonl"
    assert main(["verify", "--in", str(DATA / "conformance-checkers.jsonl"), "--out", str(out)]) == 0
    got = {v["id"]: v["passed"] for v in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    wrong = [(c["id"], c["verifier"], c["params"], c["response"][:60]) for c in cases
             if got[c["id"]] is not c["authors_passed"]]
    assert not wrong, f"{len(wrong)} of {len(cases)} differ, e.g. {wrong[:5]}"


def test_the_corpus_covers_every_checker_and_both_outcomes() -> None:
    cases = _cases()
    verifiers = {c["verifier"] for c in cases}
    assert verifiers == {f"evolif.{n}" for n in ("startwith", "endwith", "format", "case", "punctuation",
                                                  "countableItems", "length", "existence", "forbidden", "language")}
    for verifier in verifiers - {"evolif.language"}:
        outcomes = {c["authors_passed"] for c in cases if c["verifier"] == verifier}
        assert outcomes == {True, False}, verifier


def _printed(value: str) -> float:
    return float(value.replace("np.float64(", "").replace(")", ""))


SCORER = json.loads((DATA / "conformance-scorer.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(SCORER["sets"]))
def test_authors_score_matches_score_py(name: str) -> None:
    chosen = SCORER["sets"][name]
    result = score([[[bool(v) for v in turn] for turn in SCORER["dialogues"][d]] for d in chosen["dialogues"]])
    printed = chosen["printed"]
    assert result is not None and result.dialogues == int(printed["Total dialog number"])
    endurance = [_printed(x) for x in printed["Endurance"].strip("()").split(", ") if x]
    assert list(result.endurance) == pytest.approx(endurance)
    assert result.lss == pytest.approx(float(printed["Endurance_LSS"]))
    assert result.csr == pytest.approx(float(printed["Constraint Satisfaction Rate (CSR)"]))
    assert result.isr == pytest.approx(float(printed["Instruction Satisfaction Rate (ISR)"]))
    assert result.robustness == pytest.approx(float(printed["Robustness"]))
    expected = float(printed["Recovery"])
    assert (math.isnan(result.rec) and math.isnan(expected)) or result.rec == pytest.approx(expected)
    assert result.rec_finite + result.rec_nan + result.rec_inf + result.rec_negative_zero == result.dialogues


@pytest.mark.parametrize(("successes", "expected"), [
    ([True, True, True], "-0.0"),        # no failure: 0 / -1, counted as 0 in the mean
    ([True, False], "nan"),              # the only failure is the last turn: 0 / 0
    ([False, True], "inf"),              # recovered, then the script ran out: 1 / 0
    ([True, False, True, False, False, False], repr(1 / 3)),  # 1 recovery / (6 - 2 - 1)
])
def test_dialogue_rec_outcomes(successes: list[bool], expected: str) -> None:
    value = dialogue_rec(successes)
    assert repr(value) == expected or (expected == "nan" and math.isnan(value))
