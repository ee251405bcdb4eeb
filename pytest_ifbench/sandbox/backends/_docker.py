"""The docker backend: one container per agent run on a Docker Engine API, each command a ``docker exec``.

Reached with the ``docker`` client from PyPI (``pip install 'pytest-ifbench[docker]'``) at
``DOCKER_HOST`` (default: the local socket), which must be an engine on this host: the run's
directories are bind-mounted from the host, so a remote engine cannot see them.

The container (created at the run's first command, removed at :meth:`DockerRun.close`):

* runs every command as the run's unprivileged uid (its pid 1, an idle ``tail -f /dev/null``, and the per-command
  supervisor are root of the container with only SETUID, SETGID and KILL: an exec's capabilities
  come from the container's user), with a read-only root file system built from a local image
  (:mod:`._docker_image`: no registry) and the host's ``/usr``, ``/etc``, ``/opt``, ``/bin``,
  ``/sbin``, ``/lib*`` bound read-only -- the same toolchain bubblewrap shows;
* binds the run's directories read-write at ``/workspace``, ``/home/agent`` and ``/tmp``;
* has no network (``--network none``: only ``lo``), no capabilities for the command, no-new-privileges;
* is capped by its cgroup: memory (``Limits.run_memory_mb``, shared memory and page cache included,
  no swap), pids (``Limits.max_processes``), CPU (``Limits.cpus``);
* is labelled ``pytest-ifbench.sandbox`` with our host and pid, so a later start-up removes the
  containers of a process that died without cleaning up (``kill -9`` of pytest).

The run's root is a host tmpfs of about ``Limits.max_workspace_mb`` (a kernel quota; needs root),
and the same walk as bubblewrap's watchdog kills a command growing past the budget.  Each command
runs under :mod:`._docker_exec` (rlimits as with bubblewrap, a subreaper that ends its whole process
tree, the timeout and output caps).  ``extra_ro`` paths are bind mounts: a command naming a path the
container does not have yet gets a new container with it (the files live on the host, nothing is lost).

Not yet: the proxy route for real agent CLIs (``run(route=...)`` raises :class:`SandboxUnavailable`).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from .._namespaces import tree_usage
from ..backend import (
    HOME,
    MOUNT,
    SYSTEM_DIRS,
    CommandResult,
    Limits,
    ProxyRoute,
    RunDirs,
    SandboxUnavailable,
    classify,
    sandbox_python,
)
from ._docker_image import LABEL, ensure_image, reap_leftovers
from ._quota import TmpfsQuota

__all__ = ["DockerBackend", "DockerRun"]

SUPERVISOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_docker_exec.py")
_SUPERVISOR_MOUNT = "/run/ifbench/exec.py"
_CONTROL_MOUNT = "/run/ifbench/ctl"
_MARK = b"\0IFBENCH-EXEC "


class DockerBackend:
    """The ``docker`` backend (see the module doc)."""

    name = "docker"

    def __init__(self) -> None:
        self._client: Any = None
        self._problem: list[str | None] = []
        self._lock = threading.Lock()

    def problem(self) -> str | None:
        with self._lock:
            if not self._problem:
                self._problem.append(self._diagnose())
            return self._problem[0]

    def _diagnose(self) -> str | None:
        try:
            import docker
        except ImportError:
            return "the docker backend needs the docker client: pip install 'pytest-ifbench[docker]'"
        if os.geteuid() != 0:
            return "the docker backend needs root on this host (the workspace quota is a tmpfs mount)"
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        try:
            client = docker.from_env(timeout=60)
            client.ping()
        except Exception as exc:  # noqa: BLE001 -- any failure to reach the engine is the one line
            return f"no Docker Engine reachable at {where} ({type(exc).__name__}): start dockerd or set DOCKER_HOST"
        self._client = client
        try:
            reap_leftovers(client)
        except Exception as exc:  # noqa: BLE001
            return f"the Docker Engine at {where} cannot list containers: {exc}"
        return None

    def client(self) -> Any:
        problem = self.problem()
        if problem is not None:
            raise SandboxUnavailable(problem)
        return self._client

    def open(self, dirs: RunDirs) -> DockerRun:
        return DockerRun(self.client(), dirs)

    def __repr__(self) -> str:
        return "DockerBackend()"


def _python() -> tuple[str, tuple[str, ...]]:
    if os.path.exists("/usr/bin/python3"):
        return "/usr/bin/python3", ()
    return sandbox_python()


class DockerRun:
    """One run's container (see the module doc)."""

    def __init__(self, client: Any, dirs: RunDirs) -> None:
        self.client = client
        self.dirs = dirs
        self.control = dirs.root / ".control"
        self._container: Any = None
        self._mounted: tuple[str, ...] = ()
        self._limits: tuple[int, int, float | None] | None = None
        self._cond = threading.Condition()
        self._running = 0
        self._closed = False
        self._python, needs = _python()
        self._base_extra = needs
        self._quota = TmpfsQuota(dirs.root, Limits().max_workspace_mb << 20)
        self.control.mkdir(mode=0o700)

    # --- the container -------------------------------------------------------------------------------

    def _ensure(self, extra: Sequence[str], limits: Limits) -> Any:
        need = tuple(dict.fromkeys([*self._mounted, *self._base_extra, *extra]))
        cgroup = (limits.run_memory_mb, limits.max_processes, limits.cpus)
        with self._cond:
            if self._container is not None and set(need) <= set(self._mounted):
                if cgroup != self._limits:
                    self._update(cgroup)
                self._running += 1
                return self._container
            while self._running:
                self._cond.wait()
            self._remove_container()
            self._container = self._create(need, cgroup)
            self._mounted, self._limits = need, cgroup
            self._running += 1
            return self._container

    def _create(self, extra: Sequence[str], cgroup: tuple[int, int, float | None]) -> Any:
        from docker.types import Mount

        dirs = self.dirs
        mounts = [Mount(f"/{name}", f"/{name}", type="bind", read_only=True) for name in SYSTEM_DIRS
                  if os.path.isdir(f"/{name}") and not os.path.islink(f"/{name}")]
        mounts += [Mount(MOUNT, str(dirs.workspace), type="bind"), Mount(HOME, str(dirs.home), type="bind"),
                   Mount("/tmp", str(dirs.tmp), type="bind"),
                   Mount(_CONTROL_MOUNT, str(self.control), type="bind", read_only=True),
                   Mount(_SUPERVISOR_MOUNT, SUPERVISOR, type="bind", read_only=True)]
        for path in extra:
            _check_extra(path)
            mounts.append(Mount(path, path, type="bind", read_only=True))
        memory, pids, cpus = cgroup
        container = self.client.containers.create(
            ensure_image(self.client), ["/usr/bin/tail", "-f", "/dev/null"], read_only=True, network_mode="none",
            mounts=mounts, working_dir=MOUNT, hostname="sandbox",
            mem_limit=memory << 20, memswap_limit=memory << 20, pids_limit=pids + 8,
            nano_cpus=int(cpus * 1e9) if cpus else 0, cap_drop=["ALL"], cap_add=["SETUID", "SETGID", "KILL"],
            security_opt=["no-new-privileges"], labels={LABEL: f"{socket.gethostname()}:{os.getpid()}"},
            environment={}, shm_size=64 << 20)
        container.start()
        return container

    def _update(self, cgroup: tuple[int, int, float | None]) -> None:
        memory, pids, cpus = cgroup
        self._container.update(mem_limit=memory << 20, memswap_limit=memory << 20,
                               **({"nano_cpus": int(cpus * 1e9)} if cpus else {}))
        self._limits = cgroup

    def _remove_container(self) -> None:
        if self._container is not None:
            try:
                self._container.remove(force=True)
            except Exception:  # noqa: BLE001 -- already gone
                pass
            self._container = None

    # --- commands -------------------------------------------------------------------------------------

    def run(self, argv: tuple[str, ...], *, limits: Limits, env: Mapping[str, str], stdin: str | None,
            route: ProxyRoute | None, extra_ro: Sequence[str], disk_budget: int | None) -> CommandResult:
        if self._closed:
            raise RuntimeError("the docker run is closed")
        if route is not None:
            raise SandboxUnavailable("the docker backend does not carry the proxy route for real agent CLIs yet: "
                                     "use --ifbench-sandbox=bubblewrap for them")
        for key, value in env.items():
            if not key or "=" in key or "\0" in key or "\0" in value:
                raise ValueError(f"invalid environment variable {key!r}")
        self._quota.resize(limits.max_workspace_mb << 20)
        container = self._ensure([str(p) for p in extra_ro], limits)
        try:
            return self._exec(container, argv, limits, dict(env), stdin, disk_budget)
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()

    def _exec(self, container: Any, argv: tuple[str, ...], limits: Limits, env: dict[str, str],
              stdin: str | None, disk_budget: int | None) -> CommandResult:
        name = uuid.uuid4().hex
        stdin_path = None
        if stdin:
            stdin_path = self.control / f"{name}.in"
            stdin_path.write_bytes(stdin.encode("utf-8", "surrogatepass"))
        cpu = limits.cpu_limit()
        memory = limits.memory_mb << 20
        request = {"argv": list(argv), "env": {**env, "PWD": MOUNT}, "uid": self.dirs.uid, "gid": self.dirs.gid,
                   "cwd": MOUNT, "timeout": limits.timeout, "max_output_bytes": limits.max_output_bytes,
                   "stdin": f"{_CONTROL_MOUNT}/{name}.in" if stdin_path else None,
                   "rlimits": [["RLIMIT_CPU", cpu, cpu + 2], ["RLIMIT_AS", memory, memory],
                               ["RLIMIT_NPROC", limits.max_processes, limits.max_processes],
                               ["RLIMIT_FSIZE", limits.max_file_mb << 20, limits.max_file_mb << 20],
                               ["RLIMIT_NOFILE", 4096, 4096], ["RLIMIT_CORE", 0, 0]]}
        (self.control / f"{name}.json").write_text(json.dumps(request))
        oom_before = _oom_kills(container)
        start = time.monotonic()
        try:
            api = self.client.api
            exec_id = api.exec_create(container.id, [self._python, "-I", "-S", "-B", _SUPERVISOR_MOUNT,
                                                     f"{_CONTROL_MOUNT}/{name}.json"],
                                      stdin=True, user="0", workdir="/", environment={})["Id"]
            sock = api.exec_start(exec_id, socket=True)
            raw = getattr(sock, "_sock", sock)
            watch = _DiskWatch(self.dirs.roots(), disk_budget, limits.max_workspace_entries, raw)
            watch.start()
            try:
                out, err, backstop = _collect(raw, start + limits.timeout + 10.0)
            finally:
                watch.stop()
                raw.close()
            if backstop:
                self._remove_container()  # the supervisor did not end in time: the whole container goes
        finally:
            for suffix in (".json", ".in"):
                (self.control / f"{name}{suffix}").unlink(missing_ok=True)
        status: dict[str, Any] = {}
        at = err.rfind(_MARK)
        if at >= 0:
            try:
                status = json.loads(err[at + len(_MARK):])
            except ValueError:
                status = {}
            err = err[:at]
        oom = _oom_kills(container) > oom_before
        if not status and not backstop:
            # The supervisor itself died (the cgroup's OOM killer may pick it): its orphans would
            # outlive the command, so the whole container goes; the next command gets a new one.
            with self._cond:
                self._remove_container()
        killed_for = status.get("killed_for") or ("timeout" if backstop or not status else None)
        if killed_for == "cancel":
            killed_for = "timeout"
        if oom and killed_for in (None, "timeout") and not backstop:
            killed_for = "memory"
        if watch.killed:
            killed_for = None
        returncode = status.get("returncode")
        if returncode == 128 + 9 and killed_for is None and status.get("cpu", 0) >= cpu - 0.5:
            returncode = 128 + 24  # the hard CPU limit's SIGKILL after SIGXCPU
        if status.get("killed_for") or watch.killed or backstop or not status:
            returncode = None
        text_err = err.decode("utf-8", "replace")
        return CommandResult(argv=argv, returncode=returncode, stdout=out.decode("utf-8", "replace"), stderr=text_err,
                             duration=time.monotonic() - start,
                             limit=classify(returncode, killed_for, text_err, disk=watch.killed))

    def disk_usage(self, max_entries: int) -> int | None:
        return tree_usage(self.dirs.roots(), max_entries=max_entries)

    def close(self, *, keep: bool = False) -> None:
        if self._closed:
            return
        self._closed = True
        with self._cond:
            self._remove_container()
        shutil.rmtree(self.control, ignore_errors=True)
        self._quota.release(keep=keep)


