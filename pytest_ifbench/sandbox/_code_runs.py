"""Model-written code on a sandbox backend other than bubblewrap started directly (e.g. ``docker``).

:mod:`._python` starts the child harness under bubblewrap itself when the process's backend is the
built-in bubblewrap (a fresh tmpfs working directory and uid per run, no host directory at all).  Any
other backend is reached only through its public interface (:mod:`.backend`): this module turns one
harness job into one :meth:`SandboxRun.run <.backend.SandboxRun.run>` command.

Reuse.  Opening a run is the expensive part on a container engine (a container start), a command is
cheap (an exec), and a code benchmark verifies hundreds of programs.  So each backend keeps a small pool of
open runs (:class:`CodeRuns`), one job per run at a time, as many runs as jobs ever ran at once in this
process (the stdio front end runs up to four).  Between two jobs the run's three directories are
emptied in place: the next job finds nothing of the last one, and the backend has already
ended every process of it (its contract).  What the host cannot empty (``/dev/shm``, ``/dev/mqueue``,
System V IPC) the next job looks at first: anything there and the run is closed and the job runs again
in a new one, its time limit counted from then (:data:`._bootstrap.LEFT_BEHIND`).  Each run has a uid
of its own, so ``RLIMIT_NPROC`` is never shared.  The pools are closed at interpreter exit; the docker
backend's start-up reaper removes the containers of a process killed with ``-9``.

The channels.  A backend passes no descriptors, so the job and the report travel as files in the run's
``HOME`` (never the working directory, which must look exactly like bubblewrap's empty tmpfs):

* the job (``.ifbench-job``, read-only) is opened and unlinked by :mod:`._bootstrap` before any
  candidate code exists;
* the report (``.ifbench-report``) is created by the host, owned by root and mode ``0222`` when we are
  root: the sandbox uid may append to it but never read it (the per-run token stays as secret as with
  the pipe), nor change its mode.  The host opens it for reading *before* the command starts, so a
  candidate that unlinks or replaces the file only loses the harness's records (a failed test, never a
  pass).

Limits map one to one (``timeout``, ``cpu_seconds``, ``memory_mb`` as ``RLIMIT_AS``, ``processes``,
``file_size_mb``, ``max_output_bytes``).  ``disk_mb`` caps the working directory and ``/tmp`` together
(twice ``disk_mb``, plus the report) instead of each; ``SandboxLimits.run_memory_mb`` is the whole
run's cgroup memory cap where the backend has one.
"""

from __future__ import annotations

import atexit
import itertools
import os
import stat
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ._bootstrap import LEFT_BEHIND
from ._process import minimal_env
from ._types import SandboxLimits, SandboxResult
from ._workspace import remove_tree
from .backend import HOME, MOUNT, Limits, RunDirs, SandboxBackend, SandboxRun, SandboxUnavailable, venv_python

__all__ = ["CodeRuns", "close_all", "run_job"]

#: The child-side modules' directory (shown read-only) and the entry script.
CHILD_DIR = os.path.dirname(os.path.abspath(__file__))
BOOTSTRAP = os.path.join(CHILD_DIR, "_bootstrap.py")
_JOB = ".ifbench-job"
_REPORT = ".ifbench-report"
#: Room for the report file in the disk budget (the parent reads at most the report cap anyway).
_REPORT_ROOM_MB = 8

_UIDS = itertools.count()


def _run_uid() -> int:
    """A host uid per pooled run: its own range (agent workspaces use 0x2000_0000.., the direct code
    runs 0x3000_0000..), distinct per process and per run."""
    return 0x3100_0000 + (os.getpid() % 0x10000) * 0x100 + next(_UIDS) % 0x100


@dataclass(frozen=True, slots=True, kw_only=True)
class _Slot:
    """One open run of the pool and its directories."""

    dirs: RunDirs
    run: SandboxRun


