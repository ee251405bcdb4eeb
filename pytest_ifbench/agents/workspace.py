"""Workspaces: where an agent works, one sandboxed command at a time.

A :class:`Workspace` is a fresh copy of an environment directory (repository
files, a small git repo, ``CLAUDE.md``/``AGENTS.md``, skills...) plus the run's
own ``HOME`` and ``/tmp``, all in one private host directory; they persist
across the commands of one run and are removed by :meth:`Workspace.close`.
Every command (:meth:`Workspace.run`) is contained at the OS level by
:mod:`pytest_ifbench.sandbox._namespaces`: an unprivileged host uid, rlimits,
new namespaces (no network, no view of the host's processes or files), a
scrubbed environment, and the whole process tree killed when the command ends.
There is no unsandboxed fallback: without a working sandbox,
:meth:`Workspace.create` and :meth:`Workspace.run` raise
:class:`SandboxUnavailable` with the one-line reason.

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
kills the sandbox when over budget).  Both report ``limit="disk"``.  The
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
import math
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..sandbox import _namespaces as ns
from ..sandbox._namespaces import SandboxUnavailable, sandbox_problem
from ..sandbox._process import run_process
from ..sandbox._types import SandboxLimits

__all__ = ["CommandResult", "Limits", "ProxyRoute", "SandboxUnavailable", "Workspace", "sandbox_problem"]

#: The sandboxed command's whole environment, before the caller's ``env`` is laid over it (bubblewrap adds ``PWD``).
DEFAULT_ENV: Mapping[str, str] = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": ns.HOME, "TMPDIR": "/tmp",
                                  "LANG": "C.UTF-8", "TERM": "dumb"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Limits of one command.  ``memory_mb`` is ``RLIMIT_AS`` per process, ``max_processes`` is
    ``RLIMIT_NPROC`` (processes and threads of the sandbox uid), ``max_file_mb`` is ``RLIMIT_FSIZE``,
    ``max_output_bytes`` caps stdout and stderr each (then the command is killed, ``limit="output"``),
    ``max_workspace_mb``/``max_workspace_entries`` bound the run's directories together.
    ``cpu_seconds`` (``RLIMIT_CPU`` per process) defaults to what one process could use in ``timeout``
    on every core, i.e. it is only a backstop unless set."""

    timeout: float = 60.0
    memory_mb: int = 2048
    max_processes: int = 256
    max_file_mb: int = 512
    max_output_bytes: int = 1_000_000
    max_workspace_mb: int = 1024
    max_workspace_entries: int = 200_000
    cpu_seconds: int | None = None

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise ValueError("Limits.timeout must be > 0")
        for name in ("memory_mb", "max_processes", "max_file_mb", "max_output_bytes", "max_workspace_mb",
                     "max_workspace_entries"):
            if getattr(self, name) <= 0:
                raise ValueError(f"Limits.{name} must be > 0")
        if self.cpu_seconds is not None and self.cpu_seconds <= 0:
            raise ValueError("Limits.cpu_seconds must be > 0")

    def rlimits(self) -> ns.Rlimits:
        cpu = self.cpu_seconds or math.ceil(self.timeout) * max(1, os.cpu_count() or 1) + 1
        return ns.Rlimits(cpu_seconds=cpu, memory_mb=self.memory_mb, processes=self.max_processes,
                          file_size_mb=self.max_file_mb)


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandResult:
    """What one command did.  ``returncode`` is ``None`` when the sandbox killed it (timeout, output
    cap, disk watchdog); a command killed by signal ``N`` otherwise reports ``128 + N``.  ``stdout`` and
    ``stderr`` are decoded as UTF-8 (invalid bytes replaced) and each cut at ``max_output_bytes``."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    duration: float
    limit: str | None = None  # "timeout" | "memory" | "cpu" | "output" | "disk" | "processes" | None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.limit is None

    def to_json(self) -> dict[str, Any]:
        return {"argv": list(self.argv), "returncode": self.returncode, "stdout": self.stdout,
                "stderr": self.stderr, "duration": self.duration, "limit": self.limit}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CommandResult:
        return cls(argv=tuple(data["argv"]), returncode=data["returncode"], stdout=data["stdout"],
                   stderr=data["stderr"], duration=float(data["duration"]), limit=data.get("limit"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyRoute:
    """The only way out of the sandbox, for real agent CLIs: inside, ``127.0.0.1:port`` is relayed to
    the host's Unix ``socket`` (the recording proxy).  Set e.g. ``ANTHROPIC_BASE_URL`` to :attr:`url`.
    When we are root the socket is handed to the sandbox uid (``chown``) so that it may connect."""

    socket: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


_EVIDENCE = (
    ("processes", re.compile(r"fork: (?:retry: )?Resource temporarily unavailable|[Cc]an(?:no|')t fork|"
                             r"can't start new thread|BlockingIOError: \[Errno 11\]|pthread_create")),
    ("memory", re.compile(r"MemoryError|Cannot allocate memory|[Oo]ut of memory|memory exhausted|std::bad_alloc|"
                          r"xmalloc: cannot allocate|Failed to reserve virtual memory")),
    ("disk", re.compile(r"File size limit exceeded|File too large|No space left on device|Disk quota exceeded")),
)



_UID_COUNTER = itertools.count()


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
    Commands may run concurrently (:meth:`arun`); closing while one runs is the caller's mistake."""

    MOUNT = ns.MOUNT
    HOME = ns.HOME

    __slots__ = ("root", "path", "home", "tmp", "uid", "gid", "keep", "_closed", "_usage")

    def __init__(self, *, root: Path, uid: int, gid: int, keep: bool) -> None:
        self.root = root
        self.path = root / "workspace"
        self.home = root / "home"
        self.tmp = root / "tmp"
        self.uid = uid
        self.gid = gid
        self.keep = keep
        self._closed = False
        self._usage: int | None = 0

    @classmethod
    def create(cls, environment: Path | str | None, *, parent: Path | None = None, keep: bool = False,
               uid: int | None = None, gid: int | None = None) -> Workspace:
        """A fresh workspace: a copy of ``environment`` (symlinks kept as links, ``.git`` included; special
        files are refused) or an empty one, in a new private directory under ``parent`` (default: the
        system temporary directory).  Everything is chowned to ``uid``/``gid`` (default: a uid of its own,
        see :func:`fresh_uid`), the sandbox's unprivileged host user; when we are not root, commands run as
        our own uid instead.
        ``keep``: :meth:`close` leaves the directories in place.  Raises :class:`SandboxUnavailable`.

        ``RLIMIT_NPROC`` counts the processes and threads of a uid host-wide, so workspaces that share a
        uid and run commands at the same time share ``Limits.max_processes``: give concurrent
        workspaces distinct uids (any unused number; it needs no ``/etc/passwd`` entry)."""
        problem = sandbox_problem()
        if problem is not None:
            raise SandboxUnavailable(problem)
        if uid is None:
            uid = fresh_uid()
        privileged = os.geteuid() == 0
        if not privileged:
            uid, gid = os.getuid(), os.getgid()
        root = Path(tempfile.mkdtemp(prefix="ifbench-ws-", dir=parent)).resolve()
        ws = cls(root=root, uid=uid, gid=uid if gid is None else gid, keep=keep)
        try:
            if environment is not None:
                if not Path(environment).is_dir():
                    raise NotADirectoryError(f"environment is not a directory: {environment}")
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
            _remove(root)
            raise
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
        if self._closed:
            raise RuntimeError("the workspace is closed")
        problem = sandbox_problem()
        if problem is not None:
            raise SandboxUnavailable(problem)
        argv = _argv(command)
        extra = [str(p) for p in extra_ro]
        python = ""
        if route is not None:
            self._grant(route.socket)
            python, needs = ns.sandbox_python()
            extra += needs
        jail = ns.Jail(workspace=str(self.path), home=str(self.home), tmp=str(self.tmp), uid=self.uid, gid=self.gid,
                       extra_ro=tuple(extra), socket=None if route is None else str(route.socket),
                       port=0 if route is None else route.port, python=python)
        rlimits = limits.rlimits()
        info_r, info_w = os.pipe()
        try:
            launcher = ns.command_line(jail, argv, env={**DEFAULT_ENV, **(env or {})}, rlimits=rlimits, info_fd=info_w)
        except BaseException:
            os.close(info_r)
            os.close(info_w)
            raise
        # Over budget already (a previous command's doing): only growth beyond that is killed, so that
        # cleaning up still works; past the entry cap already: the walk cannot tell, nothing is killed.
        budget = max(limits.max_workspace_mb << 20, self._usage or 0)
        watch = ns.Watch(info_r, self._roots(), budget=budget, max_entries=limits.max_workspace_entries,
                         armed=self._usage is not None)
        watch.start()
        try:
            done = run_process(
                launcher, cwd=str(self.root), env=ns.LAUNCHER_ENV, stdin=stdin, pass_fds=(info_w,),
                isolate_network=False,  # bubblewrap has its own
                limits=SandboxLimits(timeout=limits.timeout, cpu_seconds=rlimits.cpu_seconds,
                                     memory_mb=limits.memory_mb, file_size_mb=limits.max_file_mb,
                                     max_output_bytes=limits.max_output_bytes))
        finally:
            os.close(info_w)
            watch.finish()
        usage = self._usage = self.disk_usage(limits.max_workspace_entries)
        over = usage is None or usage > limits.max_workspace_mb << 20
        res = done.result
        return CommandResult(argv=argv, returncode=None if watch.killed else res.returncode, stdout=res.stdout,
                             stderr=res.stderr, duration=res.duration,
                             limit=_classify(res.returncode, res.limit, res.stderr, disk=watch.killed or over))

    async def arun(self, *args: Any, **kwargs: Any) -> CommandResult:
        """:meth:`run` in a worker thread."""
        return await asyncio.to_thread(self.run, *args, **kwargs)

    def disk_usage(self, max_entries: int = Limits().max_workspace_entries) -> int | None:
        """Bytes on disk of the workspace, ``HOME`` and ``/tmp`` together; None past ``max_entries`` entries."""
        return ns.tree_usage(self._roots(), max_entries=max_entries)

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

    def close(self) -> None:
        """Remove the run's directories (unless ``keep``); idempotent."""
        if self._closed:
            return
        self._closed = True
        if not self.keep:
            _remove(self.root)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Workspace({str(self.path)!r}, uid={self.uid}{', closed' if self._closed else ''})"

    def _roots(self) -> tuple[str, ...]:
        return str(self.path), str(self.home), str(self.tmp)

    def _grant(self, sock: Path) -> None:
        st = os.stat(sock)
        if not stat.S_ISSOCK(st.st_mode):
            raise ValueError(f"ProxyRoute.socket is not a Unix socket: {sock}")
        if os.geteuid() == 0 and st.st_uid != self.uid and not st.st_mode & 0o002:
            os.chown(sock, self.uid, -1)  # connect() needs write permission on the socket file


