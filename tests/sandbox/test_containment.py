"""What sandboxed code may not do: fork, exec, reach the network, signal outsiders -- and no process survives."""

from __future__ import annotations

import os
import socket
import time

import pytest

from pytest_ifbench import sandbox
from pytest_ifbench.sandbox import SandboxLimits, run_python
from tests.sandbox._support import FAST, live_group_members


def test_fork_bomb_is_stopped_and_leaves_no_processes():
    res = run_python("import os\nprint(os.getpgrp(), flush=True)\nwhile True:\n    os.fork()\n", limits=FAST)
    assert not res.ok
    assert "PermissionError" in res.stderr
    pgid = int(res.stdout.split()[0])
    assert live_group_members(pgid) == []
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
    assert live_group_members(int(res.stdout.split()[0])) == []


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


def test_the_parent_is_invisible_and_cannot_be_signalled():
    code = (
        "import os\n"
        "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
        f"os.kill({os.getpid()}, 0)\n"
    )
    res = run_python(code, limits=FAST)
    assert res.returncode == 1 and ("ProcessLookupError" in res.stderr or "PermissionError" in res.stderr)
    assert os.getpid() not in eval(res.stdout)  # its own PID namespace: a handful of small pids
