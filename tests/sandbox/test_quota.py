"""The run's tmpfs quota (``sandbox/backends/_quota.py``): the kernel refuses files past its inode count, and
a process's first quota releases what a killed process left in the code runs' directories beside its own."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_ifbench.sandbox import sandbox_problem
from pytest_ifbench.sandbox.backend import Limits, RunDirs
from pytest_ifbench.sandbox.backends import _quota

NEEDS_SANDBOX = False  # only the command test needs bubblewrap; all need root (a tmpfs mount)

pytestmark = pytest.mark.skipif(not _quota.available(), reason="the kernel quota needs root")


def test_the_quota_refuses_files_past_its_inode_count(tmp_path, monkeypatch):
    """An agent's one command made 642,570 empty files (the cap is 200,000) before the watchdog walked the
    tree again: the tmpfs had no inode limit. It now has a quarter more inodes than the entry cap, kept when
    the quota is resized, and files, directories and links past them are refused with ``ENOSPC``."""
    monkeypatch.setattr(_quota, "MAX_ENTRIES", 400)
    root = tmp_path / "run"
    root.mkdir()
    quota = _quota.TmpfsQuota(root, 1 << 20)
    try:
        made = 0
        with pytest.raises(OSError) as refused:
            for made in range(5000):
                (root / f"f{made}").touch()
        assert refused.value.errno == errno.ENOSPC and 400 < made < 5000, made
        quota.resize(2 << 20)  # a remount
        for make in (lambda p: p.mkdir(), lambda p: p.symlink_to("f0"), lambda p: os.link(root / "f0", p)):
            with pytest.raises(OSError) as refused:
                make(root / "more")
            assert refused.value.errno == errno.ENOSPC
    finally:
        quota.release(keep=False)
    assert not os.path.ismount(root)


def test_a_command_making_files_past_the_inode_count_fails_as_a_full_disk(tmp_path, monkeypatch):
    """However fast the files come (the watchdog is not armed here: no disk budget), the kernel refuses them
    and the command's failure is reported as the disk limit."""
    problem = sandbox_problem()
    if problem is not None:
        pytest.skip(problem)
    from pytest_ifbench.sandbox.backends._bubblewrap import BubblewrapBackend

    monkeypatch.setattr(_quota, "MAX_ENTRIES", 400)
    root = tmp_path / "run"
    root.mkdir()
    uid = 0x3200_0000 + os.getpid() % 0x10000
    dirs = RunDirs(root=root, workspace=root / "workspace", home=root / "home", tmp=root / "tmp", uid=uid, gid=uid)
    run = BubblewrapBackend().open(dirs)
    try:
        for path in (dirs.workspace, dirs.home, dirs.tmp):
            path.mkdir(mode=0o700)
            os.chown(path, uid, uid)
        script = "for i in $(seq 3000); do : > f$i || exit 1; done; echo made"
        res = run.run(("/bin/bash", "-c", script), limits=Limits(timeout=60), env={"PATH": "/usr/bin:/bin"},
                      stdin=None, route=None, extra_ro=(), disk_budget=None)
        assert res.limit == "disk" and "No space left on device" in res.stderr, res
        assert 400 < len(os.listdir(dirs.workspace)) < 3000
    finally:
        run.close()
    assert not os.path.ismount(root)


#: A process that mounts a quota at ARGV[1] and waits to be killed.
HOLD_A_QUOTA = """\
import sys, time
from pathlib import Path
from pytest_ifbench.sandbox.backends._quota import TmpfsQuota
TmpfsQuota(Path(sys.argv[1]), 1 << 20)
print("mounted", flush=True)
time.sleep(60)
"""


def test_the_code_runs_a_killed_process_left_beside_a_new_ones_are_released_and_a_live_ones_kept(tmp_path):
    """Each process's code runs live in a directory of its own (``ifbench-code-*`` in the temp dir), and the
    stale-quota sweep looked only in the new process's, still empty: a ``kill -9``-ed process's quotas were
    never unmounted. A process's first code-run quota now releases those beside its own directory whose owner
    is gone (and the emptied directory); a live process's stay."""
    temp = tmp_path / "temp"
    killed, alive = temp / "ifbench-code-killed" / "run-a", temp / "ifbench-code-alive" / "run-b"
    holders = []
    try:
        for root in (killed, alive):
            root.mkdir(parents=True)
            holders.append(subprocess.Popen([sys.executable, "-c", HOLD_A_QUOTA, str(root)], stdout=subprocess.PIPE,
                                            text=True))
            assert holders[-1].stdout.readline() == "mounted\n"
        holders[0].kill()  # -9
        holders[0].wait()
        assert os.path.ismount(killed) and os.path.ismount(alive)
        mine = temp / "ifbench-code-mine" / "run-c"
        mine.mkdir(parents=True)
        quota = _quota.TmpfsQuota(mine, 1 << 20)
        try:
            assert not killed.parent.exists()  # unmounted, removed, and its emptied directory too
            assert os.path.ismount(alive) and os.path.ismount(mine)
            assert _quota.reap_stale_code_runs(temp) == []  # the living keep theirs
        finally:
            quota.release(keep=False)
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()
        for root in (killed, alive):  # what this test mounted goes, whatever happened
            if os.path.ismount(root):
                subprocess.run(["umount", "-l", str(root)], capture_output=True, check=False)
    assert [Path(p).name for p in _quota._mount_points() if p.startswith(str(temp))] == []
