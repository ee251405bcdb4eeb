"""One run at a time writes a results file.

Two runs given the same ``--ifbench-results`` in the same directory -- a shard re-run started while the
first attempt still runs, two terminals, a CI retry on a runner that kept its workspace -- shared its
journal (each truncated the other's) and its temporary file: both exited normally and left invalid JSON,
every record of both lost, nothing said. A run now holds an exclusive ``flock`` on ``<results>.lock``
from its start to its end; a second run stops at start-up with a usage error naming the first (host, pid,
since when), before it pays for anything. A killed run's lock goes with its process, so its re-run is
never refused. The file is removed at the end; a run that finds the name pointing to another file once it
holds the lock (the holder removed it in between) tries again, so two runs never hold two locks.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path

__all__ = ["ResultsInUse", "ResultsLock", "lock_path"]


class ResultsInUse(RuntimeError):
    """Another live run writes the same results file."""


def lock_path(results: Path) -> Path:
    """``ifbench-results.json`` -> ``ifbench-results.json.lock`` (beside it)."""
    return results.with_name(results.name + ".lock")


class ResultsLock:
    """The exclusive lock on a results file for the length of a run."""

    def __init__(self, results: Path) -> None:
        self.results = results
        # beside the file itself: a symlink to it and the file are one results file
        self.path = lock_path(Path(os.path.realpath(results)))
        self._fd = -1

    def acquire(self) -> bool:
        """Take the lock: True; False when none can be taken here (a directory that cannot be written, a
        filesystem without ``flock``), and the run goes on unlocked -- a results file that cannot be written
        says so itself. Raises :class:`ResultsInUse` saying who holds it."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = self._locked()
        except OSError:  # (ResultsInUse is no OSError: it goes to the caller)
            return False
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
        text = f"pid {os.getpid()} on {socket.gethostname()}, since {started}".encode()
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, text, 0)
        except OSError:  # opened read-only: the lock holds, a second run names no holder
            pass
        self._fd = fd
        return True

    def _locked(self) -> int:
        """A descriptor of the lock file, locked."""
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except PermissionError:  # another user's lock file: a lock needs no write access to it
                fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 512, 0).decode("utf-8", "replace").strip() or "another process"
                os.close(fd)
                raise ResultsInUse(f"the results file {self.results} is being written by another run ({holder}): "
                                   "let it finish, or give this run another --ifbench-results") from None
            except OSError:
                os.close(fd)
                raise
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)  # the holder removed the file between our open and our lock: its lock is not ours

    def release(self) -> None:
        """Remove the file and let the lock go (at the run's end)."""
        if self._fd < 0:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)
            self._fd = -1