def _argv(command: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(command, str):
        shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
        return shell, "-c", command
    argv = tuple(str(a) for a in command)
    if not argv:
        raise ValueError("empty command")
    return argv


def _classify(returncode: int | None, killed_for: str | None, stderr: str, *, disk: bool) -> str | None:
    """The limit a command hit: certain facts first (disk budget, the supervisor's kills, a limit
    signal), then the command's own account of a failed fork/allocation, then the timeout."""
    if disk or returncode == 128 + signal.SIGXFSZ:
        return "disk"
    if killed_for == "output":
        return "output"
    if returncode == 128 + signal.SIGXCPU:
        return "cpu"
    if killed_for is not None or returncode != 0:
        for name, pattern in _EVIDENCE:
            if pattern.search(stderr):
                return name
    return killed_for


def _copy_regular_file(src: str, dst: str) -> str:
    if not stat.S_ISREG(os.lstat(src).st_mode):
        raise ValueError(f"the environment holds a special file (FIFO, socket or device): {src}")
    return shutil.copy2(src, dst)


def _chown_tree(top: Path, uid: int, gid: int) -> None:
    os.lchown(top, uid, gid)
    for dirpath, dirnames, filenames in os.walk(top):
        for name in (*dirnames, *filenames):
            os.lchown(os.path.join(dirpath, name), uid, gid)


def _remove(root: Path) -> None:
    """Delete ``root`` whatever the sandbox left there (read-only or 10,000-deep directories)."""
    try:
        shutil.rmtree(root)
    except (OSError, RecursionError):
        pass
    if os.path.lexists(root):
        subprocess.run(["chmod", "-R", "u+rwx", "--", str(root)], capture_output=True, check=False)
        subprocess.run(["rm", "-rf", "--one-file-system", "--", str(root)], capture_output=True, check=False)
