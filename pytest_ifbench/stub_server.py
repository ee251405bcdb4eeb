"""A local, OpenAI-compatible HTTP stub server for offline tests and benchmarks.

The server speaks just enough of the OpenAI REST API for ``litellm`` (and the
``openai`` SDK underneath it) to talk to it with
``--model=openai/<anything> --api-base=<server.url>``:

* ``POST /v1/chat/completions`` and ``POST /chat/completions`` answer with a
  ``chat.completion`` object, or with a Server-Sent-Events stream of
  ``chat.completion.chunk`` objects when the request body has ``"stream": true``.
* ``GET /v1/models`` and ``GET /models`` answer with a small model list.
* Every other path answers 404 with an OpenAI-style error body.

Replies are scripted with :meth:`StubServer.add_rule` (regex on the last user
message), failures with :meth:`StubServer.inject_faults`, and every request is
recorded (headers included) so tests can assert on what the client sent.

Only the standard library is used, and :mod:`http.server` is imported lazily
(on :meth:`StubServer.start`), so importing this module is cheap.  It never
imports ``litellm``.

Command line (for benchmarks and subprocess tests)::

    python -m pytest_ifbench.stub_server [--host 127.0.0.1] [--port 0]
        [--latency 0.2] [--script script.json] [--url-file PATH]

prints the base URL (``http://127.0.0.1:<port>/v1``) as the first line on
stdout, writes it to ``--url-file`` if given, and serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

__all__ = [
    "Fault",
    "RecordedRequest",
    "Reply",
    "StubServer",
    "main",
]

FAULT_KINDS = frozenset({"status", "timeout", "malformed", "disconnect"})

#: Model ids listed by ``GET /v1/models``.
MODEL_IDS = ("stub", "stub-large", "gpt-4o-mini")

_CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
_MODELS_PATHS = frozenset({"/v1/models", "/models"})

#: Body sent for a ``Fault(kind="malformed")``: valid HTTP, invalid JSON.
MALFORMED_BODY = b'{"choices": ['


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """One scripted assistant answer.

    Contract:

    * ``content`` is the assistant message text (``None`` is sent as JSON
      ``null``, which is what OpenAI does for pure tool-call answers).
    * ``tool_calls`` uses the OpenAI format
      ``[{"id", "type": "function", "function": {"name", "arguments": "<json str>"}}]``.
      Missing ``id``/``type`` are filled in (``call_<n>`` / ``"function"``) and
      a non-string ``arguments`` value is JSON-encoded.
    * ``latency`` (seconds) overrides the server-wide latency for this reply.
    * ``finish_reason`` defaults to ``"tool_calls"`` when ``tool_calls`` is
      non-empty and ``"stop"`` otherwise.
    """

    content: str | None = None
    tool_calls: list[dict] | None = None
    latency: float | None = None
    finish_reason: str | None = None

    def __post_init__(self) -> None:
        if self.content is not None and not isinstance(self.content, str):
            raise TypeError(
                f"Reply.content must be a str or None, got {type(self.content).__name__}"
            )
        if self.tool_calls is not None and not isinstance(self.tool_calls, list):
            raise TypeError(
                "Reply.tool_calls must be a list of OpenAI tool-call dicts or None"
            )
        if self.latency is not None and self.latency < 0:
            raise ValueError(f"Reply.latency must be >= 0, got {self.latency!r}")

    @property
    def effective_finish_reason(self) -> str:
        """``finish_reason`` with its default applied."""
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """One injected failure, consumed by exactly one chat-completions request.

    Kinds:

    * ``"status"``: answer immediately with HTTP ``status`` and an OpenAI-style
      error body ``{"error": {"message", "type", "param", "code"}}``; a
      ``Retry-After`` header (seconds) is sent when ``retry_after`` is set.
    * ``"timeout"``: sleep ``hang`` seconds, then answer normally, latency
      included (the client is expected to have timed out by then).  :meth:`StubServer.stop` cuts the
      sleep short and drops the connection.
    * ``"malformed"``: answer 200 with a body that is not valid JSON.
    * ``"disconnect"``: close the socket without sending any response.
    """

    kind: str
    status: int = 500
    retry_after: float | None = None
    message: str = "injected fault"
    hang: float = 30.0

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(
                f"Fault.kind must be one of {sorted(FAULT_KINDS)}, got {self.kind!r}"
            )
        if not 100 <= int(self.status) <= 599:
            raise ValueError(
                f"Fault.status must be an HTTP status code, got {self.status!r}"
            )
        if self.retry_after is not None and self.retry_after < 0:
            raise ValueError(
                f"Fault.retry_after must be >= 0, got {self.retry_after!r}"
            )
        if self.hang < 0:
            raise ValueError(f"Fault.hang must be >= 0, got {self.hang!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    """One HTTP request as the stub received it.

    ``headers`` keys are lower-cased (``headers["authorization"]``).  ``body``
    is the parsed JSON object, or ``None`` when there was no body or it was not
    a JSON object.  ``raw`` is the exact request body.  ``received_at`` is a
    :func:`time.time` timestamp.  ``fault`` is the kind of the injected
    :class:`Fault` that answered this request, or ``None``.
    """

    path: str
    headers: dict[str, str]
    body: dict | None
    raw: bytes
    received_at: float
    fault: str | None = None
    method: str = "POST"

    @property
    def last_user_text(self) -> str:
        """Text of the last ``role == "user"`` message ("" if none)."""
        return last_user_text(self.body)


ReplySpec = Reply | Callable[[dict], Reply]


@dataclass(slots=True)
class _Rule:
    pattern: re.Pattern[str]
    reply: Any
    remaining: int | None
    model: str | None


@dataclass(slots=True)
class _QueuedFault:
    fault: Fault
    pattern: re.Pattern[str] | None


@dataclass(slots=True)
class _Counters:
    calls: int = 0
    in_flight: int = 0
    peak: int = 0
    next_id: int = 0
    requests: list[RecordedRequest] = field(default_factory=list)


# --------------------------------------------------------------------------- helpers


def _content_text(content: Any) -> str:
    """Text of an OpenAI message ``content`` (a string or a list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str) and part.get("type", "text") in (
                    "text",
                    "input_text",
                ):
                    parts.append(text)
        return "\n".join(parts)
    return str(content)


