"""The docker backend's side of one supervised command: reading the supervisor's attached stream (stdout
and stderr multiplexed, its status record last) while the disk watch runs, and turning what it reported
into a :class:`~..backend.CommandResult`.  Shared by ``docker exec`` commands (:mod:`._docker`) and the
containers of routed ones (:mod:`._docker_route`); the supervisor itself is :mod:`._docker_exec`.
What the command's outcome may need from the engine is here too: whether it OOM-killed the container
(:func:`engine_saw_oom`), whether the container is gone (:func:`container_gone`).
"""

from __future__ import annotations

import json
import os
import select
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .._namespaces import tree_usage
from ..backend import CommandResult, Limits, RunDirs, classify

__all__ = ["container_gone", "engine_saw_oom", "memory_events", "no_python", "oom_kills", "outcome", "split_status",
           "supervise"]

#: What precedes the supervisor's status record on its stderr (``_docker_exec.MARK``).
_MARK = b"\0IFBENCH-EXEC "


def no_python(image: str, err: bytes) -> str:
    said = err.decode("utf-8", "replace").strip().splitlines()
    return (f"docker image {image!r} has no python3 on its PATH, which the docker backend runs each command "
            f"under (its supervisor){': ' + said[-1][:200] if said else ''}")


def supervise(sock: Any, dirs: RunDirs, limits: Limits, disk_budget: int | None,
              start: float) -> tuple[bytes, bytes, bool, bool]:
    """Read a supervisor's attached stream while the disk watch runs: (stdout, stderr, whether the
    backstop deadline passed, whether the disk watch cancelled the command)."""
    raw = getattr(sock, "_sock", sock)
    watch = _DiskWatch(dirs.roots(), disk_budget, limits.max_workspace_entries, raw)
    watch.start()
    try:
        out, err, backstop = _collect(raw, start + limits.timeout + 10.0)
    finally:
        watch.stop()
        raw.close()
    return out, err, backstop, watch.killed


def split_status(err: bytes) -> tuple[dict[str, Any], bytes]:
    """The supervisor's status record (empty when it died first) and the command's own stderr."""
    at = err.rfind(_MARK)
    if at < 0:
        return {}, err
    try:
        status = json.loads(err[at + len(_MARK):])
    except ValueError:
        status = {}
    return status, err[:at]


def outcome(argv: tuple[str, ...], status: Mapping[str, Any], out: bytes, err: bytes, *, backstop: bool, disk: bool,
            oom: bool, cpu: int, start: float, lost: int | None = None) -> CommandResult:
    """The command's result from what its supervisor reported.  ``lost``: the exit status to report when
    the supervisor left no record and was not ended by the backstop (None: a kill, like a timeout)."""
    gone = not status and not backstop
    killed_for = status.get("killed_for") or ("timeout" if backstop or (gone and lost is None) else None)
    if killed_for == "cancel":
        killed_for = "timeout"
    if oom and killed_for in (None, "timeout") and not backstop:
        killed_for = "memory"
    if disk:
        killed_for = None
    returncode = status.get("returncode") if status else (lost if gone else None)
    if returncode == 128 + 9 and killed_for is None and status.get("cpu", 0) >= cpu - 0.5:
        returncode = 128 + 24  # the hard CPU limit's SIGKILL after SIGXCPU
    # The cgroup's OOM killer is the sandbox's kill, as the supervisor's are: no exit status of the command's own
    # (the code runs keep a limit only for a command without one, ``_code_runs._run_in``).
    if status.get("killed_for") or killed_for == "memory" or disk or backstop or (gone and lost is None):
        returncode = None
    text_err = err.decode("utf-8", "replace")
    return CommandResult(argv=argv, returncode=returncode, stdout=out.decode("utf-8", "replace"), stderr=text_err,
                         duration=time.monotonic() - start,
                         limit=classify(returncode, killed_for, text_err, disk=disk))


