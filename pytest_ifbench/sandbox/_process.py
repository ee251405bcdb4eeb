"""Parent side: start one contained child process and supervise it to the end.

:func:`run_process` is the package's only way to start a child.  It knows
nothing about Python or tests: it takes an explicit ``argv``, working
directory and environment, and

* starts the child in a new session (``start_new_session``), so the child
  and everything it forks share one process group that can be killed at once;
* runs it under ``unshare --net`` (an empty network namespace) when that
  works on this machine -- probed once per process and cached
  (:func:`network_namespace_available`);
* feeds ``stdin`` from an unlinked temporary file (no writer thread, no pipe
  deadlock) or ``/dev/null``;
* reads stdout, stderr and an optional :class:`ResultPipe` concurrently
  (one ``selectors`` loop, woken by a ``pidfd`` when the child exits), caps
  each output stream at ``limits.max_output_bytes`` and kills the group when
  a cap is hit (``limit="output"``);
* kills the whole process group with ``SIGKILL`` at the wall-clock deadline
  (``limit="timeout"``), and again once the leader has exited -- before it is
  reaped, so the group id cannot have been recycled -- so stragglers holding
  the pipes die too and no process outlives the call;
* classifies a death by ``SIGXCPU`` (or ``SIGKILL`` at the hard CPU limit) as
  ``limit="cpu"`` using the child's rusage.

It does **not** set rlimits itself: the Python harness sets them from inside
the child (see :mod:`._confine` for why no ``preexec_fn``), so
``limits.cpu_seconds``/``memory_mb``/``file_size_mb`` are the caller's to
apply; here ``limits`` supplies the timeout, the output cap and the CPU figure
used for classification.  Nor does it build the environment: callers pass one
built from scratch (:func:`minimal_env`), never the parent's.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._types import SandboxLimits, SandboxResult

_unshare_lock = threading.Lock()
_unshare_cache: list[tuple[str, ...]] = []


def network_namespace_available() -> bool:
    """Whether children run in an empty network namespace (``unshare --net``).

    Probed once per process (``unshare --net true``) and cached."""
    return bool(unshare_prefix())


def unshare_prefix() -> tuple[str, ...]:
    """The ``unshare`` command line to prepend to a child's argv, or ``()``."""
    with _unshare_lock:
        if _unshare_cache:
            return _unshare_cache[0]
        prefix: tuple[str, ...] = ()
        exe = shutil.which("unshare") or next(
            (p for p in ("/usr/bin/unshare", "/bin/unshare") if os.access(p, os.X_OK)), None)
        if exe and sys.platform.startswith("linux"):
            candidates = [(exe, "--net")]
            if os.geteuid() != 0:
                candidates.append((exe, "--user", "--map-root-user", "--net"))
            for cand in candidates:
                try:
                    probe = subprocess.run(
                        [*cand, "true"], check=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, timeout=10, env=minimal_env("/"))
                except (OSError, subprocess.SubprocessError):
                    continue
                if probe.returncode == 0:
                    prefix = cand
                    break
        _unshare_cache.append(prefix)
        return prefix


