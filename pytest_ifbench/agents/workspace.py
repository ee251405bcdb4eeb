"""Workspaces: where an agent works, one sandboxed command at a time.

A :class:`Workspace` is a fresh copy of an environment directory (repository
files, a small git repo, ``CLAUDE.md``/``AGENTS.md``, skills...) plus the run's
own ``HOME`` and ``/tmp``, all in one private host directory; they persist
across the commands of one run and are removed by :meth:`Workspace.close`.
Every command (:meth:`Workspace.run`) is contained at the OS level by the chosen sandbox backend
(:mod:`pytest_ifbench.sandbox.backend`; bubblewrap by default, see there and ``docs/agents.md``):
an unprivileged host uid, rlimits, no network, no view of the host's processes or files, a
scrubbed environment, and the whole process tree ended when the command ends.
There is no unsandboxed fallback and no fallback to another backend: when the backend cannot run,
:meth:`Workspace.create` and :meth:`Workspace.run` raise :class:`SandboxUnavailable` with its
one-line reason.

Inside the sandbox the workspace is :attr:`Workspace.MOUNT` (the working
directory), ``HOME`` is ``/home/agent`` and ``/tmp`` is the run's own.
Symbolic links of the environment are copied as links and resolve *in the
sandbox's view* (a link to ``/etc/passwd`` shows the system file, one to
``/root/...`` shows nothing).  Host-side code must not follow links inside a
workspace either -- an agent can plant ``out.txt -> /root/.ssh/id_rsa`` -- so
read agent output with :meth:`Workspace.read_bytes`, which refuses links and
special files.

Disk.  Each file is capped by ``RLIMIT_FSIZE`` (``Limits.max_file_mb``); the
run's directories together by ``Limits.max_workspace_mb``, checked by a
``du``-like walk (capped at ``Limits.max_workspace_entries`` entries) after
every command and, while a command runs, every 0.5 s or more (a watchdog that
kills the command when over budget; a backend may add a hard quota, see its doc).  Both report ``limit="disk"``.  The
weakness: it is a check, not a quota -- between two checks a fast writer can
overshoot the budget by what it writes in that interval (hundreds of MB), and
many files each under the per-file cap are caught only by the walk.  A workspace
that ends over budget keeps reporting ``"disk"`` until the agent deletes files
(commands are not killed then unless they grow it further).

Limits reported in :attr:`CommandResult.limit`: ``"timeout"`` and
``"output"`` (the supervisor killed the command), ``"disk"`` (the walk or a
``SIGXFSZ``/``EFBIG``), ``"cpu"`` (``SIGXCPU``); ``"memory"`` and
``"processes"`` are inferred from the failed command's stderr (an allocation or
a fork that failed under ``RLIMIT_AS``/``RLIMIT_NPROC``), best effort.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from ..sandbox.backend import (
    HOME,
    MOUNT,
    CommandResult,
    Limits,
    ProxyRoute,
    RunDirs,
    SandboxBackend,
    SandboxRun,
    SandboxUnavailable,
)
from ..sandbox.backends import current_backend

__all__ = ["CommandResult", "Limits", "ProxyRoute", "SandboxUnavailable", "Workspace", "close_open_workspaces",
           "sandbox_problem"]

#: The sandboxed command's whole environment, before the caller's ``env`` is laid over it (the backend adds ``PWD``).
DEFAULT_ENV: Mapping[str, str] = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": HOME, "TMPDIR": "/tmp",
                                  "LANG": "C.UTF-8", "TERM": "dumb"}


def sandbox_problem() -> str | None:
    """The chosen backend's one-line reason why agent commands cannot run here, or None."""
    return current_backend().problem()


_UID_COUNTER = itertools.count()

#: This process's workspaces not yet closed (see :func:`close_open_workspaces`).
_OPEN: set[Workspace] = set()
_OPEN_LOCK = threading.Lock()


def close_open_workspaces() -> int:
    """Close every workspace of this process still open; how many there were.

    For the end of a session: an agent run that finished ahead of its item keeps its workspace open for
    that item's checks, and an interrupted session (Ctrl-C) never runs those items, so their workspaces
    (disk, a tmpfs quota mounted as root, a container) would stay until the next run's reaper."""
    with _OPEN_LOCK:
        left = list(_OPEN)
        _OPEN.clear()
    for workspace in left:
        try:
            workspace.close()
        except Exception:  # noqa: BLE001 - one that cannot be closed must not keep the others open
            continue
    return len(left)


