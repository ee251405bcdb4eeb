"""The docker backend's proxy route: a real agent CLI in a container of its own whose only way out is the
recording proxy's Unix socket.

A command given a :class:`~..backend.ProxyRoute` does not run in the run's long-lived container (where
``docker exec`` would give it whatever pid comes next) but in a fresh one made for it, with the same
mounts, limits and labels plus the proxy's socket at :data:`SOCKET` and the relay (:mod:`.._forward`)
at :data:`FORWARDER`.  Its pid 1 is the per-command supervisor (:mod:`._docker_exec`), whose first child
-- pid 2 of the container's PID namespace, as under bubblewrap -- is the relay, started as the run's uid
in front of the command::

    supervisor (pid 1, root of the container) -> relay (pid 2, the run's uid) -> the CLI -> its tools

So the guarantees the proxy and the relay give under bubblewrap hold unchanged: the proxy accepts Unix
connections only from pid 2 of a PID namespace one below its own (``SO_PEERCRED``), which is this relay;
the relay traces each TCP connection to the processes holding it and refuses (and reports) the agent's
tool commands; the proxy ends a capped CLI by killing the sandbox's pid 1, which ends the container and
everything in it.  The network is ``none`` (only ``lo``), so ``127.0.0.1:port`` is the relay's alone.

The container is attached to before it starts (its stdout and stderr, and its stdin: the host's cancel),
and removed when the command ends.  Its files are the run's host directories, so nothing is lost.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..backend import CommandResult, Limits, ProxyRoute, SandboxUnavailable
from ._docker_supervise import no_python, outcome, split_status, supervise

__all__ = ["FORWARDER", "SOCKET", "run_routed"]

#: Where the proxy's socket and the relay appear inside the container (the paths bubblewrap uses).
SOCKET = "/run/ifbench/proxy.sock"
FORWARDER = "/run/ifbench/forward.py"
#: The capabilities the relay keeps to trace connections (``_forward._KEPT_CAPABILITIES``); the
#: command and its tools, started as the run's uid under no-new-privileges, have none.
_RELAY_CAPABILITIES = ("DAC_READ_SEARCH", "SYS_PTRACE")
_FORWARD_SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_forward.py")


def run_routed(run: Any, argv: tuple[str, ...], *, limits: Limits, env: dict[str, str], stdin: str | None,
               route: ProxyRoute, extra: Sequence[str], disk_budget: int | None) -> CommandResult:
    """Run ``argv`` behind the relay in a container of its own (see the module doc); ``run`` is the
    run's :class:`._docker.DockerRun` (its client, directories, image, request and container spec)."""
    from docker.types import Mount

    if not 0 < route.port < 65536:
        raise ValueError(f"ProxyRoute.port must be 1-65535, got {route.port}")
    _grant(route.socket, run.dirs.uid)
    relayed = (run.python, "-I", "-S", "-B", FORWARDER, "--as", f"{run.dirs.uid}:{run.dirs.gid}",
               *(("--launcher",) if route.launcher else ()), str(route.port), SOCKET, "--", *argv)
    supervisor, files = run.request(relayed, limits, env, stdin, ids=(0, 0))
    mounts = [Mount(SOCKET, str(route.socket), type="bind", read_only=True),
              Mount(FORWARDER, _FORWARD_SOURCE, type="bind", read_only=True)]
    cgroup = (limits.run_memory_mb, limits.max_processes, limits.cpus)
    spec = run.spec(tuple(dict.fromkeys([*run.base_extra, *extra])), cgroup, mounts)
    api = run.client.api
    container: Any = None
    try:
        spec.update(working_dir="/", cap_add=[*spec["cap_add"], *_RELAY_CAPABILITIES])
        container = _create(run.client, run.image_tag(), supervisor, spec)
        sock = api.attach_socket(container.id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        start = time.monotonic()
        try:
            container.start()
        except Exception as exc:  # noqa: BLE001 -- docker.errors.APIError: the image cannot start the supervisor
            if run.image is not None and "python3" in str(exc):
                raise SandboxUnavailable(no_python(run.image, str(exc).encode())) from None
            raise
        out, err, backstop, disk = supervise(sock, run.dirs, limits, disk_budget, start)
        if backstop:
            container.kill()
        state = _final_state(container)
    finally:
        for path in files:
            path.unlink(missing_ok=True)
        if container is not None:
            try:
                container.remove(force=True)
            except Exception:  # noqa: BLE001 -- already gone
                pass
    status, err = split_status(err)
    code = state.get("ExitCode")
    if not status and not backstop and run.image is not None and code in (126, 127):
        raise SandboxUnavailable(no_python(run.image, err))
    # No record and no backstop: pid 1 was killed from outside (the proxy ending a capped CLI, the
    # cgroup's OOM killer): everything in the container died with it; report its status as the exit.
    return outcome(argv, status, out, err, backstop=backstop, disk=disk, oom=bool(state.get("OOMKilled")),
                   cpu=limits.cpu_limit(), start=start, lost=code if isinstance(code, int) else 137)


#: The container's own keys of :meth:`._docker.DockerRun.spec`; the rest configure its host side.
_CONTAINER_KEYS = ("working_dir", "hostname", "labels", "environment")


def _create(client: Any, image: str, command: Sequence[str], spec: dict[str, Any]) -> Any:
    """``containers.create`` with ``/proc`` read-only (``ReadonlyPaths``, which docker-py does not
    expose): the CLI's tool commands run as its user, and a writable ``/proc/<pid>/mem`` would let
    them write the CLI's memory (the relay's seccomp filter covers ptrace and the rest)."""
    api = client.api
    host = api.create_host_config(**{key: value for key, value in spec.items() if key not in _CONTAINER_KEYS})
    host["ReadonlyPaths"] = ["/proc"]
    created = api.create_container(image, list(command), stdin_open=True, user="0", host_config=host,
                                   **{key: spec[key] for key in _CONTAINER_KEYS if key in spec})
    return client.containers.get(created["Id"])


def _grant(sock: Path, uid: int) -> None:
    """Let the relay (root of the container, no capabilities: group 0) and, as under bubblewrap, the run's
    uid connect to the socket: the proxy itself refuses everyone but the relay (see the module doc)."""
    if not stat.S_ISSOCK(os.stat(sock).st_mode):
        raise ValueError(f"ProxyRoute.socket is not a Unix socket: {sock}")
    os.chown(sock, uid, 0)
    os.chmod(sock, 0o770)


def _final_state(container: Any) -> dict[str, Any]:
    """The container's state once it has stopped (waited for at most 10 s)."""
    try:
        container.wait(timeout=10)
    except Exception:  # noqa: BLE001 -- still running: the removal kills it
        pass
    try:
        container.reload()
        return dict(container.attrs.get("State") or {})
    except Exception:  # noqa: BLE001
        return {}