def _check_extra(path: str) -> None:
    norm = os.path.normpath(path)
    if not os.path.isabs(norm):
        raise ValueError(f"extra_ro paths must be absolute: {path!r}")
    if norm in ("/", "/tmp") or any(norm == r or norm.startswith(r + "/") for r in (MOUNT, HOME, "/proc", "/dev",
                                                                                   "/run/ifbench")):
        raise ValueError(f"extra_ro path would cover a sandbox directory: {path!r}")
    if not os.path.exists(norm):
        raise FileNotFoundError(f"extra_ro path does not exist: {path!r}")


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


def _oom_kills(container: Any) -> int:
    """How many processes the container's memory cgroup has OOM-killed (cgroup v1 or v2), 0 if unknown."""
    try:
        container.reload()
        pid = container.attrs["State"]["Pid"]
        with open(f"/proc/{pid}/cgroup") as fh:
            lines = fh.read().splitlines()
    except Exception:  # noqa: BLE001
        return 0
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            candidates = [f"/sys/fs/cgroup/memory{path}/memory.oom_control"]
            break
    else:
        candidates = [f"/sys/fs/cgroup{path}/memory.events" for line in lines if line.startswith("0::")
                      for path in [line.split(":", 2)[2]]]
    for name in candidates:
        try:
            with open(name) as fh:
                for line in fh:
                    if line.startswith("oom_kill "):
                        return int(line.split()[1])
        except OSError:
            continue
    return 0
