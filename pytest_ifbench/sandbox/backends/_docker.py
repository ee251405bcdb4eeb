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
* binds the run's directories read-write at ``/workspace``, ``/home/agent`` and ``/tmp`` (``/var/tmp`` too:
  the run's ``/tmp`` again, inside its disk budget), and mounts a 1 MiB tmpfs at ``/run``: Podman gives a
  read-only root writable memory-backed ``/var/tmp`` and ``/run`` of half the host's memory each, outside
  the budget (2.5 GB written against a 1 GiB budget);
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
So does a command whose container is gone -- stopped since the last command (its first process killed,
an engine restart) or removed -- and the run's next command after one that took its container with it
(an OOM kill of the first process); only when a new container, too, stops before the command starts
is it the backend's error.

A command given the proxy route (a real agent CLI) runs in a container of its own behind the relay,
with the same mounts and limits (:mod:`._docker_route`).  With a named image (``DockerBackend(image)``,
a suite's ``sandbox: {backend: docker, image: NAME}``) the containers start from that local image as it
is -- its own ``/usr``, toolchain and all, nothing of the host's bound over it; it must hold ``python3``
(3.8+) for the supervisor, and whatever the run's commands need (``node`` for a real CLI).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
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
    sandbox_python,
)
from ._docker_image import LABEL, ensure_image, owner_label, reap_leftovers
from ._docker_supervise import (
    container_gone,
    engine_saw_oom,
    memory_events,
    no_python,
    oom_kills,
    outcome,
    split_status,
    supervise,
)
from ._quota import TmpfsQuota

__all__ = ["DockerBackend", "DockerRun"]

SUPERVISOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_docker_exec.py")
_SUPERVISOR_MOUNT = "/run/ifbench/exec.py"
_CONTROL_MOUNT = "/run/ifbench/ctl"
#: The size of the container's ``/run`` (root's: the command's uid cannot write there).
_RUN_BYTES = 1 << 20
#: The container's rlimits: each command gets its own, never above these, from its supervisor.
_ULIMITS = (("nofile", 8192), ("nproc", 32768))
#: The idle pid 1 of a named image's long-lived container (it may have no ``tail``; it has python3).
_IDLE = "import time\nwhile True: time.sleep(3600)"


class DockerBackend:
    """The ``docker`` backend (see the module doc); ``image``: a local image every container of its runs
    starts from as it is (None: the default image)."""

    name = "docker"

    def __init__(self, image: str | None = None) -> None:
        self.image = image
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
        if self.image is not None:
            try:
                client.images.get(self.image)
            except docker.errors.ImageNotFound:
                return (f"docker image {self.image!r} is not on the Docker Engine at {where}: build, load or pull "
                        "it there first (the backend never pulls)")
            except Exception as exc:  # noqa: BLE001 -- a malformed name, an engine error: the one line
                return f"docker image {self.image!r} cannot be used on the Docker Engine at {where}: {exc}"
        return None

    def with_image(self, image: str) -> DockerBackend:
        """The same backend starting every run's containers from the local image ``image`` as it is."""
        return DockerBackend(image)

    def client(self) -> Any:
        problem = self.problem()
        if problem is not None:
            raise SandboxUnavailable(problem)
        return self._client

    def open(self, dirs: RunDirs) -> DockerRun:
        return DockerRun(self.client(), dirs, self.image)

    def __repr__(self) -> str:
        return f"DockerBackend({self.image!r})" if self.image else "DockerBackend()"


def _python() -> tuple[str, tuple[str, ...]]:
    if os.path.exists("/usr/bin/python3"):
        return "/usr/bin/python3", ()
    return sandbox_python()