class CodeRuns:
    """The open runs of one backend, each lent to one job at a time (see the module doc)."""

    def __init__(self, backend: SandboxBackend) -> None:
        self.backend = backend
        self._free: list[_Slot] = []
        self._all: list[_Slot] = []
        self._lock = threading.Lock()
        self._closed = False
        self._parent: str | None = None

    def acquire(self, *, fresh: bool = False) -> _Slot:
        """A free run, else a new one (always a new one when ``fresh``)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the code runs of this backend are closed")
            if self._free and not fresh:
                return self._free.pop()
            if self._parent is None:
                self._parent = tempfile.mkdtemp(prefix="ifbench-code-")
            parent = self._parent
        slot = self._open(parent)
        with self._lock:
            self._all.append(slot)
        return slot

    def _open(self, parent: str) -> _Slot:
        problem = self.backend.problem()
        if problem is not None:
            raise SandboxUnavailable(problem)
        root = Path(tempfile.mkdtemp(prefix="run-", dir=parent)).resolve()
        uid = _run_uid() if os.geteuid() == 0 else os.getuid()
        gid = uid if os.geteuid() == 0 else os.getgid()
        dirs = RunDirs(root=root, workspace=root / "workspace", home=root / "home", tmp=root / "tmp", uid=uid, gid=gid)
        try:
            run = self.backend.open(dirs)
        except BaseException:
            remove_tree(str(root))
            raise
        slot = _Slot(dirs=dirs, run=run)
        try:
            _fresh_dirs(dirs)
        except BaseException:
            self._discard(slot)
            raise
        return slot

    def release(self, slot: _Slot, *, broken: bool = False) -> None:
        """Give ``slot`` back, emptied for the next job; a ``broken`` one (or one that cannot be emptied) is closed."""
        if not broken:
            try:
                _fresh_dirs(slot.dirs)
            except OSError:
                broken = True
        with self._lock:
            if not broken and not self._closed:
                self._free.append(slot)
                return
        self._discard(slot)

    def _discard(self, slot: _Slot) -> None:
        with self._lock:
            if slot in self._all:
                self._all.remove(slot)
        try:
            slot.run.close()
        finally:
            remove_tree(str(slot.dirs.root))

    def close(self) -> None:
        """Close every run (a job still running keeps its own until it is given back)."""
        with self._lock:
            self._closed = True
            slots, self._free = list(self._free), []
        for slot in slots:
            self._discard(slot)
        if self._parent is not None and not self._all:
            remove_tree(self._parent)

    def __len__(self) -> int:
        return len(self._all)


def _fresh_dirs(dirs: RunDirs) -> None:
    """The run's three directories, empty and owned by its uid.  Emptied in place, never made again: a
    backend may hold them open (a container's bind mounts pin the directory itself).

    An interpreter or package below ``/tmp`` (a checkout or virtual environment there) is bound inside
    the run's ``/tmp``: the engine made its mount point in the run's host directory, and deleting that
    directory on the host would unmount it in the container.  So the mount points' directories are kept
    (emptied of anything else); they are root's, the code cannot write there."""
    keep = _mount_points_below_tmp()
    for path in (dirs.workspace, dirs.home, dirs.tmp):
        if not os.path.lexists(path):
            path.mkdir(mode=0o700)
        elif os.path.islink(path) or not path.is_dir():
            raise OSError(f"not a directory any more: {path}")
        os.chmod(path, 0o700)
        kept = _empty(str(path), keep if path == dirs.tmp else ())
        if kept != {e.name for e in os.scandir(path)}:
            raise OSError(f"cannot empty {path}")
        if os.geteuid() == 0:
            os.chown(path, dirs.uid, dirs.gid)


def _mount_points_below_tmp() -> tuple[tuple[str, ...], ...]:
    """The ``extra_ro`` paths of code runs that lie below ``/tmp``, as path components below it."""
    return tuple(tuple(Path(p).relative_to("/tmp").parts) for p in _interpreter()[1]
                 if os.path.normpath(p).startswith("/tmp/"))


def _empty(directory: str, keep: Sequence[tuple[str, ...]]) -> set[str]:
    """Remove everything in ``directory`` but the directories on the way to each path in ``keep``
    (components below it) and the paths themselves; returns the names kept at this level."""
    kept = set()
    with os.scandir(directory) as entries:
        for entry in list(entries):
            below = [k[1:] for k in keep if k and k[0] == entry.name]
            if below and entry.is_dir(follow_symlinks=False):
                kept.add(entry.name)
                if all(below):  # not the mount point itself: empty what else is there
                    _empty(entry.path, below)
            elif () in below:  # a file's mount point (the interpreter, a pyvenv.cfg)
                kept.add(entry.name)
            elif entry.is_dir(follow_symlinks=False):
                remove_tree(entry.path)
            else:
                os.unlink(entry.path)
    return kept


_pools: dict[int, CodeRuns] = {}
_pools_lock = threading.Lock()


def pool_for(backend: SandboxBackend) -> CodeRuns:
    """The (process-wide) pool of ``backend``'s code runs."""
    with _pools_lock:
        pool = _pools.get(id(backend))
        if pool is None or pool.backend is not backend:
            pool = _pools[id(backend)] = CodeRuns(backend)
        return pool


@atexit.register
def close_all() -> None:
    """Close every pool (containers removed, quotas unmounted, directories deleted)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        try:
            pool.close()
        except Exception:  # noqa: BLE001,S110 -- at exit: the reaper removes what is left
            pass


def _interpreter() -> tuple[str, tuple[str, ...]]:
    """This interpreter (a virtual environment's, so its packages import) and what the sandbox must see of it."""
    python, needed = venv_python()
    return python, (*needed, CHILD_DIR)


def _limits(limits: SandboxLimits, timeout: float) -> Limits:
    room = 2 * limits.disk_mb + _REPORT_ROOM_MB
    run_memory = limits.run_memory_mb or limits.memory_mb + 2 * limits.disk_mb + 256
    return Limits(timeout=timeout, memory_mb=limits.memory_mb, max_processes=limits.processes,
                  max_file_mb=limits.file_size_mb, max_output_bytes=limits.max_output_bytes, max_workspace_mb=room,
                  cpu_seconds=limits.cpu_seconds, run_memory_mb=run_memory)


def run_job(backend: SandboxBackend, job: bytes, *, stdin: str | None, limits: SandboxLimits, started: float,
            report_cap: int, flags: tuple[str, ...]) -> tuple[SandboxResult, bytes]:
    """Run the harness on ``job`` (the JSON payload) in one of ``backend``'s pooled runs; returns the
    result (``returncode`` ``128 + N`` for a signal, as bubblewrap reports it) and the report's bytes.
    The wall clock counts from ``started``.  Raises :class:`SandboxUnavailable` when the backend cannot run."""
    pool = pool_for(backend)
    for attempt in (1, 2):
        slot = pool.acquire(fresh=attempt == 2)  # a new run has nothing of any earlier job
        broken = True
        opened = time.monotonic()
        try:
            result, channel = _run_in(slot, job, stdin=stdin, limits=limits, started=started,
                                      report_cap=report_cap, flags=flags)
            # An earlier job left something the host cannot empty (``_bootstrap.LEFT_BEHIND``): the run is
            # replaced, and this job runs in a new one on its full time, never paying for another's leftovers.
            broken = result.returncode == LEFT_BEHIND and not channel
        finally:
            pool.release(slot, broken=broken)
        if not broken or attempt == 2:
            return result, channel
        started += time.monotonic() - opened
    raise AssertionError("unreachable")


def _run_in(slot: _Slot, job: bytes, *, stdin: str | None, limits: SandboxLimits, started: float, report_cap: int,
            flags: tuple[str, ...]) -> tuple[SandboxResult, bytes]:
    dirs = slot.dirs
    root = os.geteuid() == 0
    job_path = dirs.home / _JOB
    job_path.write_bytes(job)
    report_path = dirs.home / _REPORT
    report_path.touch()
    if root:
        os.chmod(job_path, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        os.chmod(report_path, stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)  # root's file: append only
    else:
        os.chmod(job_path, stat.S_IRUSR)
        os.chmod(report_path, stat.S_IWUSR)
    python, needed = _interpreter()
    env = {**minimal_env(MOUNT), "TMPDIR": "/tmp"}
    argv = (python, *flags, BOOTSTRAP, f"{HOME}/{_JOB}", f"{HOME}/{_REPORT}")
    with open(report_path, "rb") as report:  # before the command: a replaced file is not read
        timeout = max(0.05, limits.timeout - (time.monotonic() - started))
        spec = _limits(limits, timeout)
        res = slot.run.run(argv, limits=spec, env=env, stdin=stdin or None, route=None, extra_ro=needed,
                           disk_budget=spec.max_workspace_mb << 20)
        channel = report.read(report_cap)
    limit = res.limit if res.returncode is None else None
    result = SandboxResult(returncode=res.returncode, stdout=res.stdout, stderr=res.stderr,
                           duration=time.monotonic() - started, limit=limit)
    return result, channel
