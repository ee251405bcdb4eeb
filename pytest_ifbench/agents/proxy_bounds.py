"""The recording proxy's bounds and its test of who is calling (:mod:`.proxy` uses them).

Sizes: :data:`MAX_BODY_BYTES`, :data:`MAX_DEPTH`, :data:`MAX_CONNECTIONS` (the :class:`Bounded` servers
answer one more connection 503 from the listening thread), :data:`MAX_RECORDED_REFUSALS`. Origin:
:func:`not_the_relay` tells the sandbox's relay (:mod:`pytest_ifbench.sandbox._forward`) from anything else
connecting to the proxy's Unix socket. Redaction of what goes back into the sandbox: :func:`redact_bytes`.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from .._redact import redact

__all__ = ["MAX_BODY_BYTES", "MAX_CONNECTIONS", "MAX_DEPTH", "MAX_RECORDED_REFUSALS", "NOT_CLI", "Bounded", "Rejected",
           "not_the_relay", "redact_bytes", "too_deep"]

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



def redact_bytes(data: bytes) -> bytes:
    """``data`` with every secret replaced (:func:`redact`); bytes that are not UTF-8 are kept as they are."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    cleaned = redact(text)
    return data if cleaned == text else cleaned.encode("utf-8")


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests arrays and objects deeper than ``limit`` (iteratively: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


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
    """None when the peer of a Unix ``connection`` is a sandbox's relay (pid 2 of a PID namespace one
    below ours), else who it is."""
    try:
        pid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                       struct.calcsize("3i")))[0]
    except OSError as exc:
        return f"a connection whose peer cannot be told ({exc})"
    ours, theirs = _nspids("self"), _nspids(pid)
    if ours and len(theirs) == len(ours) + 1 and theirs[-1] == "2":
        return None
    inside = f"pid {theirs[-1]} in the sandbox" if len(theirs) > len(ours) else f"pid {pid}"
    return f"a direct connection to the proxy's socket from {inside}, not through the relay"


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


class Rejected(Exception):
    """A request body the proxy does not take: its status, refusal kind, message and size."""

    def __init__(self, status: int, kind: str, message: str, size: int) -> None:
        super().__init__(message)
        self.status, self.kind, self.message, self.size = status, kind, message, size
