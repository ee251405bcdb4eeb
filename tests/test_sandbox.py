"""Tests for pytest_ifbench.sandbox: model code never runs in this process."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import pytest

try:
    from pytest_ifbench import sandbox
except ImportError:  # running from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from pytest_ifbench import sandbox

from pytest_ifbench.sandbox import (
    SandboxLimits,
    SandboxResult,
    TestRun,
    run_assert_tests,
    run_python,
    run_stdio_tests,
)

FAST = SandboxLimits(timeout=5.0, cpu_seconds=5)


def _live_group_members(pgid: int) -> list[int]:
    """Pids of non-zombie processes in process group ``pgid``."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    # kill() also "finds" zombies that an init process has not reaped yet.
    live = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            live.append(int(entry))
    return live


# --------------------------------------------------------------------------
# run_assert_tests
# --------------------------------------------------------------------------

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


# --------------------------------------------------------------------------
# run_python
# --------------------------------------------------------------------------


def test_run_python_basic_stdin_and_main():
    res = run_python(
        "import sys\nif __name__ == '__main__':\n    data = sys.stdin.read()\n    print(data.upper(), end='')\n",
        stdin="hello\nworld\n",
        limits=FAST,
    )
    assert isinstance(res, SandboxResult)
    assert res.ok and res.returncode == 0 and res.limit is None
    assert res.stdout == "HELLO\nWORLD\n"
    assert res.duration > 0


def test_run_python_uncaught_exception_and_exit_codes():
    res = run_python("raise ValueError('boom')", limits=FAST)
    assert res.returncode == 1 and not res.ok
    assert "ValueError: boom" in res.stderr
    assert "ifbench-harness" not in res.stderr
    assert run_python("import sys; sys.exit(7)", limits=FAST).returncode == 7
    assert run_python("import os; os._exit(3)", limits=FAST).returncode == 3


def test_hash_seed_is_deterministic():
    src = "print(hash('abc'), list({'a', 'b', 'c', 'd', 'e'}))"
    assert run_python(src, limits=FAST).stdout == run_python(src, limits=FAST).stdout


def test_run_python_wall_clock_timeout():
    limits = SandboxLimits(timeout=1.0)
    t0 = time.monotonic()
    res = run_python("import time\nprint('started', flush=True)\ntime.sleep(60)", limits=limits)
    assert time.monotonic() - t0 < limits.timeout + 1.0
    assert res.limit == "timeout"
    assert res.returncode is None
    assert not res.ok
    assert res.stdout == "started\n"


def test_cpu_limit():
    res = run_python("while True:\n    pass", limits=SandboxLimits(timeout=5.0, cpu_seconds=1))
    assert res.limit == "cpu"
    assert res.duration < 4.0


def test_memory_hog_raises_memory_error():
    res = run_python("x = bytearray(4 * 1024**3)\nprint('allocated')", limits=FAST)
    assert "MemoryError" in res.stderr
    assert "allocated" not in res.stdout
    assert res.limit == "memory"
    assert res.returncode == 1


def test_fork_bomb_is_stopped_and_leaves_no_processes():
    res = run_python("import os\nprint(os.getpgrp(), flush=True)\nwhile True:\n    os.fork()\n", limits=FAST)
    assert not res.ok
    assert "PermissionError" in res.stderr
    pgid = int(res.stdout.split()[0])
    assert _live_group_members(pgid) == []
    assert res.duration < FAST.timeout


def test_subprocess_module_is_blocked_by_default():
    res = run_python(
        "import subprocess\nsubprocess.run(['true'])\n", limits=FAST)
    assert res.returncode == 1 and "PermissionError" in res.stderr
    res = run_python("import os\nos.system('true')\n", limits=FAST)
    assert res.returncode == 1 and "PermissionError" in res.stderr


@pytest.mark.skipif(os.uname().machine not in ("x86_64", "aarch64"), reason="seccomp filter is x86-64/aarch64 only")
def test_fork_bypassing_the_audit_hook_is_blocked_by_seccomp():
    # A fresh _posixsubprocess instance raises no audit event; the kernel filter must stop it.
    code = """
import sys, os, importlib.util
spec = importlib.util.find_spec('_posixsubprocess')
sys.modules.pop('_posixsubprocess', None)
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
r, w = os.pipe()
try:
    pid = m.fork_exec([b'/bin/true'], [b'/bin/true'], True, (), None, None, -1, -1, -1, -1, -1, -1,
                      r, w, False, False, -1, None, None, None, -1, None, False)
    print('FORKED', pid)
except OSError as e:
    print('BLOCKED', e.errno)
"""
    res = run_python(code, limits=FAST)
    assert res.stdout.startswith("BLOCKED"), (res.stdout, res.stderr)


def test_allowed_subprocesses_are_killed_with_the_group():
    code = (
        "import os, time\n"
        "print(os.getpgrp(), flush=True)\n"
        "for _ in range(3):\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(60)\n"
        "        os._exit(0)\n"
    )
    t0 = time.monotonic()
    res = run_python(code, limits=SandboxLimits(timeout=5.0, allow_subprocess=True))
    assert time.monotonic() - t0 < 4.0  # did not wait for the sleepers holding stdout
    assert res.returncode == 0
    assert _live_group_members(int(res.stdout.split()[0])) == []