def minimal_env(home: str) -> dict[str, str]:
    """An environment built from scratch (nothing of the parent's, so no
    ``*_KEY``/``*_TOKEN`` leaks) with ``HOME`` and ``TMPDIR`` = ``home``."""
    bindir = os.path.dirname(os.path.realpath(sys.executable))
    path = os.pathsep.join(dict.fromkeys([bindir, "/usr/local/bin", "/usr/bin", "/bin"]))
    return {
        "PATH": path,
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        # keep numeric libraries from spawning one thread per core (and from
        # reserving huge address space under RLIMIT_AS)
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


class ResultPipe:
    """A dedicated pipe for structured results, separate from stdout/stderr.

    The child inherits ``write_fd`` (the caller names it in ``argv``);
    :func:`run_process` closes the parent's copy of it once the child has
    started, reads ``read_fd`` alongside the output streams (at most ``cap``
    bytes are kept) and returns the bytes as :attr:`Completed.channel`.  Use
    it as a context manager so both ends are closed on every path."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.read_fd, self.write_fd = os.pipe()

    def close_write(self) -> None:
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def close(self) -> None:
        self.close_write()
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1

    def __enter__(self) -> ResultPipe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class Completed:
    """What :func:`run_process` observed.

    ``result.limit`` is ``"timeout"``/``"output"`` when the supervisor killed
    the child (``result.returncode`` is then ``None``), ``"cpu"`` when it died
    of the CPU rlimit, else ``None``: only the caller can know about limits
    the child reported itself.  ``channel`` holds the result pipe's bytes."""

    result: SandboxResult
    channel: bytes = b""


def run_process(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    limits: SandboxLimits,
    stdin: str | bytes | None = None,
    pass_fds: Sequence[int] = (),
    result_pipe: ResultPipe | None = None,
    isolate_network: bool = True,
    started: float | None = None,
) -> Completed:
    """Run ``argv`` in ``cwd`` with exactly ``env`` and supervise it to the end.

    ``pass_fds`` are inherited by the child (the caller keeps and closes its
    own copies).  ``started`` is the ``time.monotonic()`` value the wall-clock
    budget counts from (default: now), so a caller that tells the child its
    deadline can count its own preparation too; ``result.duration`` is
    measured from it.  Raises ``OSError`` only if the child cannot be started.
    """
    start = time.monotonic() if started is None else started
    cap = limits.max_output_bytes
    fds = tuple(pass_fds)
    if result_pipe is not None:
        fds += (result_pipe.write_fd,)
    stdin_file = None
    try:
        if stdin:
            # Only needs to live until Popen has inherited it.
            stdin_file = tempfile.TemporaryFile()  # noqa: SIM115
            stdin_file.write(stdin.encode("utf-8", "surrogatepass") if isinstance(stdin, str) else stdin)
            stdin_file.flush()
            stdin_file.seek(0)
        cmd = [*(unshare_prefix() if isolate_network else ()), *argv]
        proc = subprocess.Popen(
            cmd,
            stdin=stdin_file if stdin_file is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            pass_fds=fds,
            close_fds=True,
            start_new_session=True,
        )
    except BaseException:
        if result_pipe is not None:
            result_pipe.close()
        raise
    finally:
        if result_pipe is not None:
            result_pipe.close_write()
        if stdin_file is not None:
            stdin_file.close()
    try:
        return _supervise(proc, start, limits, cap, result_pipe)
    finally:
        if result_pipe is not None:
            result_pipe.close()


def _supervise(proc: subprocess.Popen, start: float, limits: SandboxLimits, cap: int,
               result_pipe: ResultPipe | None) -> Completed:
    pid = proc.pid
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    bufs = {out_fd: bytearray(), err_fd: bytearray()}
    caps = {out_fd: cap, err_fd: cap}
    report_r = None
    if result_pipe is not None:
        report_r = result_pipe.read_fd
        bufs[report_r] = bytearray()
        caps[report_r] = result_pipe.cap
    open_fds = set(bufs)
    sel = selectors.DefaultSelector()
    for fd in bufs:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    pidfd = None
    try:
        pidfd = os.pidfd_open(pid)
        sel.register(pidfd, selectors.EVENT_READ)
    except (AttributeError, OSError):
        pidfd = None

    killed_for: str | None = None
    deadline = start + limits.timeout

    def exited() -> bool:
        try:
            return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def pump(events) -> None:
        nonlocal killed_for
        for key, _ in events:
            fd = key.fd
            if fd == pidfd:
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                sel.unregister(fd)
                open_fds.discard(fd)
                continue
            buf = bufs[fd]
            room = caps[fd] - len(buf)
            if len(chunk) > room:
                buf += chunk[: max(room, 0)]
                if killed_for is None:
                    killed_for = "output"
                    _killpg(pid)
            else:
                buf += chunk

    try:
        while True:
            if exited():
                break
            now = time.monotonic()
            if now >= deadline:
                killed_for = killed_for or "timeout"
                _killpg(pid)
                break
            wait = deadline - now
            if pidfd is None:
                wait = min(wait, 0.02)
            pump(sel.select(wait))
            if killed_for is not None:
                break
        # The leader has exited (or been killed) but is not reaped yet, so its
        # pid cannot be recycled: killing the group now is safe and takes
        # down any stragglers still holding our pipes.
        _killpg(pid)
        drain_until = time.monotonic() + 2.0
        while open_fds and time.monotonic() < drain_until:
            pump(sel.select(0.05))
            if killed_for == "output":
                # stop reading once the cap was hit; the group is dead
                break
        _, status, rusage = os.wait4(pid, 0)
        returncode = os.waitstatus_to_exitcode(status)
        proc.returncode = returncode
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
        proc.stdout.close()
        proc.stderr.close()
        if proc.returncode is None:  # only on an unexpected error above
            _killpg(pid)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
    duration = time.monotonic() - start

    limit = killed_for
    if limit is None and returncode < 0:
        cpu_used = rusage.ru_utime + rusage.ru_stime
        if -returncode == signal.SIGXCPU or (
            -returncode == signal.SIGKILL and cpu_used >= limits.cpu_seconds - 0.5
        ):
            limit = "cpu"
    result = SandboxResult(
        returncode=None if killed_for is not None else returncode,
        stdout=_decode(bytes(bufs[out_fd])),
        stderr=_decode(bytes(bufs[err_fd])),
        duration=duration,
        limit=limit,
    )
    channel = bytes(bufs[report_r]) if report_r is not None else b""
    return Completed(result=result, channel=channel)


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")
