"""The recording proxy: a local model endpoint, in the dialect an agent CLI speaks, in front of any litellm model.

A real agent CLI is pointed at this server (inside the sandbox through a
:class:`~pytest_ifbench.agents.workspace.ProxyRoute`, which relays ``127.0.0.1:<port>`` to the
proxy's host Unix socket). The proxy serves the wire formats it is given (:mod:`.wire`; default: the
Anthropic Messages format alone, ``POST /v1/messages``; the CLI runner passes the one its CLI
declares) and routes each ``POST`` by its path. A request is translated by its wire format into one
:meth:`ModelClient.complete` call -- so the run uses our cache, retries and accounting -- and answered
in that format, as an event stream when the request says ``"stream": true``.

Recording. Each model call appends one JSON line to ``log_path`` and flushes it::

    {"session_id": ..., "biz_id": "", "request_time": <ms since the epoch>,
     "request_body": <the CLI's request, unchanged>, "response_body": <the Messages answer>}

the raw-trajectory format :func:`~pytest_ifbench.agents.normalize.normalize` reads, whatever the wire
format: a request in another dialect is recorded as its Messages-format equivalent
(:meth:`~.wire.WireFormat.record`) and the line carries ``"wire": <its name>``. Request headers
(the CLI's API key among them) are never read into the log, and each line passes through
:func:`~pytest_ifbench._redact.redact`.

Other endpoints: a wire format's helpers -- ``POST /v1/messages/count_tokens`` answers an estimate
(:func:`~pytest_ifbench.agents.wire.anthropic_messages.estimate_tokens`, no model call, not recorded);
``HEAD /`` and ``GET /`` answer 200 (clients probe reachability); anything else is a 404 in the
error format of the first wire format served, remembered in :attr:`RecordingProxy.notes`.

Failures are the harness's, not the agent's. When the model call fails (after the client's own
retries) or a request cannot be translated, the CLI gets an error in its wire format carrying the
provider's message (redacted): HTTP 413 (Messages: ``request_too_large``) when the provider said 413,
else HTTP 400 (``invalid_request_error``), with ``x-should-retry: false`` -- the CLIs retry any 5xx
(some whatever the header says), repeating what the client already retried. The call is recorded with
the error as its ``response_body`` (a Messages-format error, whatever the wire format) and listed in
:attr:`RecordingProxy.failures`, which the runner reports as a harness error.

Model calls are coroutines run by ``submit(coro) -> concurrent.futures.Future`` -- the plugin's
background loop; without one the proxy starts its own (:class:`LoopThread`). Each connection has its
own thread, so concurrent CLI requests (sub-agents) are concurrent model calls.

Only the CLI's own traffic (``relay_only=True``, as the CLI runner starts it). The sandbox's relay
(:mod:`pytest_ifbench.sandbox._forward`) traces each connection to the process that made it, lets the
CLI's through after the line ``IFBENCH-RELAY cli`` and refuses the rest itself, telling the proxy in
one line. The proxy accepts Unix connections from that relay alone -- the connecting process
(``SO_PEERCRED``) must be pid 2 of a PID namespace one below ours, the relay for as long as its sandbox
lives -- and nothing on TCP. Everything else (the relay's notices, a tool command connecting to the
socket directly) is a **refused request**: it never reaches the model, is not a call
(:attr:`RecordingProxy.calls`), and is recorded as an event (:attr:`RecordingProxy.refusals`, and a log
line ``{..., "request_body": null, "response_body": null, "refused": {kind, status, reason, method,
path, bytes}}`` that :func:`~pytest_ifbench.agents.normalize.normalize` puts in the trajectory's
``meta["refused_requests"]``).

Bounds (any caller, the CLI included): a body over :data:`MAX_BODY_BYTES` is answered 413 without being
read, a body nested deeper than :data:`MAX_DEPTH` or that is not a JSON object 400; at most
:data:`MAX_CONNECTIONS` connections are served at once (the next ones get a 503 at once); each of
these is a refused request too (kinds ``too_large``, ``too_deep``, ``not_json``, ``over_capacity``),
the first :data:`MAX_RECORDED_REFUSALS` in full, then only counted. A successful answer passes through
:func:`~pytest_ifbench._redact.redact` on its way back into the sandbox, as the error path does, so a
provider echoing a key in its content cannot put it in the workspace or the CLI's session log.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

from .._redact import redact
from .._types import GenerationParams
from ..models.client import Completion, ModelClient
from ..sandbox._forward import PREAMBLE_CLI, PREAMBLE_REFUSED
from .proxy_bounds import (
    MAX_BODY_BYTES,
    MAX_CONNECTIONS,
    MAX_DEPTH,
    MAX_RECORDED_REFUSALS,
    NOT_CLI,
    Bounded,
    Rejected,
    not_the_relay,
    redact_bytes,
    too_deep,
)
from .wire import ANTHROPIC_MESSAGES, RequestError, WireFormat, message_from_completion
from .wire.anthropic_messages import error_body

__all__ = ["MAX_BODY_BYTES", "MAX_CONNECTIONS", "MAX_DEPTH", "MAX_RECORDED_REFUSALS", "NOT_CLI", "LoopThread",
           "RecordingProxy", "Submit"]

#: Runs a model-call coroutine somewhere and returns a future for its result.
Submit = Callable[[Coroutine[Any, Any, Completion]], "concurrent.futures.Future[Completion]"]
#: Longest Unix socket path ``bind`` accepts (``sun_path`` is 108 bytes with its NUL).
_MAX_SOCKET_PATH = 107


class LoopThread:
    """An asyncio event loop in a daemon thread; :meth:`submit` runs a coroutine on it."""

    def __init__(self, name: str = "ifbench-proxy-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, Completion]) -> concurrent.futures.Future[Completion]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def close(self) -> None:
        """Cancel what still runs on the loop (litellm leaves a logging task there), stop and close it."""
        if self.loop.is_closed():
            return
        if self.loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(_cancel_tasks(), self.loop).result(5)
            except (concurrent.futures.TimeoutError, RuntimeError):
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)
        if not self.loop.is_running():
            self.loop.close()


async def _cancel_tasks() -> None:
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class RecordingProxy:
    """A model endpoint on a Unix socket and/or ``127.0.0.1`` that calls ``client`` and records.

    ``wire_formats``: the dialects served, routed by path (default: Anthropic Messages alone; the
    first one's error format answers unknown paths). ``socket_path``: where to listen (a fresh socket
    file; its directory must exist). ``tcp``: also listen on a free local port (:attr:`url`), for
    debugging and tests. ``defaults``: the generation
    parameters a request does not set (temperature, top_p, seed); ``max_tokens_cap`` bounds the
    ``max_tokens`` a CLI asks for. ``relay_only``: serve only the sandbox relay's CLI connections (see
    the module doc). Use as a context manager, or :meth:`start` and :meth:`stop`.
    """

    def __init__(self, client: ModelClient, *, log_path: Path, session_id: str = "session",
                 socket_path: Path | None = None, tcp: bool = False, submit: Submit | None = None,
                 defaults: GenerationParams = GenerationParams(), max_tokens_cap: int | None = None,
                 wire_formats: Sequence[WireFormat] = (ANTHROPIC_MESSAGES,), relay_only: bool = False) -> None:
        if socket_path is None and not tcp:
            raise ValueError("the proxy needs a socket_path, tcp=True or both")
        if not wire_formats:
            raise ValueError("the proxy needs at least one wire format")
        self.wire_formats = tuple(wire_formats)
        self._routes: dict[str, WireFormat] = {}
        for wire in self.wire_formats:
            for path in (*wire.paths, *wire.helpers):
                if path in self._routes:
                    raise ValueError(f"wire formats {self._routes[path].name!r} and {wire.name!r} both serve {path}")
                self._routes[path] = wire
        self.client = client
        self.log_path = Path(log_path)
        self.session_id = session_id
        self.socket_path = None if socket_path is None else Path(socket_path)
        self.defaults = defaults
        self.max_tokens_cap = max_tokens_cap
        self._tcp = tcp
        self._given_submit = submit
        self._loop: LoopThread | None = None
        self._submit: Submit | None = submit
        self._lock = threading.Lock()
        self._log: Any = None
        self._servers: list[socketserver.BaseServer] = []
        self._threads: list[threading.Thread] = []
        self._pending: set[concurrent.futures.Future[Completion]] = set()
        self._notes: dict[str, None] = {}
        self._dir_fd: int | None = None
        self.relay_only = relay_only
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.failures: list[str] = []
        #: Refused requests, as recorded (the first :data:`MAX_RECORDED_REFUSALS`).
        self.refusals: list[dict[str, Any]] = []
        #: Refused requests in all, recorded or not.
        self.refused = 0
        self.calls = 0
        #: The ``response_body`` of the latest recorded call ({} before the first).
        self.last_response: dict[str, Any] = {}

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> Self:
        """Open the log (appending) and start listening; returns self."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed by stop()
        if self._given_submit is None:
            self._loop = LoopThread()
            self._submit = self._loop.submit
        try:
            if self.socket_path is not None:
                address, self._dir_fd = _bind_path(self.socket_path)
                self._serve(_UnixServer(address, _Handler))
            if self._tcp:
                self._serve(_TCPServer(("127.0.0.1", 0), _Handler))
        except BaseException:
            self.stop()
            raise
        return self

    def _serve(self, server: socketserver.BaseServer) -> None:
        server.proxy = self  # type: ignore[attr-defined]
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                  name="ifbench-proxy", daemon=True)
        self._servers.append(server)
        self._threads.append(thread)
        thread.start()

    def stop(self) -> None:
        """Stop listening, cancel model calls still running, close the log; idempotent."""
        servers, self._servers = self._servers, []
        for server in servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(5)
        self._threads = []
        with self._lock:
            pending = list(self._pending)
            omitted = self.refused - len(self.refusals)
        for future in pending:
            future.cancel()
        if omitted > 0:
            self._write({"session_id": self.session_id, "biz_id": "", "request_time": int(time.time() * 1000),
                         "request_body": None, "response_body": None,
                         "refused": {"kind": "omitted", "count": omitted,
                                     "reason": f"{omitted} more refused requests, not recorded one by one"}})
        if self.socket_path is not None and servers:
            self.socket_path.unlink(missing_ok=True)
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None
        if self._loop is not None:
            self._loop.close()
            self._loop, self._submit = None, None
        with self._lock:
            if self._log is not None:
                self._log.close()
                self._log = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` of the TCP listener (RuntimeError without one)."""
        for server in self._servers:
            if isinstance(server, _TCPServer):
                return f"http://127.0.0.1:{server.server_address[1]}"
        raise RuntimeError("the proxy is not listening on TCP (start it with tcp=True)")

    @property
    def pending_calls(self) -> int:
        """Model calls in flight now."""
        with self._lock:
            return len(self._pending)

    @property
    def notes(self) -> tuple[str, ...]:
        """What the translation left out or changed, and unknown endpoints asked for; each once."""
        with self._lock:
            return tuple(self._notes)

    def _note(self, *notes: str) -> None:
        with self._lock:
            self._notes.update(dict.fromkeys(notes))

    # -- calls ---------------------------------------------------------------------------------
    def route(self, path: str) -> WireFormat | None:
        """The wire format serving ``POST path`` (a model call or one of its helpers), or None."""
        return self._routes.get(path)

    def answer(self, wire: WireFormat, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body answering one model request in ``wire`` (the handler's one job)."""
        request_time = int(time.time() * 1000)
        try:
            translated = wire.translate(body, defaults=self.defaults, max_tokens_cap=self.max_tokens_cap)
        except RequestError as exc:  # recorded as an event, not a call: its body is no conversation
            message = redact(f"the proxy cannot translate this request: {exc}")
            with self._lock:
                self.failures.append(message)
            self.refuse("untranslatable", message, status=400, method="POST", path=wire.paths[0])
            return (400, {"Content-Type": "application/json", "x-should-retry": "false"},
                    json.dumps(wire.error(400, message)).encode())
        self._note(*translated.notes)
        call = self.client.complete(translated.messages, translated.params, tools=translated.tools)
        try:
            if self._submit is None:
                raise RuntimeError("the proxy is not running")
            future = self._submit(call)
        except RuntimeError as exc:  # the loop is closed: the proxy is stopping
            call.close()
            return self._fail(wire, 400, f"the proxy cannot call the model: {exc}", body, request_time)
        with self._lock:
            self._pending.add(future)
        try:
            completion = future.result()
        except concurrent.futures.CancelledError:
            return self._fail(wire, 400, "the proxy stopped before the model answered", body, request_time)
        except Exception as exc:  # noqa: BLE001 - any failure of the model call is reported, not raised
            status = 413 if getattr(exc, "status", None) == 413 else 400
            return self._fail(wire, status, f"model call failed: {exc}", body, request_time)
        finally:
            with self._lock:
                self._pending.discard(future)
        message = message_from_completion(completion, translated)
        self._record(wire, body, message, request_time)
        headers, rendered = wire.render(message, translated)
        return 200, headers, redact_bytes(rendered)

    def _fail(self, wire: WireFormat, status: int, message: str, body: dict[str, Any],
              request_time: int) -> tuple[int, dict[str, str], bytes]:
        message = redact(message)
        with self._lock:
            self.failures.append(message)
        self._record(wire, body, error_body(status, message), request_time)
        return (status, {"Content-Type": "application/json", "x-should-retry": "false"},
                json.dumps(wire.error(status, message)).encode())

    def _record(self, wire: WireFormat, request: dict[str, Any], response: dict[str, Any], request_time: int) -> None:
        record = {"session_id": self.session_id, "biz_id": "", "request_time": request_time,
                  "request_body": request, "response_body": response}
        if wire.name != ANTHROPIC_MESSAGES.name:  # the log's own shape: other dialects are converted
            record.update(request_body=wire.record(request), wire=wire.name)
        with self._lock:
            self.calls += 1
            self.last_response = response
        self._write(record)

    def refuse(self, kind: str, reason: str, *, status: int, method: str = "", path: str = "", size: int = 0) -> None:
        """Record one refused request (see the module doc); it is not a call."""
        event = {"kind": kind, "status": status, "reason": redact(reason)[:500], "method": method, "path": path,
                 "bytes": size}
        with self._lock:
            self.refused += 1
            if len(self.refusals) >= MAX_RECORDED_REFUSALS:
                return
            self.refusals.append(event)
        self._write({"session_id": self.session_id, "biz_id": "", "request_time": int(time.time() * 1000),
                     "request_body": None, "response_body": None, "refused": event})

    def _write(self, record: dict[str, Any]) -> None:
        line = redact(json.dumps(record, ensure_ascii=False))
        with self._lock:
            if self._log is not None:
                self._log.write(line + "\n")
                self._log.flush()


def _bind_path(path: Path) -> tuple[str, int | None]:
    """The address to ``bind`` for ``path`` and a directory fd to close after the server: a path too
    long for ``sun_path`` is reached through ``/proc/self/fd/<fd of its directory>/<name>``."""
    path.unlink(missing_ok=True)
    if len(os.fsencode(path)) <= _MAX_SOCKET_PATH:
        return str(path), None
    if len(os.fsencode(path.name)) > _MAX_SOCKET_PATH - 30:
        raise ValueError(f"socket file name too long: {path.name!r}")
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    return f"/proc/self/fd/{fd}/{path.name}", fd


class _UnixServer(Bounded, socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128


class _TCPServer(Bounded, ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128

    def server_bind(self) -> None:  # no reverse DNS (HTTPServer.server_bind calls getfqdn)
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]


class _Handler(BaseHTTPRequestHandler):
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
            self.refusal = (not_the_relay(self.connection) if unix else
                            "a direct TCP connection to the proxy, not through the relay")
            if self.refusal is not None:
                return
        line = self._preamble() if unix else None
        if line == PREAMBLE_CLI or (line is None and not self.proxy.relay_only):
            return
        self.answer_refusal = line is None  # else the relay has answered its client itself
        if line is not None and line.startswith(PREAMBLE_REFUSED):
            self.refusal = line[len(PREAMBLE_REFUSED):].decode("utf-8", "replace").strip() or "a refused connection"
        else:
            self.refusal = "a relay connection without its first line"

    def _preamble(self) -> bytes | None:
        """The relay's first line when the connection starts with one (peeked first, so nothing else is
        consumed), else None; waits at most 5 s for the first bytes."""
        prefix = PREAMBLE_REFUSED[:len("IFBENCH-RELAY ")]
        deadline = time.monotonic() + 5
        try:
            self.connection.settimeout(5)
            while True:
                peeked = self.connection.recv(len(prefix), socket.MSG_PEEK)
                if not peeked or not prefix.startswith(peeked):
                    return None
                if peeked == prefix:
                    return self.rfile.readline(512)
                if time.monotonic() > deadline:
                    return None
                time.sleep(0.005)
        except OSError:
            return None
        finally:
            try:
                self.connection.settimeout(self.timeout)
            except OSError:
                pass

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
    def proxy(self) -> RecordingProxy:
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

    def _body(self) -> dict[str, Any]:
        """The request's JSON object; :class:`Rejected` when it is too large, too deep or not one."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks, total = [], 0
            while (size := int(self.rfile.readline(64).split(b";")[0].strip() or b"0", 16)) > 0:
                total += size
                if total > MAX_BODY_BYTES:
                    raise Rejected(413, "too_large", f"the request body is over {MAX_BODY_BYTES} bytes", total)
                chunks.append(self.rfile.read(size))
                self.rfile.readline(64)
            while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
                pass
            raw = b"".join(chunks)
        else:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                raise Rejected(413, "too_large", f"the request body ({length} bytes) is over {MAX_BODY_BYTES} bytes",
                                length)
            raw = self.rfile.read(max(length, 0))
        try:
            value = json.loads(raw)
        except RecursionError:
            raise Rejected(400, "too_deep", f"the request body nests deeper than {MAX_DEPTH} levels",
                            len(raw)) from None
        except ValueError:
            raise Rejected(400, "not_json", "the request body is not a JSON object", len(raw)) from None
        if not isinstance(value, dict):
            raise Rejected(400, "not_json", "the request body is not a JSON object", len(raw))
        if too_deep(value):
            raise Rejected(400, "too_deep", f"the request body nests deeper than {MAX_DEPTH} levels", len(raw))
        return value

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
            body = self._body()
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