class DockerRun:
    """One run's container (see the module doc)."""

    def __init__(self, client: Any, dirs: RunDirs, image: str | None = None) -> None:
        self.client = client
        self.dirs = dirs
        #: The named image the containers start from as it is (None: the default image, see the module doc).
        self.image = image
        self.control = dirs.root / ".control"
        self._container: Any = None
        #: The container's OOM-kill counter file (``_docker_supervise.memory_events``), None until found.
        self._events: str | None = None
        self._mounted: tuple[str, ...] = ()
        self._limits: tuple[int, int, float | None] | None = None
        self._cond = threading.Condition()
        self._running = 0
        self._closed = False
        self.python, needs = ("python3", ()) if image is not None else _python()
        self.base_extra = needs
        self._quota = TmpfsQuota(dirs.root, Limits().max_workspace_mb << 20)
        self.control.mkdir(mode=0o700)

    # --- the container -------------------------------------------------------------------------------

    def _ensure(self, extra: Sequence[str], limits: Limits) -> Any:
        need = tuple(dict.fromkeys([*self._mounted, *self.base_extra, *extra]))
        cgroup = (limits.run_memory_mb, limits.max_processes, limits.cpus)
        with self._cond:
            if self._container is not None and set(need) <= set(self._mounted) and (
                    cgroup == self._limits or self._update(cgroup)):
                self._running += 1
                return self._container
            while self._running:
                self._cond.wait()
            self._remove_container()
            self._container = self._create(need, cgroup)
            self._events = memory_events(self._container)
            self._mounted, self._limits = need, cgroup
            self._running += 1
            return self._container

    def _create(self, extra: Sequence[str], cgroup: tuple[int, int, float | None]) -> Any:
        idle = ["/usr/bin/tail", "-f", "/dev/null"] if self.image is None else [self.python, "-I", "-S", "-c", _IDLE]
        container = self.client.containers.create(self.image_tag(), idle, **self.spec(extra, cgroup))
        try:
            container.start()
        except Exception as exc:  # noqa: BLE001 -- docker.errors.APIError: the image cannot start it
            container.remove(force=True)
            if self.image is not None and "python3" in str(exc):
                raise SandboxUnavailable(no_python(self.image, str(exc).encode())) from None
            raise
        return container

    def image_tag(self) -> str:
        """The image the run's containers start from: the named one, else the default (imported if needed)."""
        return self.image if self.image is not None else ensure_image(self.client)

    def spec(self, extra: Sequence[str], cgroup: tuple[int, int, float | None],
             more: Sequence[Any] = ()) -> dict[str, Any]:
        """The keyword arguments of ``containers.create`` every container of the run shares (see the
        module doc); ``more``: further mounts."""
        from docker.types import Mount, Ulimit

        dirs = self.dirs
        mounts = [] if self.image is not None else [
            Mount(f"/{name}", f"/{name}", type="bind", read_only=True) for name in SYSTEM_DIRS
            if os.path.isdir(f"/{name}") and not os.path.islink(f"/{name}")]
        mounts += [Mount(MOUNT, str(dirs.workspace), type="bind"), Mount(HOME, str(dirs.home), type="bind"),
                   Mount("/tmp", str(dirs.tmp), type="bind"), Mount("/var/tmp", str(dirs.tmp), type="bind"),
                   Mount("/run", "", type="tmpfs", tmpfs_size=_RUN_BYTES, tmpfs_mode=0o755),
                   Mount(_CONTROL_MOUNT, str(self.control), type="bind", read_only=True),
                   Mount(_SUPERVISOR_MOUNT, SUPERVISOR, type="bind", read_only=True), *more]
        for path in extra:
            _check_extra(path)
            mounts.append(Mount(path, path, type="bind", read_only=True))
        memory, pids, cpus = cgroup
        return dict(read_only=True, network_mode="none", mounts=mounts, working_dir=MOUNT, hostname="sandbox",
                    mem_limit=memory << 20, memswap_limit=memory << 20, pids_limit=pids + 8,
                    nano_cpus=int(cpus * 1e9) if cpus else 0, cap_drop=["ALL"], cap_add=["SETUID", "SETGID", "KILL"],
                    security_opt=["no-new-privileges"], labels={LABEL: owner_label()},
                    environment={}, shm_size=64 << 20,
                    # Podman's default nofile and nproc limits are above what its runtime may set in a
                    # container without CAP_SYS_RESOURCE: ours, within which the supervisor sets each command's.
                    ulimits=[Ulimit(name=name, soft=value, hard=value) for name, value in _ULIMITS])

    def _update(self, cgroup: tuple[int, int, float | None]) -> bool:
        """Change the running container's cgroup limits; False when the engine cannot (Podman 4's
        Docker-compatible API has no update endpoint): the caller then makes a new container."""
        memory, pids, cpus = cgroup
        try:
            self._container.update(mem_limit=memory << 20, memswap_limit=memory << 20,
                                   **({"nano_cpus": int(cpus * 1e9)} if cpus else {}))
        except Exception:  # noqa: BLE001 -- docker.errors.APIError (404 on Podman, or the container is gone)
            return False
        self._limits = cgroup
        return True

    def _forget(self, container: Any) -> None:
        """``container`` is done for (gone, or its command's processes may outlive it): if it is still the
        run's, it is removed and the next command gets a new one."""
        with self._cond:
            if self._container is container:
                self._remove_container()

    def _remove_container(self) -> None:
        if self._container is not None:
            try:
                self._container.remove(force=True)
            except Exception:  # noqa: BLE001 -- already gone
                pass
            self._container, self._events = None, None

    # --- commands -------------------------------------------------------------------------------------

    def run(self, argv: tuple[str, ...], *, limits: Limits, env: Mapping[str, str], stdin: str | None,
            route: ProxyRoute | None, extra_ro: Sequence[str], disk_budget: int | None) -> CommandResult:
        if self._closed:
            raise RuntimeError("the docker run is closed")
        for key, value in env.items():
            if not key or "=" in key or "\0" in key or "\0" in value:
                raise ValueError(f"invalid environment variable {key!r}")
        self._quota.resize(limits.max_workspace_mb << 20)
        extra = [str(p) for p in extra_ro]
        if route is not None:
            from ._docker_route import run_routed

            return run_routed(self, argv, limits=limits, env=dict(env), stdin=stdin, route=route, extra=extra,
                              disk_budget=disk_budget)
        try:
            return self._run_pooled(argv, extra, limits, dict(env), stdin, disk_budget)
        except _ContainerGone:  # died or was removed since its last command: once more, in a new one
            try:
                return self._run_pooled(argv, extra, limits, dict(env), stdin, disk_budget)
            except _ContainerGone:
                raise SandboxUnavailable("docker: a new container stopped before a command could start in it"
                                         " (see the engine's log)") from None

    def _run_pooled(self, argv: tuple[str, ...], extra: Sequence[str], limits: Limits, env: dict[str, str],
                    stdin: str | None, disk_budget: int | None) -> CommandResult:
        container = self._ensure(extra, limits)
        try:
            return self._exec(container, argv, limits, env, stdin, disk_budget)
        except _ContainerGone:
            self._forget(container)
            raise
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()

    def request(self, argv: Sequence[str], limits: Limits, env: Mapping[str, str], stdin: str | None,
                ids: tuple[int, int] | None = None) -> tuple[list[str], list[Path]]:
        """Write the supervisor's request (and the command's stdin) into the control directory: (the
        supervisor's argv inside the container, the host files to remove afterwards).  ``ids``: the
        uid/gid to start ``argv`` as (default: the run's)."""
        name = uuid.uuid4().hex
        files = [self.control / f"{name}.json"]
        if stdin:
            files.append(self.control / f"{name}.in")
            files[1].write_bytes(stdin.encode("utf-8", "surrogatepass"))
        cpu = limits.cpu_limit()
        memory = limits.memory_mb << 20
        uid, gid = ids or (self.dirs.uid, self.dirs.gid)
        request = {"argv": list(argv), "env": {**env, "PWD": MOUNT}, "uid": uid, "gid": gid,
                   "cwd": MOUNT, "timeout": limits.timeout, "max_output_bytes": limits.max_output_bytes,
                   "stdin": f"{_CONTROL_MOUNT}/{name}.in" if stdin else None,
                   "rlimits": [["RLIMIT_CPU", cpu, cpu + 2], ["RLIMIT_AS", memory, memory],
                               ["RLIMIT_NPROC", limits.max_processes, limits.max_processes],
                               ["RLIMIT_FSIZE", limits.max_file_mb << 20, limits.max_file_mb << 20],
                               ["RLIMIT_NOFILE", 4096, 4096], ["RLIMIT_CORE", 0, 0]]}
        files[0].write_text(json.dumps(request))
        return [self.python, "-I", "-S", "-B", _SUPERVISOR_MOUNT, f"{_CONTROL_MOUNT}/{name}.json"], files

    def _exec(self, container: Any, argv: tuple[str, ...], limits: Limits, env: dict[str, str],
              stdin: str | None, disk_budget: int | None) -> CommandResult:
        supervisor, files = self.request(argv, limits, env, stdin)
        if self._events is None:  # not found when the container started: try once more
            self._events = memory_events(container)
        events = self._events
        oom_before = oom_kills(events)
        start = time.monotonic()
        try:
            api = self.client.api
            try:
                exec_id = api.exec_create(container.id, supervisor, stdin=True, user="0", workdir="/",
                                          environment={})["Id"]
            except Exception:
                if container_gone(container):  # nothing ran: the caller retries in a new container
                    raise _ContainerGone from None
                raise
            out, err, backstop, disk = supervise(api.exec_start(exec_id, socket=True), self.dirs, limits,
                                                 disk_budget, start)
            if backstop:
                self._forget(container)  # the supervisor did not end in time: the whole container goes
        finally:
            for path in files:
                path.unlink(missing_ok=True)
        status, err = split_status(err)
        oom_after = oom_kills(events)
        # Two reads of one file, found when the container started: no engine round trip that can fail
        # under load in between (a failed reading counted as 0 hid a kill); unknown stays unknown.
        oom = oom_before is not None and oom_after is not None and oom_after > oom_before
        if oom_before is not None and oom_after is None and not backstop:
            oom = engine_saw_oom(container)  # the cgroup is gone: its first process was killed, the container with it
            if container_gone(container):
                self._forget(container)
        if not status and not backstop:
            if self.image is not None and api.exec_inspect(exec_id).get("ExitCode") in (126, 127):
                raise SandboxUnavailable(no_python(self.image, err))
            # The supervisor itself died (the cgroup's OOM killer may pick it): its orphans would
            # outlive the command, so the whole container goes; the next command gets a new one.
            self._forget(container)
        return outcome(argv, status, out, err, backstop=backstop, disk=disk, oom=oom, cpu=limits.cpu_limit(),
                       start=start)

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


class _ContainerGone(Exception):
    """The run's container stopped or was removed before a command could start in it."""


def _check_extra(path: str) -> None:
    norm = os.path.normpath(path)
    if not os.path.isabs(norm):
        raise ValueError(f"extra_ro paths must be absolute: {path!r}")
    if norm in ("/", "/tmp") or any(norm == r or norm.startswith(r + "/") for r in (MOUNT, HOME, "/proc", "/dev",
                                                                                   "/run/ifbench")):
        raise ValueError(f"extra_ro path would cover a sandbox directory: {path!r}")
    if not os.path.exists(norm):
        raise FileNotFoundError(f"extra_ro path does not exist: {path!r}")
