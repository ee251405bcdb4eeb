"""The HTTP layer of the stub: a threading HTTP/1.1 server and its request handler.

Nothing here knows a wire format: the :class:`Backend` (the
:class:`~pytest_ifbench.testing.server.StubServer`) routes a path to one of its
formats and records the request, its script decides what to answer
(:class:`~pytest_ifbench.testing.script.Script`) and the format renders it
(:class:`~pytest_ifbench.testing.wire.WireFormat`).  This module imports
:mod:`http.server`, so the server imports it only when it starts.
"""

from __future__ import annotations

import json
import socket
import socketserver
import sys
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from .script import Script
from .wire import CHAT, ENDPOINT_METHODS, MODELS, TOKENS, Payload, WireFormat

__all__ = ["Backend", "StubHTTPServer", "StubHTTPServer6", "StubHandler", "server_class"]

#: The client's body could not be parsed as a JSON object.
_BAD_JSON = "We could not parse the JSON body of your request."


class Backend(Protocol):
    """What the handler needs from the server that owns it (``StubServer``'s private hooks).

    Every request is bracketed by ``_enter()`` and ``_leave(record, clock)``,
    recorded exactly once with ``_record`` (which returns an opaque record),
    and answered from ``script`` through the format ``_route`` picks.
    """

    script: Script

    @property
    def latency(self) -> float: ...

    def _route(self, path: str, headers: Mapping[str, str]) -> tuple[WireFormat, str | None]: ...

    def _track(self, conn: Any, *, add: bool) -> None: ...

    def _enter(self) -> None: ...

    def _leave(self, rec: Any, started: float) -> None: ...

    def _record(self, path: str, method: str, headers: dict[str, str], raw: bytes, body: dict | None,
                fault: str | None, *, chat: bool) -> Any: ...

    def _sleep(self, seconds: float) -> bool: ...

    def _next_seq(self) -> int: ...