def _collect(raw: socket.socket, deadline: float) -> tuple[bytes, bytes, bool]:
    """Read the exec's multiplexed stream (8-byte frame headers) until it ends; True when the backstop
    ``deadline`` passed first (the supervisor is then told to stop, and given 5 s)."""
    buf = bytearray()
    streams = {1: bytearray(), 2: bytearray()}
    cancelled = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            if cancelled:
                return bytes(streams[1]), bytes(streams[2]), True
            _cancel(raw)
            cancelled, deadline = True, time.monotonic() + 5.0
            continue
        ready, _, _ = select.select([raw], [], [], left)
        if not ready:
            continue
        chunk = raw.recv(1 << 16)
        if not chunk:
            return bytes(streams[1]), bytes(streams[2]), cancelled
        buf += chunk
        while len(buf) >= 8:
            size = int.from_bytes(buf[4:8], "big")
            if len(buf) < 8 + size:
                break
            streams.setdefault(buf[0], bytearray()).extend(buf[8:8 + size])
            del buf[:8 + size]


def _cancel(raw: socket.socket) -> None:
    try:
        raw.sendall(b"k")
    except OSError:
        pass


class _DiskWatch(threading.Thread):
    """While a command runs: the disk walk every 0.5 s or more; over ``budget``, it cancels the command."""

    def __init__(self, roots: Sequence[str], budget: int | None, max_entries: int, raw: socket.socket) -> None:
        super().__init__(daemon=True)
        self.roots, self.budget, self.max_entries, self.raw = roots, budget, max_entries, raw
        self.killed = False
        self.done = threading.Event()

    def run(self) -> None:
        if self.budget is None:
            return
        interval = 0.5
        while not self.done.wait(interval):
            began = time.monotonic()
            usage = tree_usage(self.roots, max_entries=self.max_entries)
            if usage is None or usage > self.budget:
                self.killed = True
                _cancel(self.raw)
                return
            interval = max(0.5, 20 * (time.monotonic() - began))

    def stop(self) -> None:
        self.done.set()
        self.join(5)


def memory_events(container: Any) -> str | None:
    """The file that counts the OOM kills in ``container``'s memory cgroup (cgroup v2's ``memory.events``
    or v1's ``memory.oom_control``), None when it cannot be found. Looked up once per container, so a
    command's before/after reading is two reads of a file, with no engine round trip in between."""
    try:
        container.reload()
        pid = container.attrs["State"]["Pid"]
        with open(f"/proc/{pid}/cgroup") as fh:
            lines = fh.read().splitlines()
    except Exception:  # noqa: BLE001 -- the engine or /proc: the count is then unknown, not 0
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            candidates = [f"/sys/fs/cgroup/memory{path}/memory.oom_control"]
            break
    else:
        candidates = [f"/sys/fs/cgroup{path}/memory.events" for line in lines if line.startswith("0::")
                      for path in [line.split(":", 2)[2]]]
    return next((name for name in candidates if os.path.exists(name)), None)


def engine_saw_oom(container: Any, wait: float = 2.0) -> bool:
    """Whether the engine recorded an OOM kill in ``container`` (``State.OOMKilled``), asked once it has
    stopped (for at most ``wait`` seconds). For a command whose cgroup count could not be read after it
    ran because the cgroup was gone: the OOM killer took the container's first process, and the
    container -- its cgroup, the command, often the supervisor -- went with it."""
    deadline = time.monotonic() + wait
    while True:
        try:
            container.reload()
            state = container.attrs.get("State") or {}
        except Exception:  # noqa: BLE001 -- docker.errors.*: already removed, or the engine is away
            return False
        if state.get("OOMKilled") or not state.get("Running") or time.monotonic() >= deadline:
            return bool(state.get("OOMKilled"))
        time.sleep(0.05)


def container_gone(container: Any) -> bool:
    """Whether ``container`` no longer runs: stopped (its first process died, the engine restarted) or
    removed. An engine that cannot be asked is not taken for a gone container."""
    import docker.errors

    try:
        container.reload()
    except docker.errors.NotFound:
        return True
    except Exception:  # noqa: BLE001 -- docker.errors.*, requests.*: the engine is away, not the container
        return False
    return not (container.attrs.get("State") or {}).get("Running")


def oom_kills(events: str | None) -> int | None:
    """How many processes the memory cgroup whose ``events`` file this is has OOM-killed; None if unknown."""
    if events is None:
        return None
    try:
        with open(events) as fh:
            for line in fh:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None