def test_network_is_blocked():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.3)
    port = listener.getsockname()[1]
    try:
        code = f"""
import socket
for attempt in ("create_connection", "raw"):
    try:
        if attempt == "create_connection":
            socket.create_connection(("127.0.0.1", {port}), timeout=2)
        else:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(2)
            s.connect(("127.0.0.1", {port}))
        print(attempt, "CONNECTED")
    except OSError as e:
        print(attempt, "BLOCKED", type(e).__name__)
"""
        res = run_python(code, limits=FAST)
        assert res.stdout.splitlines() == [
            "create_connection BLOCKED PermissionError",
            "raw BLOCKED PermissionError",
        ], res.stderr
        with pytest.raises(socket.timeout):
            conn, _ = listener.accept()
            conn.close()
    finally:
        listener.close()


@pytest.mark.skipif(not sandbox.network_namespace_available(), reason="unshare --net not available here")
def test_network_namespace_blocks_grandchildren_without_the_hook():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.3)
    port = listener.getsockname()[1]
    try:
        inner = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2); print('CONNECTED')"
        code = (
            "import subprocess, sys\n"
            f"p = subprocess.run([sys.executable, '-c', {inner!r}], capture_output=True, text=True)\n"
            "print(p.stdout.strip() or 'FAILED', p.returncode)\n"
        )
        res = run_python(code, limits=SandboxLimits(timeout=5.0, allow_subprocess=True))
        assert res.stdout.startswith("FAILED"), (res.stdout, res.stderr)
        with pytest.raises(socket.timeout):
            conn, _ = listener.accept()
            conn.close()
    finally:
        listener.close()


def test_environment_is_minimal(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    res = run_python("import os, json\nprint(json.dumps(dict(os.environ)))\nprint(os.getcwd())", limits=FAST)
    assert res.ok, res.stderr
    env_line, cwd = res.stdout.splitlines()
    env = json.loads(env_line)
    assert "OPENAI_API_KEY" not in env and "GITHUB_TOKEN" not in env and "PYTHONPATH" not in env
    assert not [k for k in env if k.endswith(("_KEY", "_TOKEN", "_SECRET"))]
    assert "secret" not in res.stdout
    assert env["HOME"] == cwd
    assert env["PYTHONHASHSEED"] == "0" and env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["LANG"] == "C.UTF-8" and env["PATH"]


def test_written_files_land_in_temp_dir_which_is_removed(tmp_path):
    outside = tmp_path / "outside.txt"
    code = (
        "import os\n"
        "with open('out.txt', 'w') as fh:\n"
        "    fh.write('data')\n"
        "os.makedirs('sub/dir')\n"
        "print(os.path.realpath('out.txt'))\n"
        "print(os.getcwd())\n"
        "try:\n"
        f"    open({str(outside)!r}, 'w').write('escaped')\n"
        "    print('WROTE OUTSIDE')\n"
        "except PermissionError:\n"
        "    print('DENIED')\n"
    )
    res = run_python(code, limits=FAST)
    assert res.ok, res.stderr
    written, cwd, verdict = res.stdout.splitlines()
    assert written == os.path.join(cwd, "out.txt")
    assert verdict == "DENIED"
    assert not outside.exists()
    assert not os.path.exists(cwd)
    assert not os.path.exists(written)


def test_files_are_readable():
    res = run_python(
        "print(open('input.txt').read().strip())\n"
        "print(open('data/blob.bin', 'rb').read())\n"
        "import helper; print(helper.VALUE)\n",
        files={"input.txt": "some text\n", "data/blob.bin": b"\x00\x01", "helper.py": "VALUE = 42\n"},
        limits=FAST,
    )
    assert res.ok, res.stderr
    assert res.stdout.splitlines() == ["some text", "b'\\x00\\x01'", "42"]
    with pytest.raises(ValueError):
        run_python("pass", files={"../escape.txt": "x"}, limits=FAST)


def test_stdout_flood_is_truncated():
    limits = SandboxLimits(timeout=5.0, max_output_bytes=10_000)
    t0 = time.monotonic()
    res = run_python("while True:\n    print('x' * 100)\n", limits=limits)
    assert time.monotonic() - t0 < 3.0
    assert res.limit == "output"
    assert res.returncode is None
    assert 0 < len(res.stdout.encode()) <= limits.max_output_bytes
    assert not res.ok


def test_file_size_limit():
    res = run_python(
        "try:\n    open('big', 'wb').write(b'x' * (3 << 20))\n    print('WROTE')\n"
        "except OSError as e:\n    print('EFBIG', e.errno)\n",
        limits=SandboxLimits(timeout=5.0, file_size_mb=1),
    )
    assert res.stdout.startswith("EFBIG"), (res.stdout, res.stderr)


def test_cannot_signal_the_parent():
    res = run_python(f"import os\nos.kill({os.getpid()}, 0)\n", limits=FAST)
    assert res.returncode == 1 and "PermissionError" in res.stderr


# --------------------------------------------------------------------------
# run_stdio_tests
# --------------------------------------------------------------------------

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
