"""A kernel-enforced disk quota for a run's directories: a size-capped tmpfs mounted at the run's root.

The disk budget's watchdog (``_namespaces.Watch``) walks the tree every 0.5 s or more: between two
walks eight parallel ``fallocate -l 500M`` put 4 GB in a 1 GiB workspace.  A tmpfs of about the
budget at the run's root makes the kernel refuse the overshoot (``ENOSPC``) instead.  Mounting
needs root on the host, so a backend mounts one when it can (``available()``) and keeps the
watchdog either way (it still reports ``limit="disk"`` and stops a command that stays over).
Files likewise: one command making empty files made 642,570 of them between two walks, past the
200,000-entry cap (``Limits.max_workspace_entries``), so the tmpfs has a quarter more inodes than the cap
(:func:`quota_inodes`) and the kernel refuses the rest (``ENOSPC``, "No space left on device": the disk limit).

A process killed with ``-9`` (an interrupted run, to be resumed from the cache) cannot unmount its
quotas, so each mount records its owner at the root (:data:`OWNER`: host, pid and the pid's start
time) and a process's first quota in a directory releases the ones there whose owner is gone.  Code
runs live in a directory of their process's own (:data:`CODE_RUNS`, ``_code_runs.CodeRuns``), which no
other process looks in: so a process's first quota in one releases those of the other such directories
beside it too (:func:`reap_stale_code_runs`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..backend import Limits, SandboxUnavailable
from ._process_identity import ended, identity

#: The quota's margin over the budget, so the watchdog still sees (and reports) the overshoot.
SLACK = 16 << 20
#: The entry cap the quota's inodes are sized from.  Only the default: a command's own
#: ``Limits.max_workspace_entries`` does not reach the quota (``resize`` is given bytes only).
MAX_ENTRIES = Limits().max_workspace_entries
#: Inodes on top of the entry cap and its quarter: the quota's root, :data:`OWNER`, the run's directories...
INODE_SLACK = 1024
#: The prefix of the directory a process's code runs live in (``_code_runs.CodeRuns``, in the temp dir).
CODE_RUNS = "ifbench-code-"
#: At a quota's root, beside the run's directories (never shown inside): who mounted it.
OWNER = ".ifbench-quota-owner"
#: The tmpfs source name every quota is mounted with (what ``reap_stale`` looks for).
SOURCE = "ifbench-ws"
_swept: set[str] = set()  # directories whose stale quotas this process has released


def available() -> bool:
    """Whether this process can mount a tmpfs (root, and a ``mount`` binary)."""
    return os.geteuid() == 0 and shutil.which("mount") is not None


def quota_bytes(budget: int) -> int:
    """The tmpfs size for a disk budget of ``budget`` bytes: a quarter more, plus :data:`SLACK`."""
    return budget + budget // 4 + SLACK


def quota_inodes(entries: int) -> int:
    """The tmpfs inode count for an entry cap of ``entries``: a quarter more, plus :data:`INODE_SLACK`, so
    the watchdog still sees (and reports) the overshoot.  On a tmpfs a hard link takes an inode too."""
    return entries + entries // 4 + INODE_SLACK


class TmpfsQuota:
    """A size-capped tmpfs at ``root`` (empty when mounted); grows or shrinks with the budget."""

    __slots__ = ("root", "size")

    def __init__(self, root: Path, budget: int) -> None:
        self.root = root
        self.size = 0
        parent = root.parent
        if str(parent) not in _swept:
            _swept.add(str(parent))
            reap_stale(parent)
            beside = os.path.join(parent.parent, f"{CODE_RUNS}*")
            if parent.name.startswith(CODE_RUNS) and beside not in _swept:
                _swept.add(beside)
                reap_stale_code_runs(parent.parent)
        self.resize(budget)

    def resize(self, budget: int) -> None:
        """Make the quota fit ``budget``; a first mount that fails raises :class:`SandboxUnavailable`,
        a later resize that fails (e.g. shrinking below what is stored) keeps the current size."""
        want = quota_bytes(budget)
        if want == self.size:
            return
        # A remount keeps the inode count (the kernel refuses one below the inodes in use anyway).
        option = f"size={want},nr_inodes={quota_inodes(MAX_ENTRIES)}" if not self.size else f"remount,size={want}"
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"{option},mode=0755", SOURCE, str(self.root)],
                              capture_output=True, text=True, check=False)
        if done.returncode == 0:
            if not self.size:
                (self.root / OWNER).write_text(json.dumps(identity(os.getpid())))
            self.size = want
        elif not self.size:
            raise SandboxUnavailable(f"cannot mount the workspace quota (a tmpfs): {done.stderr.strip()}")

    def release(self, *, keep: bool) -> None:
        """Unmount; with ``keep`` the contents are first copied out and put back at ``root`` on disk."""
        if not self.size:
            return
        root = str(self.root)
        saved = None
        if keep:
            saved = tempfile.mkdtemp(prefix="ifbench-kept-", dir=os.path.dirname(root))
            subprocess.run(["cp", "-a", f"{root}/.", saved], capture_output=True, check=False)
            Path(saved, OWNER).unlink(missing_ok=True)  # the owner record goes with the mount
        subprocess.run(["umount", "-l", root], capture_output=True, check=False)
        self.size = 0
        if saved is not None:
            for entry in os.listdir(saved):
                os.rename(os.path.join(saved, entry), os.path.join(root, entry))
            os.rmdir(saved)


def reap_stale(parent: Path) -> list[str]:
    """Unmount and remove the quotas mounted at directories of ``parent`` whose owner (:data:`OWNER`)
    is a process of this host that is gone; the released roots. A quota without an owner record (or
    another host's, or a live process's) is left alone."""
    released = []
    for root in _quota_mounts(parent):
        try:
            owner = json.loads((Path(root) / OWNER).read_text())
            start = owner["start"]
            if not ended(str(owner["host"]), int(owner["pid"]), None if start is None else int(start)):
                continue
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if subprocess.run(["umount", "-l", root], capture_output=True, check=False).returncode == 0:
            shutil.rmtree(root, ignore_errors=True)
            released.append(root)
    return released


def reap_stale_code_runs(directory: Path) -> list[str]:
    """:func:`reap_stale` in each :data:`CODE_RUNS` directory of ``directory`` holding a quota; such a directory
    it empties goes too (a dead process's).  The released roots."""
    here = os.path.realpath(directory)
    released = []
    for parent in sorted({os.path.dirname(point) for point in _mount_points()}):
        if os.path.dirname(parent) != here or not os.path.basename(parent).startswith(CODE_RUNS):
            continue
        gone = reap_stale(Path(parent))
        released += gone
        if gone:
            try:
                os.rmdir(parent)  # only when empty: a live process's quota there keeps it
            except OSError:
                pass
    return released


def _quota_mounts(parent: Path) -> list[str]:
    """Mount points of our tmpfs quotas directly in ``parent`` (from ``/proc/self/mountinfo``)."""
    directory = os.path.realpath(parent)  # as the kernel writes it
    return [point for point in _mount_points() if os.path.dirname(point) == directory]


def _mount_points() -> list[str]:
    """Mount points of our tmpfs quotas (from ``/proc/self/mountinfo``)."""
    found: list[str] = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return found
    for line in lines:
        mine, _, theirs = line.partition(" - ")
        fields, rest = mine.split(), theirs.split()
        if len(fields) < 5 or len(rest) < 2 or rest[:2] != ["tmpfs", SOURCE]:
            continue
        found.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4]))  # octal escapes (space...)
    return found

