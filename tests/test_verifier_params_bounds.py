"""Verifier parameters that type-check but make a check meaningless are collection errors.

An ``ifbench.stdio_tests`` case is read by the sandbox as ``case["input"]`` (stdin) and
``case["output"]`` (the expected stdout). A misspelt key, a missing one or a value that is
not a string used to be read as "" -- "expect no output" -- so every model failed the check.
An ``ifbench.word_count`` with ``min > max`` (and a code check with no case or test at all)
can never pass. Each is now a suite error naming the file, the instance and the field, raised
while collecting, before any model call.
"""

from __future__ import annotations

import json

import pytest

from pytest_ifbench.cli.main import main
from tests._support import write_suite

SUITE = """
ifbench: 1
benchmark: demo
instances:
  - id: ok
    prompt: hi
    checks:
      - {{id: words, verifier: ifbench.word_count, params: {{min: 1}}}}
  - id: echo-upper
    prompt: Print stdin upper-cased.
    checks:
      - {{id: fine, verifier: ifbench.word_count, params: {{min: 0, max: 100}}}}
      - {check}
"""

#: (name, the bad check, the field below the instance, the message)
BAD: list[tuple[str, str, str, str]] = [
    ("misspelt-output",
     '{id: stdio, verifier: ifbench.stdio_tests, params: {cases: [{input: "hi\\n", expected_output: "HI"}]}}',
     "checks[1].params.cases[0].expected_output", "unknown key (known: input, output)"),
    ("missing-output",
     '{id: stdio, verifier: ifbench.stdio_tests, params: {cases: [{input: "hi\\n"}]}}',
     "checks[1].params.cases[0].output", "required key is missing"),
    ("missing-input-of-second-case",
     '{id: stdio, verifier: ifbench.stdio_tests, params: {cases: [{input: "a", output: "A"}, {output: "B"}]}}',
     "checks[1].params.cases[1].input", "required key is missing"),
    ("int-input",
     '{id: stdio, verifier: ifbench.stdio_tests, params: {cases: [{input: 3, output: "3"}]}}',
     "checks[1].params.cases[0].input", "expected str, got 3"),
    ("null-output",
     '{id: stdio, verifier: ifbench.stdio_tests, params: {cases: [{input: "x", output: null}]}}',
     "checks[1].params.cases[0].output", "expected str, got None"),
    ("int-key",
     '{id: stdio, verifier: ifbench.stdio_tests, params: {cases: [{input: "x", output: "y", 1: "z"}]}}',
     "checks[1].params.cases[0].1", "unknown key (known: input, output)"),
    ("no-cases",
     "{id: stdio, verifier: ifbench.stdio_tests, params: {cases: []}}",
     "checks[1].params.cases", "must hold at least one case (with none the check can never pass)"),
    ("no-unit-tests",
     "{id: unit, verifier: ifbench.unit_tests, params: {tests: []}}",
     "checks[1].params.tests", "must hold at least one test (with none the check can never pass)"),
    ("word-count-min-above-max",
     "{id: words, verifier: ifbench.word_count, params: {min: 10, max: 2}}",
     "checks[1].params.min", "must be <= max (2), got 10"),
    ("word-count-min-above-default-max",
     "{id: words, verifier: ifbench.word_count, params: {min: 2000000000}}",
     "checks[1].params.min", "must be <= max (1000000000), got 2000000000"),
]


@pytest.mark.parametrize(("check", "field", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_params_are_a_collection_error_naming_file_instance_and_field(pytester, check, field, message):
    write_suite(pytester.path, "suites/bad.yaml", SUITE.format(check=check))
    result = pytester.runpytest("suites", "--model=openai/x")
    out = result.stdout.str()
    assert "ERROR collecting suites/bad.yaml" in out, out
    assert f"suites/bad.yaml: instance 'echo-upper': {field}: {message}" in out, out
    assert "Traceback" not in out
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_the_auditors_suite_is_refused_at_collection(pytester):
    """The audit's repro: a misspelt stdio key and an impossible word count, in one instance."""
    write_suite(pytester.path, "suites/stdio_typo.yaml", """
        ifbench: 1
        benchmark: a
        instances:
          - id: echo-upper
            prompt: Write a Python program that prints its stdin line upper-cased.
            checks:
              - {id: stdio, verifier: ifbench.stdio_tests, params: {cases: [{input: "hi\\n", expected_output: "HI"}]}}
              - {id: words, verifier: ifbench.word_count, params: {min: 10, max: 2}}
    """)
    result = pytester.runpytest("suites", "--collect-only", "-q")
    out = result.stdout.str()
    assert ("suites/stdio_typo.yaml: instance 'echo-upper': checks[0].params.cases[0].expected_output: "
            "unknown key (known: input, output)") in out, out
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_well_formed_cases_and_bounds_still_collect(pytester):
    write_suite(pytester.path, "suites/good.yaml", """
        ifbench: 1
        benchmark: demo
        instances:
          - id: echo-upper
            prompt: Print stdin upper-cased.
            checks:
              - id: stdio
                verifier: ifbench.stdio_tests
                params:
                  cases:
                    - {input: "hello\\n", output: "HELLO"}
                    - {input: "", output: ""}
                    - input: |
                        a
                        b
                      output: |
                        A
                        B
              - {id: unit, verifier: ifbench.unit_tests, params: {tests: ["assert True"]}}
              - {id: exact, verifier: ifbench.word_count, params: {min: 5, max: 5}}
              - {id: floor, verifier: ifbench.word_count, params: {min: 3}}
              - {id: ceiling, verifier: ifbench.word_count, params: {max: 0}}
    """)
    result = pytester.runpytest("suites", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["suites/good.yaml::echo-upper"])
    assert result.ret == pytest.ExitCode.OK


def test_ifbench_verify_names_the_bad_field(tmp_path, capsys):
    lines = [
        {"verifier": "ifbench.word_count", "params": {"min": 3, "max": 1}, "response": "a b"},
        {"verifier": "ifbench.stdio_tests", "params": {"cases": [{"input": "x", "stdout": "X"}]},
         "response": "print(input().upper())"},
    ]
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert main(["verify", "--in", str(path)]) == 1
    errors = [json.loads(line)["error"] for line in capsys.readouterr().out.splitlines()]
    assert errors == ["line 1: params.min: must be <= max (1), got 3",
                      "line 2: params.cases[0].stdout: unknown key (known: input, output)"]
