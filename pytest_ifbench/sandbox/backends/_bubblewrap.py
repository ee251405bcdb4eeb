"""The bubblewrap backend: each command in fresh unprivileged namespaces (:mod:`.._namespaces`).

Every command is its own sandbox: an unprivileged host uid, rlimits set by ``prlimit`` before its
first instruction, new user/mount/PID/network/IPC/UTS/cgroup namespaces, the run's directories bound
read-write at :data:`~..backend.MOUNT`, :data:`~..backend.HOME` and ``/tmp``, the whole PID namespace
killed when the command ends.  As root, the run's root is a tmpfs of about the disk budget
(:mod:`._quota`: the kernel refuses the overshoot, parallel writers included); the watchdog
(:class:`.._namespaces.Watch`, a walk every 0.5 s or more while the command runs) reports and stops a
command over budget either way -- without root it is the only check.  There is no cgroup: memory
outside ``RLIMIT_AS`` (shared memory, page cache) is not capped, ``Limits.run_memory_mb`` and
``Limits.cpus`` are not enforced.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from .. import _namespaces as ns
from .._process import run_process
from .._types import SandboxLimits
from ..backend import CommandResult, Limits, ProxyRoute, RunDirs, SandboxUnavailable, classify
from ._quota import TmpfsQuota
from ._quota import available as quota_available

__all__ = ["BubblewrapBackend", "BubblewrapRun"]


class BubblewrapBackend:
    """The default backend (see the module doc)."""

    name = "bubblewrap"

    def problem(self) -> str | None:
        return ns.sandbox_problem()

    def open(self, dirs: RunDirs) -> BubblewrapRun:
        problem = self.problem()
        if problem is not None:
            raise SandboxUnavailable(problem)
        return BubblewrapRun(dirs)

    def __repr__(self) -> str:
        return "BubblewrapBackend()"


class BubblewrapRun:
    """One run: nothing lives between commands but the host directories (on a tmpfs quota as root)."""

    __slots__ = ("dirs", "quota")

    def __init__(self, dirs: RunDirs) -> None:
        self.dirs = dirs
        self.quota = TmpfsQuota(dirs.root, Limits().max_workspace_mb << 20) if quota_available() else None

    def run(self, argv: tuple[str, ...], *, limits: Limits, env: Mapping[str, str], stdin: str | None,
            route: ProxyRoute | None, extra_ro: Sequence[str], disk_budget: int | None) -> CommandResult:
        problem = ns.sandbox_problem()
        if problem is not None:
            raise SandboxUnavailable(problem)
        dirs = self.dirs
        if self.quota is not None:
            self.quota.resize(limits.max_workspace_mb << 20)
        extra = [str(p) for p in extra_ro]
        python = ""
        if route is not None:
            grant_socket(route.socket, dirs.uid)
            python, needs = ns.sandbox_python()
            extra += needs
        jail = ns.Jail(workspace=str(dirs.workspace), home=str(dirs.home), tmp=str(dirs.tmp), uid=dirs.uid,
                       gid=dirs.gid, extra_ro=tuple(extra), socket=None if route is None else str(route.socket),
                       port=0 if route is None else route.port, python=python,
                       launcher=route is not None and route.launcher)
        rlimits = ns.Rlimits(cpu_seconds=limits.cpu_limit(), memory_mb=limits.memory_mb,
                             processes=limits.max_processes, file_size_mb=limits.max_file_mb)
        info_r, info_w = os.pipe()
        try:
            launcher = ns.command_line(jail, argv, env=env, rlimits=rlimits, info_fd=info_w)
        except BaseException:
            os.close(info_r)
            os.close(info_w)
            raise
        watch = ns.Watch(info_r, dirs.roots(), budget=disk_budget or 0, max_entries=limits.max_workspace_entries,
                         armed=disk_budget is not None)
        watch.start()
        try:
            done = run_process(
                launcher, cwd=str(dirs.root), env=ns.LAUNCHER_ENV, stdin=stdin, pass_fds=(info_w,),
                isolate_network=False,  # bubblewrap has its own
                limits=SandboxLimits(timeout=limits.timeout, cpu_seconds=rlimits.cpu_seconds,
                                     memory_mb=limits.memory_mb, file_size_mb=limits.max_file_mb,
                                     max_output_bytes=limits.max_output_bytes))
        finally:
            os.close(info_w)
            watch.finish()
        res = done.result
        return CommandResult(argv=argv, returncode=None if watch.killed else res.returncode, stdout=res.stdout,
                             stderr=res.stderr, duration=res.duration,
                             limit=classify(res.returncode, res.limit, res.stderr, disk=watch.killed))

    def disk_usage(self, max_entries: int) -> int | None:
        return ns.tree_usage(self.dirs.roots(), max_entries=max_entries)

    def close(self, *, keep: bool = False) -> None:
        if self.quota is not None:
            self.quota.release(keep=keep)


def grant_socket(sock: Path, uid: int) -> None:
    """Let ``uid`` connect to the Unix socket ``sock`` (connect() needs write permission on it)."""
    st = os.stat(sock)
    if not stat.S_ISSOCK(st.st_mode):
        raise ValueError(f"ProxyRoute.socket is not a Unix socket: {sock}")
    if os.geteuid() == 0 and st.st_uid != uid and not st.st_mode & 0o002:
        os.chown(sock, uid, -1)