def last_user_text(body: dict | None) -> str:
    """Text of the last ``role == "user"`` message of a chat request body."""
    if not isinstance(body, dict):
        return ""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


def _count_tokens(text: str) -> int:
    """Whitespace-separated words, at least 1."""
    return max(1, len(text.split()))


def _prompt_text(body: dict) -> str:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    return "\n".join(
        _content_text(m.get("content")) for m in messages if isinstance(m, dict)
    )


def _normalise_tool_calls(tool_calls: list[dict] | None) -> list[dict] | None:
    if not tool_calls:
        return None
    out: list[dict] = []
    for i, call in enumerate(tool_calls):
        if not isinstance(call, dict):
            raise TypeError(f"tool call #{i} must be a dict, got {type(call).__name__}")
        function = dict(call.get("function") or {})
        arguments = function.get("arguments", "{}")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        function["arguments"] = arguments
        function.setdefault("name", "")
        out.append(
            {
                "id": call.get("id") or f"call_{i}",
                "type": call.get("type") or "function",
                "function": function,
            }
        )
    return out


def _completion_text(reply: Reply, tool_calls: list[dict] | None) -> str:
    pieces = [reply.content or ""]
    for call in tool_calls or ():
        pieces.append(call["function"]["name"])
        pieces.append(call["function"]["arguments"])
    return " ".join(pieces)


# Only 400 uses OpenAI's "invalid_request_error" type: litellm maps any error
# whose text contains that string to BadRequestError, whatever the status, so
# other statuses get distinct types and keep their own litellm exception class.
_ERROR_TYPES = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("not_found_error", "not_found"),
    408: ("timeout_error", "timeout"),
    409: ("conflict_error", "conflict"),
    413: ("request_too_large", "request_too_large"),
    422: ("unprocessable_entity_error", "unprocessable_entity"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    503: ("server_error", "service_unavailable"),
}


def error_body(status: int, message: str) -> bytes:
    """OpenAI-style error body ``{"error": {"message", "type", "param", "code"}}``."""
    err_type, code = _ERROR_TYPES.get(
        status, ("server_error" if status >= 500 else "client_error", str(status))
    )
    return json.dumps(
        {"error": {"message": message, "type": err_type, "param": None, "code": code}}
    ).encode()


def _coerce_reply(value: Any) -> Reply:
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply(content=value)
    raise TypeError(
        f"reply callable must return a Reply (or str), got {type(value).__name__}"
    )


