"""A kernel-enforced disk quota for a run's directories: a size-capped tmpfs mounted at the run's root.

The disk budget's watchdog (``_namespaces.Watch``) walks the tree every 0.5 s or more: between two
walks eight parallel ``fallocate -l 500M`` put 4 GB in a 1 GiB workspace.  A tmpfs of about the
budget at the run's root makes the kernel refuse the overshoot (``ENOSPC``) instead.  Mounting
needs root on the host, so a backend mounts one when it can (``available()``) and keeps the
watchdog either way (it still reports ``limit="disk"`` and stops a command that stays over).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..backend import SandboxUnavailable

#: The quota's margin over the budget, so the watchdog still sees (and reports) the overshoot.
SLACK = 16 << 20


def available() -> bool:
    """Whether this process can mount a tmpfs (root, and a ``mount`` binary)."""
    return os.geteuid() == 0 and shutil.which("mount") is not None


def quota_bytes(budget: int) -> int:
    """The tmpfs size for a disk budget of ``budget`` bytes: a quarter more, plus :data:`SLACK`."""
    return budget + budget // 4 + SLACK


class TmpfsQuota:
    """A size-capped tmpfs at ``root`` (empty when mounted); grows or shrinks with the budget."""

    __slots__ = ("root", "size")

    def __init__(self, root: Path, budget: int) -> None:
        self.root = root
        self.size = 0
        self.resize(budget)

    def resize(self, budget: int) -> None:
        """Make the quota fit ``budget``; a first mount that fails raises :class:`SandboxUnavailable`,
        a later resize that fails (e.g. shrinking below what is stored) keeps the current size."""
        want = quota_bytes(budget)
        if want == self.size:
            return
        option = f"size={want}" if not self.size else f"remount,size={want}"
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"{option},mode=0755", "ifbench-ws", str(self.root)],
                              capture_output=True, text=True, check=False)
        if done.returncode == 0:
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
        subprocess.run(["umount", "-l", root], capture_output=True, check=False)
        self.size = 0
        if saved is not None:
            for entry in os.listdir(saved):
                os.rename(os.path.join(saved, entry), os.path.join(root, entry))
            os.rmdir(saved)
