"""run_python: scripts run as __main__ in a throwaway directory, under the sandbox's limits."""

from __future__ import annotations

import json
import time

import pytest

from pytest_ifbench.sandbox import SandboxLimits, SandboxResult, run_python
from tests.sandbox._support import FAST


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
    src = "import sys; print(hash('abc'), list({'a', 'b', 'c', 'd', 'e'}), sys.flags.hash_randomization)"
    first, second = run_python(src, limits=FAST), run_python(src, limits=FAST)
    assert first.ok and second.ok, (first.stderr, second.stderr)
    assert first.returncode == 0 and first.stdout.strip().endswith(" 0")  # PYTHONHASHSEED=0 took effect
    assert first.stdout == second.stdout


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


def test_written_files_land_in_the_sandboxs_own_directory(tmp_path):
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
        "except OSError as e:\n"
        "    print('DENIED', type(e).__name__)\n"
    )
    res = run_python(code, limits=FAST)
    assert res.ok, res.stderr
    written, cwd, verdict = res.stdout.splitlines()
    assert cwd == "/workspace" and written == "/workspace/out.txt"
    assert verdict.startswith("DENIED")  # the host's /tmp is not the sandbox's
    assert not outside.exists()


def test_disk_use_is_capped_by_the_kernel():
    code = (
        "import errno\n"
        "for where in ('/workspace', '/tmp'):\n"
        "    n = 0\n"
        "    try:\n"
        "        while True:\n"
        "            with open(f'{where}/f{n}', 'wb') as fh:\n"
        "                fh.write(b'x' * (1 << 20))\n"
        "            n += 1\n"
        "    except OSError as e:\n"
        "        print(where, n, errno.errorcode[e.errno])\n"
    )
    res = run_python(code, limits=SandboxLimits(timeout=10.0, disk_mb=4, file_size_mb=2))
    assert res.ok, res.stderr
    lines = [line.split() for line in res.stdout.splitlines()]
    assert [line[0] for line in lines] == ["/workspace", "/tmp"]
    assert all(int(n) <= 4 and err == "ENOSPC" for _, n, err in lines), res.stdout


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


def test_the_sandbox_sees_the_interpreters_packages_not_its_environments_scripts():
    """A virtual environment's ``bin/activate`` is where a key is often exported, and a project's ``.env`` sits
    beside it: sandboxed code read both while the whole environment was bound. Now only its library
    directories, ``pyvenv.cfg`` and the interpreter are: its packages still import."""
    import os
    import sys

    code = ("import os, sys, yaml\n"
            "print(sorted(p for p in ('bin/activate', 'bin/pip', 'pyvenv.cfg', 'lib') "
            "if os.path.exists(os.path.join(sys.prefix, p))), yaml.safe_load('a: 1'))\n")
    result = run_python(code, limits=FAST)
    assert result.returncode == 0, result.stderr
    shown = ["lib", "pyvenv.cfg"] if sys.prefix != sys.base_prefix else ["lib"]
    assert result.stdout.strip() == f"{shown} {{'a': 1}}"
    assert os.path.exists(os.path.join(sys.prefix, "bin", "pip")), "the host's environment has them"
