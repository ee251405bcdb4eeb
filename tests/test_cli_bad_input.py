"""``ifbench verify`` and ``ifbench score`` on input files with every kind of bad line.

Each bad line gets exactly one error naming its line number, every good line is
still processed, and the exit status is the documented one -- never a
traceback, and never the internal-error status 3 for bad input.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ifbench.cli.main import INTERNAL_ERROR, main
from tests._support import demo_suite, write_suite

#: Kinds of unusable line, as raw bytes (what a broken export could hold).
BAD_LINES: dict[str, bytes] = {
    "huge int": b'{"verifier": "ifbench.case", "response": "hi", "id": ' + b"9" * 5000 + b"}",
    "100k deep": b"[" * 100_000 + b"]" * 100_000,
    "invalid UTF-8": b'{"verifier": "ifbench.case", "response": "caf\xe9 \xff"}',
    "not an object": b'["ifbench.case", "hi"]',
    "not JSON": b"{broken",
    "missing fields": b'{"params": {"mode": "lower"}}',
}


def _mixed(path: Path, good: list[bytes]) -> tuple[Path, dict[int, str], list[int]]:
    """Good lines interleaved with every bad kind and blank lines; (path, bad line -> kind, good lines)."""
    lines: list[bytes] = []
    bad: dict[int, str] = {}
    good_numbers: list[int] = []
    kinds = list(BAD_LINES.items())
    for index in range(max(len(good), len(kinds))):
        if index < len(good):
            lines.append(good[index])
            good_numbers.append(len(lines))
        if index < len(kinds):
            lines.append(kinds[index][1])
            bad[len(lines)] = kinds[index][0]
        lines.append(b"   ")
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path, bad, good_numbers


def _case(response: str, mode: str = "lower", **extra: object) -> bytes:
    return json.dumps({"verifier": "ifbench.case", "params": {"mode": mode}, "response": response,
                       **extra}).encode()


def test_verify_reports_each_bad_line_and_verifies_the_rest(tmp_path, capsys):
    good = [_case("hello", id="a"), _case("Hello", id="b"), _case("hi", id="c"), _case("HEY", "upper", id="d")]
    path, bad, _ = _mixed(tmp_path / "cases.jsonl", good)
    code = main(["verify", "--in", str(path)])
    captured = capsys.readouterr()
    results = [json.loads(line) for line in captured.out.splitlines()]
    assert "Traceback" not in captured.err
    assert code == 1, "errored cases exit 1; 3 is reserved for internal errors"
    errors = [r for r in results if r["passed"] is None]
    assert [int(r["error"].split(":")[0].removeprefix("line ")) for r in errors] == sorted(bad)
    by_kind = {bad[int(r["error"].split(":")[0].removeprefix("line "))]: r["error"] for r in errors}
    assert "unreadable JSON" in by_kind["huge int"] and "4300" in by_kind["huge int"]
    assert by_kind["100k deep"].endswith("nested too deeply")
    assert "not UTF-8: byte 0xe9" in by_kind["invalid UTF-8"]
    assert "got list" in by_kind["not an object"]
    assert by_kind["not JSON"].startswith(tuple(f"line {n}: not JSON" for n in bad))
    assert '"verifier" is missing' in by_kind["missing fields"]
    verdicts = {r["id"]: r["passed"] for r in results if "id" in r}
    assert verdicts == {"a": True, "b": False, "c": True, "d": True}, "good lines are verified in order"


def test_verify_reads_bad_bytes_from_stdin(tmp_path, capsys, monkeypatch):
    import io
    import sys

    raw = _case("hello", id="ok") + b"\n" + BAD_LINES["invalid UTF-8"] + b"\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))
    assert main(["verify", "--in", "-"]) == 1
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert results[0]["passed"] is True and results[1]["error"].startswith("line 2: not UTF-8")


def test_verify_internal_error_exits_3_not_1(tmp_path, capsys, monkeypatch):
    path = tmp_path / "cases.jsonl"
    path.write_bytes(_case("hello") + b"\n")
    monkeypatch.setattr("pytest_ifbench.cli.verify._verify_case", lambda *a: 1 / 0)
    assert main(["verify", "--in", str(path)]) == INTERNAL_ERROR == 3
    assert "ifbench verify: internal error: ZeroDivisionError" in capsys.readouterr().err


SUITE_IDS = ("first", "second", "third")


@pytest.fixture
def score_suite(tmp_path: Path) -> Path:
    instances = [{"id": name, "prompt": "say it", "checks": [{"id": "lower", "verifier": "ifbench.case",
                                                              "params": {"mode": "lower"}}]}
                 for name in SUITE_IDS]
    return write_suite(tmp_path, "suites/scored.yaml", demo_suite(*instances))


def test_score_reports_each_bad_line_and_scores_the_rest(tmp_path, capsys, monkeypatch, score_suite):
    monkeypatch.chdir(tmp_path)
    good = [json.dumps({"id": name, "response": "fine"}).encode() for name in SUITE_IDS[:2]]
    good.append(json.dumps({"id": "first", "response": "a repeat"}).encode())  # a duplicate id is a bad line too
    path, bad, good_numbers = _mixed(tmp_path / "responses.jsonl", good)
    bad[good_numbers[-1]] = "duplicate"
    results = tmp_path / "results.json"
    code = main(["score", "--suite", str(score_suite), "--responses", str(path), "--results", str(results),
                 "--", "-q", "-p", "no:randomly"])
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.startswith("ifbench score: error:")]
    assert [int(line.split(f"{path}:")[1].split(":")[0]) for line in errors] == sorted(bad)
    assert "Traceback" not in captured.err
    by_id = {r["instance"]: r for r in json.loads(results.read_text())["instances"]}
    assert by_id["first"]["status"] == by_id["second"]["status"] == "passed"
    assert by_id["first"]["turns"][0]["response"]["text"] == "fine", "the first of a repeated id is kept"
    assert "no recorded response" in by_id["third"]["error"]
    assert code == 1, "pytest's status: the instance without a usable line errored"


def test_score_with_no_usable_line_is_a_usage_error(tmp_path, capsys, score_suite):
    path = tmp_path / "responses.jsonl"
    path.write_bytes(b"\n".join(BAD_LINES.values()) + b"\n")
    assert main(["score", "--suite", str(score_suite), "--responses", str(path)]) == 4
    err = capsys.readouterr().err
    assert err.count("ifbench score: error:") == len(BAD_LINES) + 1
    assert f"{path}: no usable line ({len(BAD_LINES)} unusable, reported above)" in err


@pytest.mark.parametrize("indent", [None, 2], ids=["compact", "indented"])
def test_score_given_a_results_file_as_responses_says_so(tmp_path, capsys, score_suite, indent):
    """It got the generic "expected an object with a string id" (compact) or one error a line (indented)."""
    path = tmp_path / "ifbench-results.json"
    path.write_text(json.dumps({"format": 1, "model": "m", "instances": [{"nodeid": "s::x"}]}, indent=indent))
    assert main(["score", "--suite", str(score_suite), "--responses", str(path)]) == 4
    err = capsys.readouterr().err
    assert err.count("ifbench score: error:") == 1, err
    assert f"{path} is a pytest-ifbench results file, not a responses file" in err, err