def _reply_from_dict(data: Any, where: str) -> Reply:
    if isinstance(data, str):
        return Reply(content=data)
    if not isinstance(data, dict):
        raise TypeError(
            f"{where}: reply must be an object or a string, got {type(data).__name__}"
        )
    try:
        return Reply(**data)
    except TypeError as exc:
        raise ValueError(f"{where}: bad reply {data!r}: {exc}") from None


def _fault_from_dict(data: Any, where: str) -> tuple[Fault, str | None]:
    if not isinstance(data, dict):
        raise TypeError(f"{where}: fault must be an object, got {type(data).__name__}")
    data = dict(data)
    match = data.pop("match", None)
    try:
        return Fault(**data), match
    except TypeError as exc:
        raise ValueError(f"{where}: bad fault {data!r}: {exc}") from None


# --------------------------------------------------------------------------- HTTP machinery
# Built lazily so that importing this module does not pay for http.server.

_CLASSES: tuple[type, type, type] | None = None
_CLASSES_LOCK = threading.Lock()


def _http_classes() -> tuple[type, type, type]:
    """(IPv4 server class, IPv6 server class, handler class)."""
    global _CLASSES
    with _CLASSES_LOCK:
        if _CLASSES is None:
            _CLASSES = _build_http_classes()
        return _CLASSES


def _build_http_classes() -> tuple[type, type, type]:
    import socket
    import socketserver
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class _Server(ThreadingHTTPServer):
        daemon_threads = True
        block_on_close = False
        request_queue_size = 256
        allow_reuse_address = True
        stub: StubServer

        def server_bind(self) -> None:
            # HTTPServer.server_bind calls socket.getfqdn(), which can block on
            # reverse DNS; the stub only needs the numeric address.
            socketserver.TCPServer.server_bind(self)
            host, port = self.server_address[:2]
            self.server_name = str(host)
            self.server_port = port

        def handle_error(self, request: Any, client_address: Any) -> None:
            # Clients hanging up (timeouts, disconnect faults) are expected.
            import sys

            exc = sys.exc_info()[1]
            if isinstance(exc, OSError):  # ConnectionError, TimeoutError, ...
                return
            super().handle_error(request, client_address)

    class _Server6(_Server):
        address_family = socket.AF_INET6

    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "pytest-ifbench-stub/1"
        sys_version = ""
        timeout = 300  # idle keep-alive connections are dropped after this
        # Headers and body go out in one write with TCP_NODELAY; otherwise
        # Nagle + delayed ACK add ~40 ms to every keep-alive request.
        disable_nagle_algorithm = True
        server: _Server

        # -- plumbing -------------------------------------------------------
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

        def _send(
            self,
            status: int,
            body: bytes,
            content_type: str = "application/json",
            extra: dict[str, str] | None = None,
        ) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for key, value in (extra or {}).items():
                    self.send_header(key, value)
                self._done()
                buffered = getattr(self, "_headers_buffer", None)
                if isinstance(buffered, list):
                    # end_headers() without its separate flush: one write for all.
                    buffered.append(b"\r\n")
                    head = b"".join(buffered)
                    self._headers_buffer = []
                    self.wfile.write(head + body)
                else:  # pragma: no cover - other http.server internals
                    self.end_headers()
                    self.wfile.write(body)
                self.wfile.flush()
            except OSError:
                self.close_connection = True

        def _send_error(
            self, status: int, message: str, extra: dict[str, str] | None = None
        ) -> None:
            self._send(status, error_body(status, message), extra=extra)

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

        # -- verbs ----------------------------------------------------------
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
            stub._enter()
            self._in_flight = True
            try:
                self._handle(method, stub)
            finally:
                self._done()

        def _done(self) -> None:
            # Called just before the response leaves (or the socket is dropped),
            # so a client that has its answer never sees itself still counted.
            if getattr(self, "_in_flight", False):
                self._in_flight = False
                self.server.stub._leave()

        def _handle(self, method: str, stub: StubServer) -> None:
            path = self._path()
            raw = self._read_body()
            if raw is None:
                stub._record(
                    self, path, method, b"", None, None, chat=path in _CHAT_PATHS
                )
                self.close_connection = True
                self._send_error(400, "could not read the request body")
                return
            if path in _CHAT_PATHS and method == "POST":
                self._chat(stub, path, raw)
                return
            stub._record(
                self, path, method, raw, _try_json_object(raw), None, chat=False
            )
            if path in _MODELS_PATHS and method == "GET":
                self._send(200, stub._models_body())
                return
            self._send_error(404, f"Unknown request URL: {method} {self.path}")

        def _chat(self, stub: StubServer, path: str, raw: bytes) -> None:
            try:
                body = json.loads(raw.decode("utf-8")) if raw else None
            except (UnicodeDecodeError, ValueError):
                body = None
            if not isinstance(body, dict):
                stub._record(self, path, "POST", raw, None, None, chat=True)
                self._send_error(
                    400, "We could not parse the JSON body of your request."
                )
                return

            fault = stub._take_fault(body)
            stub._record(
                self, path, "POST", raw, body, fault.kind if fault else None, chat=True
            )
            stream = body.get("stream") is True

            if fault is not None:
                if fault.kind == "status":
                    extra = {}
                    if fault.retry_after is not None:
                        ra = fault.retry_after
                        extra["Retry-After"] = (
                            str(int(ra)) if float(ra).is_integer() else str(ra)
                        )
                    self._send_error(fault.status, fault.message, extra=extra)
                    return
                if fault.kind == "malformed":
                    if stream:
                        self._send(
                            200,
                            b"data: " + MALFORMED_BODY + b"\n\n",
                            "text/event-stream",
                        )
                    else:
                        self._send(200, MALFORMED_BODY)
                    return
                if fault.kind == "disconnect":
                    self._drop()
                    return
                # timeout: hang, then answer normally (unless the server stops).
                if stub._sleep(fault.hang):
                    self._drop()
                    return

            try:
                reply = stub._resolve_reply(body)
                tool_calls = _normalise_tool_calls(reply.tool_calls)
            except Exception as exc:  # noqa: BLE001 - a user callable blew up
                self._send_error(
                    500, f"stub reply callable failed: {type(exc).__name__}: {exc}"
                )
                return

            latency = reply.latency if reply.latency is not None else stub.latency
            if latency and stub._sleep(latency):
                self._drop()
                return

            if stream:
                self._send(
                    200,
                    stub._stream_body(body, reply, tool_calls),
                    "text/event-stream",
                    extra={"Cache-Control": "no-cache"},
                )
            else:
                self._send(200, stub._completion_body(body, reply, tool_calls))

        def _drop(self) -> None:
            self._done()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    return _Server, _Server6, _Handler


