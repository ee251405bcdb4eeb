"""Generation settings: suite defaults, command-line overrides, and where they are reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ifbench.suite.format import SuiteError, parse_suite
from pytest_ifbench.testing import Reply
from tests._support import bulk_suite, stub_args, write_suite

_SETTINGS = """defaults:
  generation: {temperature: 0.7, max_tokens: 333, reasoning_effort: high}
"""


def _suite(n: int = 2) -> str:
    return bulk_suite(n).replace("benchmark: bulk\n", "benchmark: bulk\n" + _SETTINGS)


def test_reasoning_effort_is_validated():
    from pytest_ifbench._composition import default_registry

    data = {"ifbench": 1, "benchmark": "b", "instances": [
        {"id": "a", "prompt": "p", "generation": {"reasoning_effort": "extreme"}, "checks": []}]}
    with pytest.raises(SuiteError, match=r"instance 'a': generation.reasoning_effort: must be one of none"):
        parse_suite(Path("s.yaml"), data, default_registry())


def test_suite_settings_are_sent_recorded_and_summarised(pytester, stub_env):
    write_suite(pytester.path, "suites/bulk.yaml", _suite())
    result = pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-results=out.json")
    result.assert_outcomes(passed=2)
    bodies = [r.body for r in stub_env.requests]
    assert all(b["temperature"] == 0.7 and b["max_tokens"] == 333 and b["reasoning_effort"] == "high" for b in bodies)
    result.stdout.fnmatch_lines(["generation (bulk): temperature 0.7, max_tokens 333, reasoning_effort high"])
    document = json.loads((pytester.path / "out.json").read_text())
    assert document["generation"] == {"bulk": [["temperature 0.7, max_tokens 333, reasoning_effort high", 2]]}
    assert all(r["generation"]["max_tokens"] == 333 for r in document["instances"])


def test_flags_override_every_suite(pytester, stub_env):
    write_suite(pytester.path, "suites/bulk.yaml", _suite())
    result = pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-temperature=0",
                                "--ifbench-max-tokens=50", "--ifbench-reasoning-effort=low")
    result.assert_outcomes(passed=2)
    bodies = [r.body for r in stub_env.requests]
    assert all(b["temperature"] == 0.0 and b["max_tokens"] == 50 and b["reasoning_effort"] == "low" for b in bodies)
    result.stdout.fnmatch_lines(["generation (bulk): temperature 0.0, max_tokens 50, reasoning_effort low"])


def test_bad_override_is_a_usage_error(pytester):
    result = pytester.runpytest("--model=openai/x", "--ifbench-max-tokens=0")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--ifbench-max-tokens*invalid*"])


def test_self_judging_is_warned_about_once(pytester, stub_env):
    write_suite(pytester.path, "suites/judged.yaml", """
        ifbench: 1
        benchmark: judged
        instances:
          - id: a
            prompt: write a poem
            checks: [{id: polite, verifier: ifbench.judge, params: {criterion: "is polite"}}]
    """)
    stub_env.add_rule("REQUIREMENTS", Reply(content=json.dumps(
        {"checks": [{"id": "polite", "verdict": "pass", "reasoning": "it is"}]})))
    result = pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-summary=summary.md")
    result.stdout.fnmatch_lines(["warning: no --judge-model given, so the model under test judged its own answers*"])
    summary = (pytester.path / "summary.md").read_text()
    assert "**warning: no --judge-model given" in summary and "generation (judged): temperature 0.0" in summary
    result = pytester.runpytest("suites", *stub_args(stub_env), "--judge-model=openai/stub")
    assert "judged its own answers" not in result.stdout.str()
