"""Inputs with no end and inputs of the wrong kind: ``ifbench verify`` and ``ifbench score`` stop with a
named error in bounded memory, and ``score`` never calls the model under test."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from pytest_ifbench.cli import lines
from pytest_ifbench.cli.main import main
from tests._support import stub_args, write_suite

CASE = {"verifier": "ifbench.case", "params": {"mode": "lower"}, "response": "all lower"}


def test_verify_reading_dev_zero_stops_naming_the_line(capsys):
    assert main(["verify", "--in", "/dev/zero"]) == 2
    err = capsys.readouterr().err
    assert "--in /dev/zero: line 1 runs past 1,073,741,824 bytes without a line end; stopped reading" in err


def test_an_over_long_line_is_its_own_error_and_the_next_lines_verify(tmp_path, monkeypatch):
    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 100)
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(CASE) + "\n" + "x" * 5000 + "\n" + json.dumps(CASE) + "\n")
    assert main(["verify", "--in", str(source), "--out", str(tmp_path / "out.jsonl")]) == 1
    first, long, last = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert first["passed"] is True and last["passed"] is True
    assert long == {"passed": None, "error": "line 2: the line is longer than the 100 bytes allowed; left out"}


def test_bounded_lines_reads_text_streams_and_exact_limits(monkeypatch):
    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 4)
    got = list(lines.bounded_lines(io.StringIO("abcd\nabcde\nab"), "stdin"))
    assert got[0] == "abcd\n" and isinstance(got[1], lines.CaseError) and got[2] == "ab"


def test_score_responses_from_dev_zero_is_a_usage_error(tmp_path, capsys):
    suite = write_suite(tmp_path, "s.yaml", """
        ifbench: 1
        benchmark: demo
        instances:
          - {id: one, prompt: hi, checks: [{id: c, verifier: ifbench.case, params: {mode: lower}}]}
    """)
    assert main(["score", "--suite", str(suite), "--responses", "/dev/zero"]) == pytest.ExitCode.USAGE_ERROR
    assert "/dev/zero: line 1 runs past" in capsys.readouterr().err


@pytest.mark.parametrize("content", ['{"a": 1}\n', "hello\n", ""], ids=["not-a-trajectory", "not-json", "empty"])
def test_score_with_a_file_that_is_no_trajectory_is_a_usage_error(tmp_path, capsys, stub_env, content):
    suite = write_suite(tmp_path, "s.yaml", """
        ifbench: 1
        benchmark: demo
        instances:
          - {id: one, prompt: hi, checks: [{id: c, verifier: ifbench.case, params: {mode: lower}}]}
    """)
    bogus = tmp_path / "not-a-trajectory.jsonl"
    bogus.write_text(content)
    code = main(["score", "--suite", str(suite), "--trajectories", str(bogus), "--", *stub_args(stub_env)])
    assert code == pytest.ExitCode.USAGE_ERROR
    assert f"--trajectories {bogus}: " in capsys.readouterr().err
    assert stub_env.calls == 0


def test_score_never_calls_the_model_under_test(tmp_path, stub_env, monkeypatch):
    """With trajectories only, an instance that is not an agent run errors; nothing is generated."""
    monkeypatch.chdir(tmp_path)
    suite = write_suite(tmp_path, "s.yaml", """
        ifbench: 1
        benchmark: demo
        instances:
          - {id: plain, prompt: hi, checks: [{id: c, verifier: ifbench.case, params: {mode: lower}}]}
          - id: agent-run
            protocol: agent
            prompt: (recorded)
            checks: [{id: said-hi, verifier: ifbench.regex, params: {pattern: hi}}]
    """)
    trajectory = {"meta": {"instance_id": "agent-run"}, "messages": [
        {"role": "user", "content": "(recorded)"}, {"role": "assistant", "content": "hi there"}]}
    recorded = tmp_path / "agent-run.json"
    recorded.write_text(json.dumps(trajectory))
    results = tmp_path / "results.json"
    code = main(["score", "--suite", str(suite), "--trajectories", str(recorded), "--results", str(results),
                 "--", *stub_args(stub_env), "-q"])
    assert code == pytest.ExitCode.TESTS_FAILED
    assert stub_env.calls == 0
    records = {r["instance"]: r for r in json.loads(Path(results).read_text())["instances"]}
    assert "no recorded response for instance 'plain'" in records["plain"]["error"]
    assert records["agent-run"]["status"] == "passed" and records["plain"]["status"] == "error"