def _try_json_object(raw: bytes) -> dict | None:
    if not raw:
        return None
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


# --------------------------------------------------------------------------- public server


class StubServer:
    """OpenAI-compatible stub server running in a background daemon thread.

    Usage::

        with StubServer(latency=0.05) as server:
            server.add_rule(r"capital of France", Reply(content="Paris"))
            server.inject_faults(Fault(kind="status", status=429, retry_after=1))
            ...  # point the client at server.url

    Reply resolution for a ``/chat/completions`` request:

    1. if a queued fault applies (see :meth:`inject_faults`) it is consumed and
       answers the request;
    2. otherwise the first rule (insertion order) whose regex matches the last
       user message, whose ``model`` filter (if any) equals the body's
       ``"model"`` and which has uses left answers it;
    3. otherwise ``default`` answers it: a :class:`Reply`, a callable
       ``body -> Reply``, or (``None``) the deterministic
       ``"stub reply to: <first 200 chars of the last user message>"``.

    Callables receive the parsed request body (a dict) and must return a
    :class:`Reply` (a plain ``str`` is accepted as ``Reply(content=...)``);
    if one raises, the request is answered 500.

    The server is thread-safe; every method may be called while it is serving.
    """

    def __init__(
        self,
        *,
        latency: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        default: Reply | Callable[[dict], Reply] | None = None,
    ) -> None:
        if latency < 0:
            raise ValueError(f"latency must be >= 0, got {latency!r}")
        self._latency = float(latency)
        self.host = host
        self._port = int(port)
        self.default = default
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
        self._faults: list[_QueuedFault] = []
        self._counters = _Counters()
        self._connections: set[Any] = set()
        self._httpd: Any = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    # -- lifecycle -------------------------------------------------------------
    def start(self) -> StubServer:
        """Bind and start serving in a daemon thread (non-blocking); returns self.

        Calling ``start`` on a running server is a no-op.  A stopped server can
        be started again (with ``port=0`` it may get a different port).
        """
        with self._lock:
            if self._httpd is not None:
                return self
            server4, server6, handler_cls = _http_classes()
            server_cls = server6 if ":" in self.host else server4
            self._stopping = threading.Event()
            httpd = server_cls((self.host, self._port), handler_cls)
            httpd.stub = self
            self._httpd = httpd
            self._thread = threading.Thread(
                target=httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"ifbench-stub-{httpd.server_address[1]}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving promptly and close the listening socket.

        Handlers sleeping on latency or a ``timeout`` fault are woken and their
        connections dropped; open keep-alive connections are shut down.  Safe to
        call more than once.
        """
        with self._lock:
            httpd, thread = self._httpd, self._thread
            self._httpd = None
            self._thread = None
            self._stopping.set()
            connections = list(self._connections)
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        import socket

        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = self.url if self._httpd is not None else "stopped"
        return f"<StubServer {state} latency={self._latency}>"

    # -- properties ------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def port(self) -> int:
        """The bound port (the requested port until started)."""
        httpd = self._httpd
        return int(httpd.server_address[1]) if httpd is not None else self._port

    @property
    def url(self) -> str:
        """Base URL to pass as ``api_base``: ``http://<host>:<port>/v1``.

        Raises RuntimeError if the server is not running.
        """
        httpd = self._httpd
        if httpd is None:
            raise RuntimeError("StubServer is not running; call start() first")
        host = self.host
        if host in ("", "0.0.0.0"):
            host = "127.0.0.1"
        elif host == "::":
            host = "::1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{httpd.server_address[1]}/v1"

    @property
    def latency(self) -> float:
        """Server-wide latency (seconds) before each normal answer; settable."""
        return self._latency

    @latency.setter
    def latency(self, value: float) -> None:
        if value < 0:
            raise ValueError(f"latency must be >= 0, got {value!r}")
        self._latency = float(value)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Snapshot copy of every request received so far (all paths), in order."""
        with self._lock:
            return list(self._counters.requests)

    @property
    def calls(self) -> int:
        """Number of ``/chat/completions`` requests received (faulted ones included)."""
        with self._lock:
            return self._counters.calls

    @property
    def in_flight(self) -> int:
        """Number of requests currently being handled."""
        with self._lock:
            return self._counters.in_flight

    @property
    def peak_concurrency(self) -> int:
        """Highest number of requests (any path) in flight at once."""
        with self._lock:
            return self._counters.peak

    # -- scripting -------------------------------------------------------------
    def add_rule(
        self,
        match: str,
        reply: Reply | Callable[[dict], Reply],
        *,
        times: int | None = None,
        model: str | None = None,
    ) -> None:
        """Answer matching requests with ``reply``.

        ``match`` is a regex searched (``re.search`` with ``re.DOTALL``) in the
        text of the last user message (string content, or the ``"text"`` parts
        of list content joined by newlines); ``""`` matches everything.
        ``times`` limits how many requests the rule answers (``None`` = no
        limit).  ``model`` restricts the rule to requests whose body
        ``"model"`` equals it (note that litellm strips the ``openai/``
        provider prefix).  Rules are tried in insertion order; the first one
        that matches and has uses left wins.
        """
        if times is not None and times < 0:
            raise ValueError(f"times must be >= 0 or None, got {times!r}")
        if not isinstance(reply, Reply) and not callable(reply):
            raise TypeError(
                "reply must be a Reply or a callable taking the request body"
            )
        rule = _Rule(re.compile(match, re.DOTALL), reply, times, model)
        with self._lock:
            self._rules.append(rule)

    def inject_faults(self, *faults: Fault, match: str | None = None) -> None:
        """Queue ``faults``; each is consumed by one later chat request.

        Each subsequent ``/chat/completions`` request (whose last user message
        matches the regex ``match``, if given) consumes the next queued fault
        that applies to it instead of being answered normally.  Faults are
        consumed before rules are consulted.  Requests with an unparseable body
        are answered 400 and consume nothing.
        """
        for fault in faults:
            if not isinstance(fault, Fault):
                raise TypeError(
                    f"inject_faults takes Fault objects, got {type(fault).__name__}"
                )
        pattern = re.compile(match, re.DOTALL) if match is not None else None
        with self._lock:
            self._faults.extend(_QueuedFault(f, pattern) for f in faults)

    @property
    def pending_faults(self) -> int:
        """Number of injected faults not consumed yet."""
        with self._lock:
            return len(self._faults)

    def reset(self) -> None:
        """Clear rules, queued faults, recorded requests and counters.

        ``default`` and ``latency`` are kept; requests still in flight keep
        being counted in ``in_flight``/``peak_concurrency``.
        """
        with self._lock:
            self._rules.clear()
            self._faults.clear()
            c = self._counters
            c.requests = []
            c.calls = 0
            c.peak = c.in_flight

    @classmethod
    def from_script(cls, script: dict, **kwargs: Any) -> StubServer:
        """Build a (not yet started) server from a JSON-able script::

            {"latency": 0.0,
             "default": {"content": "..."},                       # optional
             "rules": [{"match": "...", "reply": {"content": "..."},
                        "times": null, "model": null}],
             "faults": [{"kind": "status", "status": 429, "retry_after": 1,
                         "match": null}]}

        A reply may also be a plain string.  ``kwargs`` (``host``, ``port``,
        ``latency``) override the script.  Raises ValueError on unknown keys or
        bad values, TypeError on entries of the wrong JSON type.
        """
        if not isinstance(script, dict):
            raise TypeError(
                f"script must be a JSON object, got {type(script).__name__}"
            )
        unknown = set(script) - {"latency", "default", "rules", "faults"}
        if unknown:
            raise ValueError(f"unknown script keys: {sorted(unknown)}")
        kwargs.setdefault("latency", float(script.get("latency") or 0.0))
        if script.get("default") is not None:
            kwargs.setdefault("default", _reply_from_dict(script["default"], "default"))
        server = cls(**kwargs)
        for i, rule in enumerate(script.get("rules") or []):
            where = f"rules[{i}]"
            if not isinstance(rule, dict):
                raise TypeError(f"{where}: must be an object")
            extra = set(rule) - {"match", "reply", "times", "model"}
            if extra:
                raise ValueError(f"{where}: unknown keys {sorted(extra)}")
            if "reply" not in rule:
                raise ValueError(f"{where}: missing 'reply'")
            server.add_rule(
                str(rule.get("match", "")),
                _reply_from_dict(rule["reply"], where),
                times=rule.get("times"),
                model=rule.get("model"),
            )
        for i, data in enumerate(script.get("faults") or []):
            fault, match = _fault_from_dict(data, f"faults[{i}]")
            server.inject_faults(fault, match=match)
        return server

    # -- internals used by the handler -----------------------------------------
    def _track(self, conn: Any, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _enter(self) -> None:
        with self._lock:
            c = self._counters
            c.in_flight += 1
            c.peak = max(c.peak, c.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._counters.in_flight -= 1

    def _sleep(self, seconds: float) -> bool:
        """Sleep; True if interrupted because the server is stopping."""
        if seconds <= 0:
            return self._stopping.is_set()
        return self._stopping.wait(seconds)

    def _record(
        self,
        handler: Any,
        path: str,
        method: str,
        raw: bytes,
        body: dict | None,
        fault: str | None,
        *,
        chat: bool,
    ) -> None:
        rec = RecordedRequest(
            path=path,
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=body,
            raw=raw,
            received_at=time.time(),
            fault=fault,
            method=method,
        )
        with self._lock:
            self._counters.requests.append(rec)
            if chat:
                self._counters.calls += 1

    def _take_fault(self, body: dict) -> Fault | None:
        with self._lock:
            if not self._faults:
                return None
            text = None
            for i, queued in enumerate(self._faults):
                if queued.pattern is not None:
                    if text is None:
                        text = last_user_text(body)
                    if not queued.pattern.search(text):
                        continue
                del self._faults[i]
                return queued.fault
        return None

    def _resolve_reply(self, body: dict) -> Reply:
        text = last_user_text(body)
        model = body.get("model")
        chosen: Any = None
        with self._lock:
            for rule in self._rules:
                if rule.remaining is not None and rule.remaining <= 0:
                    continue
                if rule.model is not None and rule.model != model:
                    continue
                if not rule.pattern.search(text):
                    continue
                if rule.remaining is not None:
                    rule.remaining -= 1
                chosen = rule.reply
                break
        if chosen is None:
            chosen = self.default
        if chosen is None:
            return Reply(content=f"stub reply to: {text[:200]}")
        if isinstance(chosen, Reply):
            return chosen
        return _coerce_reply(chosen(body))

    def _next_id(self) -> str:
        with self._lock:
            self._counters.next_id += 1
            return f"chatcmpl-stub-{self._counters.next_id}"

    def _usage(self, body: dict, reply: Reply, tool_calls: list[dict] | None) -> dict:
        prompt = _count_tokens(_prompt_text(body))
        completion = _count_tokens(_completion_text(reply, tool_calls))
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def _completion_body(
        self, body: dict, reply: Reply, tool_calls: list[dict] | None
    ) -> bytes:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return json.dumps(
            {
                "id": self._next_id(),
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model") or "stub",
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "logprobs": None,
                        "finish_reason": reply.effective_finish_reason,
                    }
                ],
                "usage": self._usage(body, reply, tool_calls),
                "system_fingerprint": "fp_stub",
            }
        ).encode()

    def _stream_body(
        self, body: dict, reply: Reply, tool_calls: list[dict] | None
    ) -> bytes:
        ident = self._next_id()
        created = int(time.time())
        model = body.get("model") or "stub"

        def chunk(
            delta: dict, finish: str | None = None, usage: dict | None = None
        ) -> bytes:
            obj: dict[str, Any] = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_stub",
                "choices": [
                    {
                        "index": 0,
                        "delta": delta,
                        "logprobs": None,
                        "finish_reason": finish,
                    }
                ],
            }
            if usage is not None:
                obj["usage"] = usage
            return b"data: " + json.dumps(obj).encode() + b"\n\n"

        out = [chunk({"role": "assistant", "content": ""})]
        for piece in re.findall(r"\s*\S+\s*|\s+", reply.content or ""):
            out.append(chunk({"content": piece}))
        for i, call in enumerate(tool_calls or ()):
            out.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": i,
                                "id": call["id"],
                                "type": call["type"],
                                "function": {
                                    "name": call["function"]["name"],
                                    "arguments": "",
                                },
                            }
                        ]
                    }
                )
            )
            out.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": i,
                                "function": {
                                    "arguments": call["function"]["arguments"]
                                },
                            }
                        ]
                    }
                )
            )
        out.append(
            chunk(
                {}, reply.effective_finish_reason, self._usage(body, reply, tool_calls)
            )
        )
        out.append(b"data: [DONE]\n\n")
        return b"".join(out)

    def _models_body(self) -> bytes:
        return json.dumps(
            {
                "object": "list",
                "data": [
                    {
                        "id": mid,
                        "object": "model",
                        "created": 0,
                        "owned_by": "pytest-ifbench",
                    }
                    for mid in MODEL_IDS
                ],
            }
        ).encode()


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m pytest_ifbench.stub_server``."""
    import argparse
    import os
    import signal

    parser = argparse.ArgumentParser(
        prog="python -m pytest_ifbench.stub_server",
        description="Serve a local OpenAI-compatible stub until SIGTERM/SIGINT.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--port", type=int, default=0, help="0 picks a free port (default)"
    )
    parser.add_argument(
        "--latency",
        type=float,
        default=None,
        help="seconds per reply (overrides the script)",
    )
    parser.add_argument(
        "--script", default=None, help="JSON file with latency/rules/faults"
    )
    parser.add_argument(
        "--url-file", default=None, help="also write the base URL to this file"
    )
    args = parser.parse_args(argv)

    script: dict = {}
    if args.script:
        try:
            with open(args.script, encoding="utf-8") as fh:
                script = json.load(fh)
        except (OSError, ValueError) as exc:
            parser.error(f"cannot read --script {args.script}: {exc}")
    overrides: dict[str, Any] = {"host": args.host, "port": args.port}
    if args.latency is not None:
        overrides["latency"] = args.latency
    try:
        server = StubServer.from_script(script, **overrides)
    except (ValueError, TypeError, re.error) as exc:
        parser.error(f"bad --script: {exc}")

    done = threading.Event()

    def _on_signal(signum: int, frame: Any) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)

    server.start()
    try:
        url = server.url
        if args.url_file:
            tmp = f"{args.url_file}.tmp{os.getpid()}"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(url + "\n")
            os.replace(tmp, args.url_file)
        print(url, flush=True)
        while not done.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
