"""run_process: the supervision primitive under every front end (explicit argv, cwd, env)."""

from __future__ import annotations

import json
import os
import sys
import time

from pytest_ifbench.sandbox import SandboxLimits
from pytest_ifbench.sandbox._process import Completed, ResultPipe, minimal_env, run_process
from tests.sandbox._support import live_group_members


def _py(code: str) -> list[str]:
    return [sys.executable, "-s", "-P", "-B", "-c", code]


def test_timeout_kills_the_whole_process_tree(tmp_path):
    # The leader forks a child that forks a grandchild; all three sleep and hold stdout open.
    code = (
        "import os, time\n"
        "print(os.getpgrp(), flush=True)\n"
        "if os.fork() == 0:\n"
        "    os.fork()\n"
        "time.sleep(60)\n"
    )
    limits = SandboxLimits(timeout=1.0)
    t0 = time.monotonic()
    done = run_process(_py(code), cwd=str(tmp_path), env=minimal_env(str(tmp_path)), limits=limits)
    assert isinstance(done, Completed)
    assert time.monotonic() - t0 < limits.timeout + 1.5
    assert done.result.limit == "timeout" and done.result.returncode is None
    pgid = int(done.result.stdout.split()[0])
    assert live_group_members(pgid) == []


def test_stragglers_are_killed_when_the_leader_exits(tmp_path):
    code = (
        "import os, time\n"
        "print(os.getpgrp(), flush=True)\n"
        "if os.fork() == 0:\n"
        "    time.sleep(60)\n"
        "    os._exit(0)\n"
    )
    t0 = time.monotonic()
    done = run_process(_py(code), cwd=str(tmp_path), env=minimal_env(str(tmp_path)),
                       limits=SandboxLimits(timeout=10.0))
    assert time.monotonic() - t0 < 4.0  # did not wait for the sleeper holding stdout
    assert done.result.returncode == 0 and done.result.limit is None
    assert live_group_members(int(done.result.stdout.split()[0])) == []


def test_cwd_env_and_stdin_are_exactly_what_was_given(tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = {**minimal_env(str(workspace)), "IFBENCH_PROBE": "1"}
    code = "import os, sys, json\nprint(json.dumps([os.getcwd(), dict(os.environ), sys.stdin.read()]))"
    done = run_process(_py(code), cwd=str(workspace), env=env, limits=SandboxLimits(timeout=10.0),
                       stdin="piped\ninput")
    assert done.result.ok, done.result.stderr
    cwd, child_env, stdin = json.loads(done.result.stdout)
    assert cwd == os.path.realpath(workspace)
    assert child_env == env
    assert stdin == "piped\ninput"
    assert done.channel == b""


def test_the_working_directory_persists_across_commands(tmp_path):
    """Supervision never creates or removes the cwd: the seam for a persistent workspace."""
    env, limits = minimal_env(str(tmp_path)), SandboxLimits(timeout=10.0)
    first = run_process(["sh", "-c", "echo state > note.txt"], cwd=str(tmp_path), env=env, limits=limits)
    assert first.result.ok, first.result.stderr
    second = run_process(["sh", "-c", "cat note.txt"], cwd=str(tmp_path), env=env, limits=limits)
    assert second.result.ok and second.result.stdout == "state\n"
    assert (tmp_path / "note.txt").read_text() == "state\n"


def test_result_pipe_is_separate_from_stdout_and_closed_afterwards(tmp_path):
    with ResultPipe(1 << 16) as pipe:
        code = f"import os\nprint('to stdout')\nos.write({pipe.write_fd}, b'to the pipe')"
        done = run_process(_py(code), cwd=str(tmp_path), env=minimal_env(str(tmp_path)),
                           limits=SandboxLimits(timeout=10.0), result_pipe=pipe)
        assert pipe.read_fd == -1 and pipe.write_fd == -1
    assert done.result.ok, done.result.stderr
    assert done.result.stdout == "to stdout\n"
    assert done.channel == b"to the pipe"


def test_output_cap_kills_the_child(tmp_path):
    limits = SandboxLimits(timeout=10.0, max_output_bytes=5_000)
    t0 = time.monotonic()
    done = run_process(_py("while True:\n    print('y' * 100)"), cwd=str(tmp_path),
                       env=minimal_env(str(tmp_path)), limits=limits)
    assert time.monotonic() - t0 < 5.0
    assert done.result.limit == "output" and done.result.returncode is None
    assert len(done.result.stdout.encode()) == limits.max_output_bytes
