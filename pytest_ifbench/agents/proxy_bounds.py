"""The recording proxy's bounds and its test of who is calling (:mod:`.proxy` uses them).

Sizes: :data:`MAX_BODY_BYTES`, :data:`MAX_DEPTH`, :data:`MAX_CONNECTIONS` (the :class:`Bounded` servers,
:class:`UnixServer` and :class:`TCPServer`, answer one more connection 503 from the listening thread),
:data:`MAX_RECORDED_REFUSALS`. Origin:
:func:`not_the_relay` tells the sandbox's relay (:mod:`pytest_ifbench.sandbox._forward`) from anything else
connecting to the proxy's Unix socket. Redaction of what goes back into the sandbox: :func:`redact_bytes`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import socketserver
import struct
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .._redact import redact
from ..sandbox._forward import PREAMBLE_REFUSED
from .trajectory import too_deep

__all__ = ["LIMIT_KIND", "MAX_BODY_BYTES", "MAX_CONNECTIONS", "MAX_DEPTH", "MAX_RECORDED_REFUSALS", "NOT_CLI",
           "Bounded", "Rejected", "SandboxEnder", "TCPServer", "UnixServer", "bind_path", "not_the_relay", "read_body",
           "relay_preamble", "redact_bytes", "sandbox_init"]

#: Largest request body read (the Messages API's own limit is 32 MB).
MAX_BODY_BYTES = 32 << 20
#: Deepest nesting of arrays and objects in a request body.
MAX_DEPTH = 128
#: Connections served at once (each has a thread); more are answered 503 at once.
MAX_CONNECTIONS = 64
#: Refused requests recorded in full (a flood beyond is counted: ``RecordingProxy.refused``).
MAX_RECORDED_REFUSALS = 200
#: The kind of refusal meaning "not the agent CLI's own traffic".
NOT_CLI = "not_cli"
#: The kind of refusal meaning "the run reached a limit" (max_steps, max_tokens, max_seconds, max_cost).
LIMIT_KIND = "limit"
#: Longest Unix socket path ``bind`` accepts (``sun_path`` is 108 bytes with its NUL).
_MAX_SOCKET_PATH = 107


def bind_path(path: Path) -> tuple[str, int | None]:
    """The address to ``bind`` for ``path`` and a directory fd to close after the server: a path too
    long for ``sun_path`` is reached through ``/proc/self/fd/<fd of its directory>/<name>``."""
    path.unlink(missing_ok=True)
    if len(os.fsencode(path)) <= _MAX_SOCKET_PATH:
        return str(path), None
    if len(os.fsencode(path.name)) > _MAX_SOCKET_PATH - 30:
        raise ValueError(f"socket file name too long: {path.name!r}")
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    return f"/proc/self/fd/{fd}/{path.name}", fd


def relay_preamble(connection: socket.socket, rfile: Any, timeout: float) -> bytes | None:
    """The relay's first line when the connection starts with one (peeked first, so nothing else is
    consumed), else None; waits at most 5 s for the first bytes, then restores ``timeout``."""
    prefix = PREAMBLE_REFUSED[:len("IFBENCH-RELAY ")]
    deadline = time.monotonic() + 5
    try:
        connection.settimeout(5)
        while True:
            peeked = connection.recv(len(prefix), socket.MSG_PEEK)
            if not peeked or not prefix.startswith(peeked):
                return None
            if peeked == prefix:
                return rfile.readline(512)
            if time.monotonic() > deadline:
                return None
            time.sleep(0.005)
    except OSError:
        return None
    finally:
        try:
            connection.settimeout(timeout)
        except OSError:
            pass



def redact_bytes(data: bytes) -> bytes:
    """``data`` with every secret replaced (:func:`redact`); bytes that are not UTF-8 are kept as they are."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    cleaned = redact(text)
    return data if cleaned == text else cleaned.encode("utf-8")


def _nspids(pid: int | str) -> list[str]:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("NSpid:"):
                    return line.split()[1:]
    except OSError:
        pass
    return []


def not_the_relay(connection: socket.socket) -> str | None:
    """None when the peer of a Unix ``connection`` is a sandbox's relay, else who it is.  The relay is
    pid 2 of a PID namespace one below ours (bubblewrap), or a process of uid 0 whose parent is pid 1 of
    such a namespace (the docker backend: the relay is root of the container, its first process after
    the supervisor; the sandbox's commands never run as root)."""
    try:
        pid, uid, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                                struct.calcsize("3i")))
    except OSError as exc:
        return f"a connection whose peer cannot be told ({exc})"
    ours, theirs = _nspids("self"), _nspids(pid)
    if ours and len(theirs) == len(ours) + 1 and (
            theirs[-1] == "2" or (uid == 0 and _parent_is_init(pid, len(theirs)))):
        return None
    inside = f"pid {theirs[-1]} in the sandbox" if len(theirs) > len(ours) else f"pid {pid}"
    return f"a direct connection to the proxy's socket from {inside}, not through the relay"


