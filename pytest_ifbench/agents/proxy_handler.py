"""The HTTP side of the recording proxy (:mod:`.proxy`): one handler per connection."""

from __future__ import annotations

import json
import socket
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from ..sandbox._forward import PREAMBLE_CLI, PREAMBLE_REFUSED
from . import proxy_bounds as _bounds
from .proxy_bounds import MAX_BODY_BYTES, NOT_CLI, Rejected, read_body

if TYPE_CHECKING:
    from .wire import WireFormat


class ProxyHandler(BaseHTTPRequestHandler):
    """One connection to a :class:`~.proxy.RecordingProxy`: checks where it comes from, then reads each request
    within bounds and hands a model request to :meth:`RecordingProxy.answer` (the proxy's module doc)."""

    protocol_version = "HTTP/1.1"
    server_version = "pytest-ifbench-proxy/1"
    sys_version = ""
    timeout = 900  # an idle keep-alive connection is dropped after this

    def setup(self) -> None:
        super().setup()
        if self.connection.family != socket.AF_UNIX:  # one write per answer; no Nagle delay
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        #: Why this connection is refused (None: it is the CLI's), and whether to answer it.
        self.refusal: str | None = None
        self.answer_refusal = True
        self._check_origin()

    def _check_origin(self) -> None:
        """Set :attr:`refusal` for a connection that is not the CLI's (see the module doc). A Unix
        connection's first line from the relay is consumed here whether or not ``relay_only``."""
        unix = self.connection.family == socket.AF_UNIX
        if self.proxy.relay_only:
            self.refusal = (_bounds.not_the_relay(self.connection) if unix else
                            "a direct TCP connection to the proxy, not through the relay")
            if self.refusal is not None:
                return
            self.proxy._ender.adopt(self.connection)
        line = _bounds.relay_preamble(self.connection, self.rfile, self.timeout) if unix else None
        if line == PREAMBLE_CLI or (line is None and not self.proxy.relay_only):
            return
        self.answer_refusal = line is None  # else the relay has answered its client itself
        if line is not None and line.startswith(PREAMBLE_REFUSED):
            self.refusal = line[len(PREAMBLE_REFUSED):].decode("utf-8", "replace").strip() or "a refused connection"
        else:
            self.refusal = "a relay connection without its first line"

    def handle(self) -> None:
        if self.refusal is None:
            super().handle()
            return
        if not self.answer_refusal:
            self.proxy.refuse(NOT_CLI, self.refusal, status=403)
            return
        method, path, size = self._drain()
        self.proxy.refuse(NOT_CLI, self.refusal, status=403, method=method, path=path, size=size)
        self.command, self.request_version, self.requestline, self.close_connection = "", "HTTP/1.1", "", True
        self._send(403, {"Content-Type": "application/json"}, json.dumps(self.proxy.wire_formats[0].error(
            403, "refused by the ifbench proxy: only the agent CLI itself may call the model")).encode())

    def _drain(self) -> tuple[str, str, int]:
        """Read (and drop) a refused request, within bounds and 2 s, so its sender gets the answer."""
        try:
            self.connection.settimeout(2)
            self.raw_requestline = self.rfile.readline(65537)
            words = self.raw_requestline.split()
            if len(words) != 3 or not words[2].startswith(b"HTTP/1.") or not self.parse_request():
                return "", "", 0  # no HTTP request line (parse_request would answer it itself)
            size = int(self.headers.get("Content-Length") or 0)
            if 0 < size <= MAX_BODY_BYTES:
                self.rfile.read(size)
            return self.command or "", self._path(), size
        except (OSError, ValueError):
            return "", "", 0

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def proxy(self) -> Any:  # the RecordingProxy serving this connection (not imported: it imports this module)
        return self.server.proxy  # type: ignore[attr-defined]

    def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        try:
            self.send_response(status)
            for key, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(key, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            self.wfile.flush()
        except OSError:  # the CLI hung up (it was killed, or timed out)
            self.close_connection = True

    def _error(self, status: int, message: str, wire: WireFormat | None = None) -> None:
        wire = wire or self.proxy.wire_formats[0]
        self._send(status, {"Content-Type": "application/json"}, json.dumps(wire.error(status, message)).encode())

    def _path(self) -> str:
        path = self.path.split("?", 1)[0]
        return path.rstrip("/") or "/"

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        if self._path() == "/":
            self._send(200, {"Content-Type": "text/plain"}, b"ok\n")
            return
        self.proxy._note(f"unknown endpoint asked for: {self.command} {self._path()}")
        self._error(404, f"not found: {self.command} {self._path()}")

    def do_POST(self) -> None:
        path = self._path()
        wire = self.proxy.route(path)
        try:
            body = read_body(self.rfile, self.headers, MAX_BODY_BYTES)
        except Rejected as exc:
            self.close_connection = True
            self.proxy.refuse(exc.kind, exc.message, status=exc.status, method="POST", path=path, size=exc.size)
            self._error(exc.status, exc.message, wire)
            return
        except ValueError:  # a malformed Content-Length or chunk size
            self.close_connection = True
            self.proxy.refuse("not_json", "the request's framing is malformed", status=400, method="POST", path=path)
            self._error(400, "the request's framing is malformed", wire)
            return
        if wire is None:
            self.proxy._note(f"unknown endpoint asked for: POST {path}")
            self._error(404, f"not found: POST {path}")
        elif path in wire.helpers:
            self._send(200, {"Content-Type": "application/json"}, json.dumps(wire.helpers[path](body)).encode())
        else:
            self._send(*self.proxy.answer(wire, body))

