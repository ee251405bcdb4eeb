"""run_stdio_tests: one child per stdin/stdout case, outputs compared after normalisation."""

from __future__ import annotations

from pytest_ifbench.sandbox import SandboxLimits, run_stdio_tests
from tests.sandbox._support import FAST

STDIO_CODE = """
import sys
a, b = map(int, sys.stdin.read().split())
print(a + b, '   ')
print()
"""


def test_stdio_tests_pass_and_fail_with_diff():
    cases = [
        {"input": "1 2\n", "output": "3\n"},
        {"input": "10 20", "output": "30"},
        {"input": "2 2\n", "output": "5\n"},
        {"input": "oops\n", "output": "0\n"},
    ]
    run = run_stdio_tests(STDIO_CODE, cases, limits=FAST)
    assert [o.name for o in run.outcomes] == ["case_0", "case_1", "case_2", "case_3"]
    assert [o.passed for o in run.outcomes] == [True, True, False, False]
    msg = run.outcomes[2].message
    assert "expected '5', got '4'" in msg
    assert "-5" in msg and "+4" in msg
    assert "runtime error" in run.outcomes[3].message and "ValueError" in run.outcomes[3].message
    assert run.load_error is None
    assert not run.passed
    assert run.summary().startswith("2/4 tests passed; case_2: wrong output")


def test_stdio_all_pass_and_timeout():
    run = run_stdio_tests(STDIO_CODE, [{"input": "1 1", "output": "2"}] * 3, limits=FAST)
    assert run.passed, run.summary()
    assert run.result.ok
    run = run_stdio_tests("while True:\n    pass\n", [{"input": "", "output": ""}],
                          limits=SandboxLimits(timeout=1.0))
    assert not run.passed
    assert run.result.limit == "timeout"
    assert "timeout" in run.outcomes[0].message


def test_stdio_syntax_error_is_load_error():
    run = run_stdio_tests("print(", [{"input": "", "output": ""}, {"input": "", "output": "x"}], limits=FAST)
    assert run.load_error is not None and "SyntaxError" in run.load_error
    assert not run.passed
    assert all(not o.passed for o in run.outcomes)