def fresh_uid() -> int:
    """A host uid no other workspace of this machine uses at the same time (no passwd entry needed).

    ``RLIMIT_NPROC`` counts per uid host-wide, so each workspace gets its own: concurrent
    runs then never share a process budget. Drawn from a high range no distribution assigns,
    distinct per process (pid) and per workspace within it.
    """
    return 0x2000_0000 + (os.getpid() % 0x10000) * 0x100 + next(_UID_COUNTER) % 0x100


class Workspace:
    """A run's private directories and the way to run contained commands in them (see the module doc).

    Create with :meth:`create`; use as a context manager or call :meth:`close`.  ``path`` is the host
    path of the workspace copy, ``home``/``tmp`` those of the run's ``HOME`` and ``/tmp``; ``root`` holds
    all three (and may hold the caller's own files, e.g. a proxy log; it is not visible inside).
    ``backend`` is the sandbox backend its commands run on.
    Commands may run concurrently (:meth:`arun`); closing while one runs is the caller's mistake."""

    MOUNT = MOUNT
    HOME = HOME

    __slots__ = ("root", "path", "home", "tmp", "uid", "gid", "keep", "backend", "_closed", "_usage", "_run")

    def __init__(self, *, root: Path, uid: int, gid: int, keep: bool, backend: SandboxBackend) -> None:
        self.root = root
        self.path = root / "workspace"
        self.home = root / "home"
        self.tmp = root / "tmp"
        self.uid = uid
        self.gid = gid
        self.keep = keep
        self.backend = backend
        self._closed = False
        self._usage: int | None = 0
        self._run: SandboxRun | None = None

    @classmethod
    def create(cls, environment: Path | str | None, *, parent: Path | None = None, keep: bool = False,
               uid: int | None = None, gid: int | None = None, backend: SandboxBackend | None = None) -> Workspace:
        """A fresh workspace: a copy of ``environment`` (symlinks kept as links, ``.git`` included; special
        files are refused) or an empty one, in a new private directory under ``parent`` (default: the
        system temporary directory).  Everything is chowned to ``uid``/``gid`` (default: a uid of its own,
        see :func:`fresh_uid`), the sandbox's unprivileged host user; when we are not root, commands run as
        our own uid instead.  ``backend``: the sandbox backend (default: the process's,
        :func:`~pytest_ifbench.sandbox.backend.current_backend`).
        ``keep``: :meth:`close` leaves the directories in place.  Raises :class:`SandboxUnavailable`.

        ``RLIMIT_NPROC`` counts the processes and threads of a uid host-wide, so workspaces that share a
        uid and run commands at the same time share ``Limits.max_processes``: give concurrent
        workspaces distinct uids (any unused number; it needs no ``/etc/passwd`` entry)."""
        backend = backend if backend is not None else current_backend()
        problem = backend.problem()
        if problem is not None:
            raise SandboxUnavailable(problem)
        if environment is not None and not Path(environment).is_dir():
            raise NotADirectoryError(f"environment is not a directory: {environment}")
        if uid is None:
            uid = fresh_uid()
        privileged = os.geteuid() == 0
        if not privileged:
            uid, gid = os.getuid(), os.getgid()
        root = Path(tempfile.mkdtemp(prefix="ifbench-ws-", dir=parent)).resolve()
        ws = cls(root=root, uid=uid, gid=uid if gid is None else gid, keep=keep, backend=backend)
        try:
            ws._run = backend.open(RunDirs(root=root, workspace=ws.path, home=ws.home, tmp=ws.tmp, uid=ws.uid,
                                           gid=ws.gid))
            if environment is not None:
                shutil.copytree(environment, ws.path, symlinks=True, copy_function=_copy_regular_file)
            else:
                ws.path.mkdir()
            ws.home.mkdir(mode=0o700)
            ws.tmp.mkdir(mode=0o700)
            if privileged:
                for top in (ws.path, ws.home, ws.tmp):
                    _chown_tree(top, ws.uid, ws.gid)
            ws._usage = ws.disk_usage()
        except BaseException:
            if ws._run is not None:
                ws._run.close()
            _remove(root)
            raise
        with _OPEN_LOCK:
            _OPEN.add(ws)
        return ws

    def run(self, command: str | Sequence[str], *, limits: Limits = Limits(), env: Mapping[str, str] | None = None,
            stdin: str | None = None, route: ProxyRoute | None = None,
            extra_ro: Sequence[Path | str] = ()) -> CommandResult:
        """Run ``command`` in the sandbox and wait for it (and everything it started) to end.

        A string runs as ``/bin/bash -c COMMAND`` (``/bin/sh`` without bash).  The environment is
        :data:`DEFAULT_ENV` plus ``env`` -- nothing of ours.  ``extra_ro`` host paths (files or
        directories, e.g. an interpreter prefix or an agent CLI's install folder) appear read-only at
        their own paths.  ``route`` opens the one way out (:class:`ProxyRoute`).  Never raises for
        anything the command does; raises :class:`SandboxUnavailable`, ``ValueError`` for bad
        arguments, ``OSError`` if the launcher cannot start."""
        if self._closed or self._run is None:
            raise RuntimeError("the workspace is closed")
        argv = _argv(command)
        # Over budget already (a previous command's doing): only growth beyond that is killed, so that
        # cleaning up still works; past the entry cap already: the walk cannot tell, nothing is killed.
        budget = max(limits.max_workspace_mb << 20, self._usage or 0) if self._usage is not None else None
        result = self._run.run(argv, limits=limits, env={**DEFAULT_ENV, **(env or {})}, stdin=stdin, route=route,
                               extra_ro=[str(p) for p in extra_ro], disk_budget=budget)
        usage = self._usage = self.disk_usage(limits.max_workspace_entries)
        if usage is None or usage > limits.max_workspace_mb << 20:
            result = replace(result, limit="disk")
        return result

    async def arun(self, *args: Any, **kwargs: Any) -> CommandResult:
        """:meth:`run` in a worker thread."""
        return await asyncio.to_thread(self.run, *args, **kwargs)

    def disk_usage(self, max_entries: int = Limits().max_workspace_entries) -> int | None:
        """Bytes on disk of the workspace, ``HOME`` and ``/tmp`` together; None past ``max_entries`` entries."""
        if self._run is None:
            raise RuntimeError("the workspace is closed")
        return self._run.disk_usage(max_entries)

    def read_bytes(self, relative: str | PurePosixPath, *, max_bytes: int = 10 << 20) -> bytes:
        """At most ``max_bytes`` of a regular file of the workspace, read from the host without
        following any symbolic link (an agent-planted link raises ``OSError``) and refusing FIFOs and
        other special files (``ValueError``), so agent output cannot make the host read its own files."""
        parts = PurePosixPath(relative).parts
        if not parts or PurePosixPath(relative).is_absolute() or ".." in parts:
            raise ValueError(f"expected a path relative to the workspace: {relative!r}")
        fd = os.open(self.path, os.O_PATH | os.O_DIRECTORY)
        try:
            for name in parts[:-1]:
                nxt = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = nxt
            file_fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        finally:
            os.close(fd)
        with os.fdopen(file_fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(file_fd).st_mode):
                raise ValueError(f"not a regular file: {relative!r}")
            return fh.read(max_bytes)

    def clear_home_and_tmp(self) -> None:
        """Empty the run's ``HOME`` and ``/tmp`` in place; the workspace stays as the agent left it.

        Called when the agent's last command has ended (the backend ended all its processes), before the
        checks run their commands here: they then see the agent's work, not what it left for them -- a
        ``usercustomize.py`` or ``.pth`` in its user site that makes ``python3 test_x.py`` exit 0 whatever
        the tests say, a ``.gitconfig``, a FIFO or link at a ``/tmp`` path a check writes to.  Emptied in
        place, never made again: a container's bind mounts pin the directories.  With ``keep`` the
        entries move to ``agent-home`` and ``agent-tmp`` in :attr:`root` (never shown inside).

        The workspace's directories are opened again for the checks (:func:`_reopen_directories`): a
        ``chmod 000 /workspace`` stopped every check's sandbox at its start, and a ``chmod 000 build`` hid
        what is in it from ``test -e``, ``find`` and ``grep -r``."""
        if self._closed or self._run is None:
            raise RuntimeError("the workspace is closed")
        _reopen_directories(self.path)
        for directory, aside in ((self.home, self.root / "agent-home"), (self.tmp, self.root / "agent-tmp")):
            if os.path.islink(directory) or not directory.is_dir():
                raise OSError(f"not a directory any more: {directory}")
            os.chmod(directory, 0o700)
            if self.keep:
                aside.mkdir(mode=0o700, exist_ok=True)
            for entry in list(os.scandir(directory)):
                if self.keep:
                    os.rename(entry.path, aside / entry.name)
                elif entry.is_dir(follow_symlinks=False):
                    _remove(Path(entry.path))
                else:
                    os.unlink(entry.path)
            if next(os.scandir(directory), None) is not None:
                raise OSError(f"cannot empty {directory}")
        self._usage = self.disk_usage()

    def close(self) -> None:
        """Tear the backend's side down and remove the run's directories (unless ``keep``); idempotent."""
        if self._closed:
            return
        self._closed = True
        with _OPEN_LOCK:
            _OPEN.discard(self)
        if self._run is not None:
            self._run.close(keep=self.keep)
        if not self.keep:
            _remove(self.root)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Workspace({str(self.path)!r}, uid={self.uid}, backend={self.backend.name}"
                f"{', closed' if self._closed else ''})")


