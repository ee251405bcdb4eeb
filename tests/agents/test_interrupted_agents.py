"""An agent run interrupted with Ctrl-C leaves nothing behind, and makes a workspace only when it can start.

Agent runs wait for one of ``--ifbench-agent-concurrency`` slots. A workspace made before its slot (every
selected instance's at the run's start) holds disk, a tmpfs quota mounted as root, or a container, for as
long as the run lasts; and one cancelled while it waited was never closed, so Ctrl-C left it behind until
the next run's reaper.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_ifbench.sandbox import sandbox_problem
from tests._support import stub_args, write_suite
from tests.agents.test_agent_suite import call, scripted

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")

SUITE = """
ifbench: 1
benchmark: interrupted
defaults:
  protocol: agent
  protocol_options: {max_steps: 8, command_timeout: 20}
instances:
""" + "".join(f"""
  - id: task-{n}
    prompt: Task {n}. Run the steps, then finish.
    checks:
      - {{id: ran, verifier: ifbench.tool_called, params: {{tool: bash}}}}
""" for n in range(6))


def _mounts_under(directory: Path) -> list[str]:
    prefix = os.path.realpath(directory) + "/"
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        return [line.split()[4] for line in fh if line.split()[4].startswith(prefix)]


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def workspaces(pytester):
    """The run's ``--ifbench-workspaces``; whatever the run left mounted there is unmounted afterwards, so
    that pytest can remove its tmp_path when the test fails."""
    directory = pytester.path / "ws"
    directory.mkdir()
    yield directory
    for mount in _mounts_under(directory):
        subprocess.run(["umount", "-l", mount], capture_output=True, check=False)


def test_ctrl_c_leaves_no_workspace_and_workspaces_wait_for_their_slot(pytester, stub_env, workspaces):
    write_suite(pytester.path, "suites/agents.yaml", SUITE)
    steps = [[call("bash", {"command": f"echo step {i}"}, i)] for i in range(1, 6)]
    scripted(stub_env, [*steps, [call("finish", {"answer": "done"}, 9)]])
    stub_env.latency = 0.3
    args = [sys.executable, "-m", "pytest", "suites", *stub_args(stub_env), f"--ifbench-workspaces={workspaces}",
            "--ifbench-agent-concurrency=2", "--ifbench-concurrency=8"]
    proc = subprocess.Popen(args, cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        if not _wait_for(lambda: stub_env.calls >= 4, 60):
            proc.kill()
            pytest.fail(f"the agents did not start ({stub_env.calls} calls):\n{proc.communicate()[0].decode()[-3000:]}")
        made = sorted(p.name for p in workspaces.iterdir())
        assert len(made) <= 2, f"{len(made)} workspaces for 2 agent slots: {made}"
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=60)[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output[-3000:]
    assert _mounts_under(workspaces) == []
    assert sorted(p.name for p in workspaces.iterdir()) == [], output[-3000:]
