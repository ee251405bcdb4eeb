"""Helpers shared by the sandbox tests (``from tests.sandbox._support import ...``)."""

from __future__ import annotations

import fcntl
import os
import socketserver
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from pytest_ifbench.sandbox import SandboxLimits

#: Generous enough for a loaded machine, short enough to keep the suite quick.
FAST = SandboxLimits(timeout=5.0, cpu_seconds=5)


def memfd_holders(seconds: int) -> str:
    """A program whose eight children each hold 256 MB in a memfd (shared memory, outside RLIMIT_AS) for
    ``seconds``, printing ``held i`` when filled: what only a cgroup's memory cap can stop."""
    return f"""
import os, time
pids = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        fd = os.memfd_create(f"hold{{i}}")
        chunk = b"x" * (1 << 20)
        for _ in range(256):
            os.write(fd, chunk)
        print("held", i, flush=True)
        time.sleep({seconds})
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
"""


def live_group_members(pgid: int) -> list[int]:
    """Pids of non-zombie processes in process group ``pgid``."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    # kill() also "finds" zombies that an init process has not reaped yet.
    live = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            live.append(int(entry))
    return live


class NamedOnlyBackend:
    """A backend that can be chosen (it names itself and has no problem) but never opens a run: for
    tests of how a backend is chosen."""

    name = "fake"

    def problem(self) -> None:
        return None

    def open(self, dirs: object) -> object:
        raise NotImplementedError


def host_shared_memory() -> int:
    """The host's shared memory (``Shmem`` of /proc/meminfo), in bytes."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1]) << 10
    raise AssertionError("no Shmem in /proc/meminfo")


@contextmanager
def shared_memory_to_myself() -> Iterator[None]:
    """Hold apart (an exclusive lock across xdist workers) the tests that measure the host's shared memory
    and those that fill it (memfds, tmpfs-backed workspaces): a measuring test would see the other's."""
    with open(os.path.join(tempfile.gettempdir(), "pytest-ifbench-shared-memory.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def memory_files(container_pid: int) -> tuple[Path, Path | None]:
    """The container's current memory usage file and its peak file (cgroup v1 or v2; peak may be missing)."""
    lines = Path(f"/proc/{container_pid}/cgroup").read_text().splitlines()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            base = Path(f"/sys/fs/cgroup/memory{path}")
            return base / "memory.usage_in_bytes", base / "memory.max_usage_in_bytes"
    path = next(line.split(":", 2)[2] for line in lines if line.startswith("0::"))
    base = Path(f"/sys/fs/cgroup{path}")
    return base / "memory.current", (base / "memory.peak" if (base / "memory.peak").exists() else None)


def container_pid() -> int:
    """The host pid of the one sandbox container running (the test's engine is at ``DOCKER_HOST``)."""
    import docker as client

    (container,) = client.from_env().containers.list(filters={"label": "pytest-ifbench.sandbox"})
    return container.attrs["State"]["Pid"]


class Sampler(threading.Thread):
    """Samples a reading every 10 ms while a job runs; ``peak`` is the largest seen."""

    def __init__(self, read) -> None:
        super().__init__(daemon=True)
        self.read, self.peak, self.stop = read, 0, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, self.read())
            except (OSError, ValueError):
                pass
            time.sleep(0.01)

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.join()


class _RelayEchoHandler(BaseHTTPRequestHandler):
    def setup(self) -> None:
        super().setup()
        self.server.preambles.append(self.rfile.readline())  # type: ignore[attr-defined]  # the relay's first line

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.seen.append((self.path, self.headers.get("x-api-key"), len(body)))  # type: ignore[attr-defined]
        reply = self.server.reply(body)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


class RelayEcho(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """What a sandbox's proxy route reaches, standing in for the proxy: an HTTP server on a unix socket
    that keeps each connection's relay preamble (``preambles``: who the relay says sent it) and each
    request's ``(path, x-api-key, body length)`` (``seen``), and answers ``reply(body)``."""

    daemon_threads = True

    def __init__(self, sock: Path, reply: Callable[[bytes], bytes]) -> None:
        super().__init__(str(sock), _RelayEchoHandler)
        self.reply = reply
        self.preambles: list[bytes] = []
        self.seen: list[tuple[str, str | None, int]] = []


@contextmanager
def relay_echo(sock: Path, reply: Callable[[bytes], bytes] = lambda body: b"ok:" + body) -> Iterator[RelayEcho]:
    """A :class:`RelayEcho` on ``sock``, serving until the block ends."""
    server = RelayEcho(sock, reply)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