def _argv(command: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(command, str):
        shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
        return shell, "-c", command
    argv = tuple(str(a) for a in command)
    if not argv:
        raise ValueError("empty command")
    return argv


def _copy_regular_file(src: str, dst: str) -> str:
    if not stat.S_ISREG(os.lstat(src).st_mode):
        raise ValueError(f"the environment holds a special file (FIFO, socket or device): {src}")
    return shutil.copy2(src, dst)


def _chown_tree(top: Path, uid: int, gid: int) -> None:
    os.lchown(top, uid, gid)
    for dirpath, dirnames, filenames in os.walk(top):
        for name in (*dirnames, *filenames):
            os.lchown(os.path.join(dirpath, name), uid, gid)


#: How deep :func:`_reopen_directories` goes: an open directory per level (the archive keeps no deeper name).
REOPEN_DEPTH = 256


def _reopen_directories(top: Path, max_entries: int = Limits().max_workspace_entries) -> None:
    """Give the workspace's owner (the checks' uid) its way back in: ``u+rwx`` on the workspace itself and
    ``u+rx`` on every directory below it that lacks them, nothing else.

    Nothing else changes: files keep their modes (one chmodded 000 fails the checks that read it, and a
    re-score keeps it so), directories their write bit (``chmod 500 d`` may be the task).  Done from the host
    on descriptors, never through a link (each directory opened ``O_NOFOLLOW``, chmodded through its
    ``O_PATH`` descriptor), on this file system only, and best effort below the top: past ``max_entries``
    entries or :data:`REOPEN_DEPTH` levels, or where a directory cannot be opened, the rest stays as it was
    (the file checks fail what they cannot reach).  ``OSError`` when the workspace itself is not a directory
    any more or cannot be chmodded."""
    st = os.lstat(top)
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(f"not a directory any more: {top}")
    if st.st_mode & 0o700 != 0o700:
        os.chmod(top, stat.S_IMODE(st.st_mode) | 0o700)
    try:
        fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    left = [max_entries]
    stack = [(fd, _subdirectories(fd, left))]
    try:
        while stack:
            parent, names = stack[-1]
            if not names:
                os.close(stack.pop()[0])
                continue
            child = _opened(parent, names.pop(), st.st_dev)
            if child is not None and len(stack) < REOPEN_DEPTH:
                stack.append((child, _subdirectories(child, left)))
            elif child is not None:
                os.close(child)
    finally:
        for fd, _ in stack:
            os.close(fd)


def _subdirectories(fd: int, left: list[int]) -> list[str]:
    """The names of the directories in ``fd``, counting its entries off ``left[0]``: none once it is spent."""
    names: list[str] = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                left[0] -= 1
                if left[0] < 0:
                    return []
                if entry.is_dir(follow_symlinks=False):
                    names.append(entry.name)
    except OSError:
        return []
    return names


def _opened(parent: int, name: str, device: int) -> int | None:
    """The directory ``name`` of ``parent`` opened for listing, with ``u+rx`` added if it lacked them; None
    for a link, anything but a directory, another file system's, or one that cannot be opened."""
    try:
        handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        return None
    try:
        st = os.fstat(handle)
        if st.st_dev != device:
            return None
        if st.st_mode & 0o500 != 0o500:
            os.chmod(f"/proc/self/fd/{handle}", stat.S_IMODE(st.st_mode) | 0o500)
        return os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=handle)
    except OSError:
        return None
    finally:
        os.close(handle)


def _remove(root: Path) -> None:
    """Delete ``root`` whatever the sandbox left there (read-only or 10,000-deep directories)."""
    try:
        shutil.rmtree(root)
    except (OSError, RecursionError):
        pass
    if os.path.lexists(root):
        subprocess.run(["chmod", "-R", "u+rwx", "--", str(root)], capture_output=True, check=False)
        subprocess.run(["rm", "-rf", "--one-file-system", "--", str(root)], capture_output=True, check=False)
