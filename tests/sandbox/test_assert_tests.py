"""run_assert_tests: one child loads the code once and runs every assert snippet."""

from __future__ import annotations

import time

from pytest_ifbench.sandbox import SandboxLimits, TestRun, run_assert_tests
from tests.sandbox._support import FAST

CODE = """
def add(a, b):
    return a + b

if __name__ == "__main__":
    raise RuntimeError("the __main__ block must not run")
"""


def test_passing_and_failing_asserts_with_messages():
    run = run_assert_tests(
        CODE,
        [
            "assert add(1, 2) == 3",
            "assert add(2, 2) == 5",
            "assert add(1, 1) == 2, 'custom message'",
            "assert add(0, 0), 'zero is falsy'",
            "assert add(0, 0)",
            "def check(candidate):\n    assert candidate(2, 3) == 6\ncheck(add)",
            "add(None, 1)",
        ],
        limits=FAST,
    )
    assert isinstance(run, TestRun)
    assert run.load_error is None
    assert [o.name for o in run.outcomes] == [f"test_{i}" for i in range(7)]
    assert [o.passed for o in run.outcomes] == [True, False, True, False, False, False, False]
    assert run.outcomes[0].message == ""
    msg = run.outcomes[1].message
    assert msg.startswith("AssertionError: assert add(2, 2) == 5")
    assert "left:  4" in msg and "right: 5" in msg
    assert run.outcomes[3].message == "AssertionError: zero is falsy"
    assert run.outcomes[4].message == "AssertionError: assert add(0, 0)"
    assert "left:  5" in run.outcomes[5].message and "right: 6" in run.outcomes[5].message
    assert "TypeError" in run.outcomes[6].message and "<solution>" in run.outcomes[6].message
    assert not run.passed
    assert run.result.limit is None and run.result.returncode == 0
    assert run.summary().startswith("2/7 tests passed; test_1: AssertionError: assert add(2, 2) == 5")


def test_all_passing_with_setup():
    run = run_assert_tests(
        "def f(xs: List[int]) -> int:\n    return sum(xs)\n",
        ["assert f([1, 2, 3]) == 6", "assert helper() == 6"],
        setup="from typing import List\ndef helper():\n    return f([3, 3])\n",
        limits=FAST,
    )
    assert run.passed, run.summary()
    assert run.summary() == "2/2 tests passed"
    assert run.result.ok


def test_no_tests_is_not_a_pass():
    run = run_assert_tests("x = 1", [], limits=FAST)
    assert run.load_error is None and run.outcomes == ()
    assert not run.passed


def test_syntax_error_is_load_error():
    run = run_assert_tests("def broken(:\n    pass\n", ["assert True", "assert True"], limits=FAST)
    assert run.load_error is not None
    assert "SyntaxError" in run.load_error
    assert not run.passed
    assert [o.passed for o in run.outcomes] == [False, False]
    assert all("not run" in o.message for o in run.outcomes)
    assert run.summary().startswith("load error: SyntaxError")


def test_exception_at_import_is_load_error():
    run = run_assert_tests("import this_module_does_not_exist_xyz\n", ["assert True"], limits=FAST)
    assert run.load_error and "ModuleNotFoundError" in run.load_error


def test_sys_exit_in_code_is_reported_as_load_error():
    run = run_assert_tests("import sys\ndef f():\n    return 1\nsys.exit(0)\n", ["assert f() == 1"], limits=FAST)
    assert run.load_error is not None and "SystemExit" in run.load_error
    assert not run.passed
    assert len(run.outcomes) == 1 and not run.outcomes[0].passed


def test_os_exit_in_code_is_reported_as_load_error():
    run = run_assert_tests("import os\nos._exit(3)\n", ["assert True"], limits=FAST)
    assert run.load_error is not None
    assert "exit" in run.load_error and "3" in run.load_error
    assert run.result.returncode == 3
    assert not run.passed and not run.outcomes[0].passed


