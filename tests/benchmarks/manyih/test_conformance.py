"""``reference`` mode against the authors' own verdicts (data/README.md): every recorded input,
through ``ifbench verify`` with ``{"compat": "reference"}`` -- the path a user takes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


def _corpus(name: str) -> tuple[dict, list[dict]]:
    header, *rows = (json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines())
    return header, rows


def _verify(tmp_path: Path, cases: list[dict]) -> list[dict]:
    from pytest_ifbench.cli.main import main

    source, target = tmp_path / "cases.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(case) + "\n" for case in cases), encoding="utf-8")
    assert main(["verify", "--in", str(source), "--out", str(target)]) == 0
    return [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]


def test_corpora_record_their_origin():
    for name in ("style_corpus.jsonl", "if_corpus.jsonl"):
        header, rows = _corpus(name)
        assert header["authors_repo"].endswith("JHU-CLSP/ManyIH") and len(header["commit"]) == 40
        assert header["python"] and len(rows) >= 300


def test_style_checks_match_the_authors_on_every_input(tmp_path):
    header, rows = _corpus("style_corpus.jsonl")
    ids = header["style_ids"]
    assert len(ids) == 41 and "doc_oneline" in ids, "the official ids, as coding.json spells them"
    cases = [{"id": f"{row_no}:{style}", "verifier": f"manyih.{style}", "params": {"compat": "reference"},
              "response": row["reply"]}
             for row_no, row in enumerate(rows) for style in ids]
    expected = {f"{row_no}:{style}": mark == "1"
                for row_no, row in enumerate(rows) for style, mark in zip(ids, row["verdicts"])}
    results = _verify(tmp_path, cases)
    wrong = [(r["id"], rows[int(r["id"].split(":")[0])]["reply"][:60]) for r in results
             if r["passed"] is not expected[r["id"]]]
    assert len(results) == len(cases) and not wrong, f"{len(wrong)} verdicts differ, e.g. {wrong[:5]}"


_IF_EXPECTED = {"true": (True, True), "false": (False, True), "none": (False, False),
                "other:truthy": (True, True), "other:falsy": (False, True)}


def test_if_code_checks_match_the_authors_on_every_input(tmp_path):
    _, rows = _corpus("if_corpus.jsonl")
    cases = [{"id": str(i), "verifier": "manyih.if_code", "response": row["response"],
              "params": {"code": row["code"], "compat": "reference"}} for i, row in enumerate(rows)]
    results = _verify(tmp_path, cases)
    wrong = []
    for result in results:
        row = rows[int(result["id"])]
        passed, applicable = _IF_EXPECTED[row["score"]]
        if (result["passed"], result.get("applicable", True)) != (passed, applicable):
            wrong.append((row["score"], result["evidence"][:80], row["code"][:60], row["response"][:30]))
    assert len(results) == len(cases) and not wrong, f"{len(wrong)} verdicts differ, e.g. {wrong[:5]}"


@pytest.mark.parametrize("official", ["doc_oneline"])
def test_official_style_ids_are_verifier_ids(official):
    from pytest_ifbench._composition import default_registry
    from pytest_ifbench._verify import verify_one

    registry = default_registry()
    reply = '```python\ndef f():\n    """One\n    two."""\n    return 1\n```'
    assert verify_one(registry, f"manyih.{official}", {}, reply).passed is False
    assert verify_one(registry, f"manyih.{official}", {"compat": "reference"}, reply).passed is False
    assert registry.get(f"manyih.{official}").params == registry.get("manyih.doc_online").params