class StubHTTPServer(ThreadingHTTPServer):
    """One daemon thread per connection; ``stub`` is the owning server."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 256
    allow_reuse_address = True
    stub: Backend

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn(), which can block on
        # reverse DNS; the stub only needs the numeric address.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = port

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up (timeouts, disconnect faults) are expected.
        if isinstance(sys.exc_info()[1], OSError):  # ConnectionError, TimeoutError, ...
            return
        super().handle_error(request, client_address)


class StubHTTPServer6(StubHTTPServer):
    address_family = socket.AF_INET6


def server_class(host: str) -> type[StubHTTPServer]:
    """The server class for ``host`` (IPv6 when it contains a colon)."""
    return StubHTTPServer6 if ":" in host else StubHTTPServer


class StubHandler(BaseHTTPRequestHandler):
    """Reads one request, asks the stub what to answer, writes it in one go."""

    protocol_version = "HTTP/1.1"
    server_version = "pytest-ifbench-stub/1"
    sys_version = ""
    timeout = 300  # idle keep-alive connections are dropped after this
    # Headers and body go out in one write with TCP_NODELAY; otherwise
    # Nagle + delayed ACK add ~40 ms to every keep-alive request.
    disable_nagle_algorithm = True
    server: StubHTTPServer

    _in_flight = False
    _rec: Any = None  # this request's record, once made
    _rec_clock = 0.0  # time.monotonic() when it was made

    # -- plumbing ---------------------------------------------------------------
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.server.stub._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.stub._track(self.connection, add=False)

    def _send(self, status: int, payload: Payload, extra: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", payload.content_type)
            self.send_header("Content-Length", str(len(payload.body)))
            for key, value in {**payload.headers, **(extra or {})}.items():
                self.send_header(key, value)
            self._done()
            buffered = getattr(self, "_headers_buffer", None)
            if isinstance(buffered, list):
                # end_headers() without its separate flush: one write for all.
                buffered.append(b"\r\n")
                head = b"".join(buffered)
                self._headers_buffer = []
                self.wfile.write(head + payload.body)
            else:  # pragma: no cover - other http.server internals
                self.end_headers()
                self.wfile.write(payload.body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _drop(self) -> None:
        self._done()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _done(self) -> None:
        # Called just before the response leaves (or the socket is dropped),
        # so a client that has its answer never sees itself still counted.
        if self._in_flight:
            self._in_flight = False
            self.server.stub._leave(self._rec, self._rec_clock)

    def _read_body(self) -> bytes | None:
        """Request body, or None if it could not be read (answered 400)."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                line = self.rfile.readline(65537)
                try:
                    size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                except ValueError:
                    return None
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline(65537)
        length = self.headers.get("Content-Length")
        if length is None:
            return b""
        try:
            n = int(length)
        except ValueError:
            return None
        if n < 0:
            return None
        return self.rfile.read(n) if n else b""

    def _path(self) -> str:
        path = self.path.split("?", 1)[0]
        if path.startswith(("http://", "https://")):  # absolute-form request target
            path = "/" + path.split("/", 3)[-1] if path.count("/") >= 3 else "/"
        if len(path) > 1:
            path = path.rstrip("/")
        return path

    # -- verbs ------------------------------------------------------------------
    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def _dispatch(self, method: str) -> None:
        stub = self.server.stub
        self._rec = None
        stub._enter()
        self._in_flight = True
        try:
            self._handle(method, stub)
        finally:
            self._done()

    def _record(self, stub: Backend, path: str, method: str, raw: bytes, body: dict | None,
                fault: str | None = None, *, chat: bool) -> None:
        self._rec = stub._record(path, method, self._headers, raw, body, fault, chat=chat)
        self._rec_clock = time.monotonic()

    # -- routing ----------------------------------------------------------------
    def _handle(self, method: str, stub: Backend) -> None:
        path = self._path()
        self._headers = {k.lower(): v for k, v in self.headers.items()}
        fmt, kind = stub._route(path, self._headers)
        raw = self._read_body()
        if raw is None:
            self._record(stub, path, method, b"", None, chat=kind == CHAT)
            self.close_connection = True
            self._send(400, fmt.error(400, "could not read the request body"))
            return
        if kind == CHAT and method == ENDPOINT_METHODS[CHAT]:
            self._chat(stub, fmt, path, raw)
            return
        body = _try_json_object(raw)
        self._record(stub, path, method, raw, body, chat=False)
        if kind == MODELS and method == ENDPOINT_METHODS[MODELS]:
            self._send(200, fmt.models_response())
            return
        if kind == TOKENS and method == ENDPOINT_METHODS[TOKENS]:
            if body is None:
                self._send(400, fmt.error(400, _BAD_JSON))
            else:
                self._send(200, fmt.tokens_response(body))
            return
        self._send(404, fmt.error(404, f"Unknown request URL: {method} {self.path}"))

    def _chat(self, stub: Backend, fmt: WireFormat, path: str, raw: bytes) -> None:
        body = _try_json_object(raw)
        if body is None:
            self._record(stub, path, "POST", raw, None, chat=True)
            self._send(400, fmt.error(400, _BAD_JSON))
            return
        request = fmt.chat_request(body)
        fault = stub.script.take_fault(request)
        self._record(stub, path, "POST", raw, body, fault.kind if fault else None, chat=True)

        if fault is not None:
            if fault.kind == "status":
                extra = {}
                if fault.retry_after is not None:
                    ra = fault.retry_after
                    extra["Retry-After"] = str(int(ra)) if float(ra).is_integer() else str(ra)
                self._send(fault.status, fmt.error(fault.status, fault.message), extra)
                return
            if fault.kind == "malformed":
                self._send(200, fmt.malformed(request))
                return
            if fault.kind == "disconnect":
                self._drop()
                return
            # timeout: hang, then answer normally (unless the server stops).
            if stub._sleep(fault.hang):
                self._drop()
                return

        try:
            reply = stub.script.resolve(request)
            payload = fmt.chat_response(request, reply, stub._next_seq())
        except Exception as exc:  # noqa: BLE001 - a user callable (or scripted reply) blew up
            self._send(500, fmt.error(500, f"stub reply callable failed: {type(exc).__name__}: {exc}"))
            return

        latency = reply.latency if reply.latency is not None else stub.latency
        if latency and stub._sleep(latency):
            self._drop()
            return
        self._send(200, payload)


def _try_json_object(raw: bytes) -> dict | None:
    if not raw:
        return None
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None