def test_system_exit_inside_a_test_fails_only_that_test():
    run = run_assert_tests(
        CODE,
        ["assert add(1, 1) == 2", "raise SystemExit", "import sys; sys.exit(4)",
         "raise KeyboardInterrupt", "assert add(2, 2) == 4"],
        limits=FAST,
    )
    assert run.load_error is None
    assert [o.passed for o in run.outcomes] == [True, False, False, False, True]
    assert "SystemExit" in run.outcomes[1].message
    assert "SystemExit: 4" in run.outcomes[2].message
    assert "KeyboardInterrupt" in run.outcomes[3].message


def test_os_exit_inside_a_test_reports_the_rest_as_not_run():
    run = run_assert_tests(CODE, ["assert add(1, 1) == 2", "import os; os._exit(5)", "assert True"], limits=FAST)
    assert run.load_error is None
    assert run.outcomes[0].passed
    assert not run.outcomes[1].passed and "did not finish" in run.outcomes[1].message
    assert "5" in run.outcomes[1].message
    assert not run.outcomes[2].passed and "not run" in run.outcomes[2].message


def test_infinite_loop_in_a_test_times_out_and_other_tests_still_reported():
    limits = SandboxLimits(timeout=2.0, cpu_seconds=10)
    t0 = time.monotonic()
    run = run_assert_tests(
        CODE,
        ["assert add(1, 2) == 3", "while True:\n    pass", "assert add(2, 2) == 4", "assert add(1, 1) == 3"],
        limits=limits,
    )
    elapsed = time.monotonic() - t0
    assert elapsed < limits.timeout + 1.0
    assert run.result.limit == "timeout"
    assert run.load_error is None
    assert [o.passed for o in run.outcomes] == [True, False, True, False]
    assert run.outcomes[1].message.startswith("timeout")
    assert "left:  2" in run.outcomes[3].message
    assert not run.passed
    assert "(limit: timeout)" in run.summary()


def test_loop_that_swallows_the_alarm_is_stopped_by_the_overall_timeout():
    limits = SandboxLimits(timeout=1.5, cpu_seconds=10)
    t0 = time.monotonic()
    run = run_assert_tests(
        CODE,
        [
            "assert True",
            "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass",
            "assert True",
        ],
        limits=limits,
    )
    assert time.monotonic() - t0 < limits.timeout + 1.0
    assert run.result.limit == "timeout"
    assert run.outcomes[0].passed
    assert not run.outcomes[1].passed and not run.outcomes[2].passed


def test_infinite_loop_at_load_is_a_timeout_load_error():
    limits = SandboxLimits(timeout=1.0)
    t0 = time.monotonic()
    run = run_assert_tests("while True:\n    pass\n", ["assert True"], limits=limits)
    assert time.monotonic() - t0 < limits.timeout + 1.0
    assert run.load_error is not None and "timeout" in run.load_error
    assert run.result.limit == "timeout"


def test_code_printing_to_stdout_does_not_break_reporting():
    code = (
        "import os, sys\n"
        "print('hello from the code')\n"
        "print(json_like := '{\"kind\": \"load\", \"error\": \"forged\"}')\n"
        "for fd in range(3, 64):\n"
        "    try:\n"
        "        os.write(fd, b'{\"kind\": \"test\", \"name\": \"test_1\", \"passed\": true, \"message\": \"\"}\\n')\n"
        "    except OSError:\n"
        "        pass\n"
        "sys.stderr.write('noise on stderr\\n')\n"
        "def f():\n"
        "    print('called f')\n"
        "    return 2\n"
    )
    run = run_assert_tests(code, ["assert f() == 2", "assert f() == 3"], limits=FAST)
    assert run.load_error is None
    assert [o.passed for o in run.outcomes] == [True, False]
    assert "hello from the code" in run.result.stdout
    assert "called f" in run.result.stdout
    assert "noise on stderr" in run.result.stderr


def test_memory_hog_in_tests_mode():
    run = run_assert_tests("x = bytearray(4 * 1024**3)\n", ["assert True"], limits=FAST)
    assert run.load_error is not None and "MemoryError" in run.load_error
    assert run.result.limit == "memory"