def _parent_is_init(pid: int, depth: int) -> bool:
    """Whether ``pid``'s parent is pid 1 of its PID namespace (``depth`` levels deep, as ``pid`` is)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            parent = next((int(line.split()[1]) for line in fh if line.startswith("PPid:")), 0)
    except (OSError, ValueError):
        return False
    parents = _nspids(parent) if parent else []
    return len(parents) == depth and parents[-1] == "1"


def sandbox_init(connection: socket.socket) -> int | None:
    """A pidfd of the sandbox's pid 1 for a connection from its relay (the relay's parent, checked to be
    the init of the PID namespace one below ours), else None. Killing it ends every process of the
    sandbox -- the CLI's whole tree -- and the pidfd never signals a recycled pid."""
    try:
        pid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                       struct.calcsize("3i")))[0]
        relay = os.pidfd_open(pid)
    except OSError:
        return None
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            parent = next((int(line.split()[1]) for line in fh if line.startswith("PPid:")), 0)
        init = os.pidfd_open(parent)
    except (OSError, ValueError):
        os.close(relay)
        return None
    try:
        signal.pidfd_send_signal(relay, 0)  # the relay still lives: its parent pid was not recycled
    except OSError:
        os.close(init)
        return None
    finally:
        os.close(relay)
    ours, theirs = _nspids("self"), _nspids(parent)
    if not ours or len(theirs) != len(ours) + 1 or theirs[-1] != "1":
        os.close(init)
        return None
    return init


class SandboxEnder:
    """Ends the CLI's sandbox (every process in it) once a run is stopped: :meth:`adopt` the sandbox of the
    relay connections (:func:`sandbox_init`) -- each user turn's command is a sandbox of its own, so a later
    turn's replaces one that has ended --, :meth:`end` kills it after :attr:`grace` seconds -- time for the
    CLI to read the refusal it was just sent and print it -- and :meth:`close` lets go."""

    def __init__(self, grace: float = 1.0) -> None:
        self.grace = grace
        self._lock = threading.Lock()
        self._pidfd: int | None = None
        self._timer: threading.Timer | None = None
        self.ended = False

    def adopt(self, connection: socket.socket) -> None:
        with self._lock:
            if self._pidfd is not None and _alive(self._pidfd):
                return
        pidfd = sandbox_init(connection)
        if pidfd is None:
            return
        with self._lock:
            if self._pidfd is None or not _alive(self._pidfd):  # none yet, or an earlier turn's, ended
                self._pidfd, pidfd = pidfd, self._pidfd
        if pidfd is not None:
            os.close(pidfd)

    def end(self) -> None:
        with self._lock:
            if self._timer is not None or self._pidfd is None:
                return
            self._timer = threading.Timer(self.grace, self._kill)
            self._timer.daemon = True
            self._timer.start()

    def _kill(self) -> None:
        with self._lock:
            if self._pidfd is None:
                return
            try:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
                self.ended = True
            except OSError:  # already gone
                pass

    def close(self) -> None:
        with self._lock:
            timer, self._timer = self._timer, None
            pidfd, self._pidfd = self._pidfd, None
        if timer is not None:
            timer.cancel()
        if pidfd is not None:
            os.close(pidfd)


def _alive(pidfd: int) -> bool:
    try:
        signal.pidfd_send_signal(pidfd, 0)
    except OSError:  # ProcessLookupError: it has ended
        return False
    return True


_OVER_CAPACITY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                  b"x-should-retry: false\r\nContent-Length: 42\r\n\r\ntoo many connections to the ifbench proxy\n")


class Bounded:
    """At most :data:`MAX_CONNECTIONS` connections of a proxy in service; one more is answered 503 and
    closed by the listening thread (a short write with a timeout), recorded as ``over_capacity``."""

    proxy: Any

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.proxy._slots.acquire(blocking=False):
            try:
                request.settimeout(0.2)
                request.sendall(_OVER_CAPACITY)
            except OSError:
                pass
            self.shutdown_request(request)  # type: ignore[attr-defined]
            self.proxy.refuse("over_capacity", f"more than {MAX_CONNECTIONS} connections at once", status=503)
            return
        try:
            super().process_request(request, client_address)  # type: ignore[misc]
        except BaseException:
            self.proxy._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)  # type: ignore[misc]
        finally:
            self.proxy._slots.release()


class UnixServer(Bounded, socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128


class TCPServer(Bounded, ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128

    def server_bind(self) -> None:  # no reverse DNS (HTTPServer.server_bind calls getfqdn)
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]


class Rejected(Exception):
    """A request body the proxy does not take: its status, refusal kind, message and size."""

    def __init__(self, status: int, kind: str, message: str, size: int) -> None:
        super().__init__(message)
        self.status, self.kind, self.message, self.size = status, kind, message, size


def read_body(rfile: Any, headers: Any, max_bytes: int = MAX_BODY_BYTES) -> dict[str, Any]:
    """A request's JSON object from ``rfile`` (``Content-Length`` or chunked, per ``headers``);
    :class:`Rejected` when it is too large, too deep or not one (``ValueError``: malformed framing)."""
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        chunks, total = [], 0
        while (size := int(rfile.readline(64).split(b";")[0].strip() or b"0", 16)) > 0:
            total += size
            if total > max_bytes:
                raise Rejected(413, "too_large", f"the request body is over {max_bytes} bytes", total)
            chunks.append(rfile.read(size))
            rfile.readline(64)
        while rfile.readline(8192) not in (b"\r\n", b"\n", b""):
            pass
        raw = b"".join(chunks)
    else:
        length = int(headers.get("Content-Length") or 0)
        if length > max_bytes:
            raise Rejected(413, "too_large", f"the request body ({length} bytes) is over {max_bytes} bytes",
                           length)
        raw = rfile.read(max(length, 0))
    try:
        value = json.loads(raw)
    except RecursionError:
        raise Rejected(400, "too_deep", f"the request body nests deeper than {MAX_DEPTH} levels", len(raw)) from None
    except ValueError:
        raise Rejected(400, "not_json", "the request body is not a JSON object", len(raw)) from None
    if not isinstance(value, dict):
        raise Rejected(400, "not_json", "the request body is not a JSON object", len(raw))
    if too_deep(value, MAX_DEPTH):
        raise Rejected(400, "too_deep", f"the request body nests deeper than {MAX_DEPTH} levels", len(raw))
    return value
