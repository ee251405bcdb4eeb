"""The public server: lifecycle, scripting front-end, counters and recorded requests.

:mod:`http.server` is imported only by :meth:`StubServer.start`, so importing
this module is cheap; ``litellm`` is never imported.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from .anthropic_wire import AnthropicWire
from .openai_wire import OpenAIWire
from .script import Fault, Reply, ReplySpec, Script, load_script, reply_from_dict
from .wire import WireFormat, last_user_text

__all__ = ["FAKE_API_KEY", "RecordedRequest", "StubServer", "stub_args"]

#: A fake OpenAI key for clients of the stub (the ``stub_env`` fixture sets it):
#: tests can assert it never reaches a file on disk.
FAKE_API_KEY = "sk-ifbench-test-0123456789abcdef"


def stub_args(server: StubServer, *extra: str) -> list[str]:
    """Command-line arguments that run pytest-ifbench suites against ``server`` quickly:
    model ``openai/stub`` at ``server.url``, no cache provider, short retry waits
    and timeouts, no summary file; then ``extra``."""
    return ["--model=openai/stub", f"--api-base={server.url}", "-p", "no:cacheprovider",
            "--ifbench-max-wait=5", "--ifbench-timeout=5", "--ifbench-summary=", *extra]


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    """One HTTP request as the stub received it.

    ``headers`` keys are lower-cased (``headers["authorization"]``).  ``body``
    is the parsed JSON object, or ``None`` when there was no body or it was not
    a JSON object.  ``raw`` is the exact request body.  ``received_at`` is a
    :func:`time.time` timestamp.  ``fault`` is the kind of the injected
    :class:`Fault` that answered this request, or ``None``.

    ``answered_at`` is when the server finished with the request (the answer
    was about to be written, or the connection was dropped), on the same clock
    as ``received_at`` and measured from it with :func:`time.monotonic`, so
    ``answered_at - received_at`` is the time the server held the request
    (latency and fault hangs included).  It is ``None`` while the request is in
    flight; a :attr:`StubServer.requests` snapshot taken then keeps ``None``.
    """

    path: str
    headers: dict[str, str]
    body: dict | None
    raw: bytes
    received_at: float
    fault: str | None = None
    method: str = "POST"
    answered_at: float | None = None

    @property
    def last_user_text(self) -> str:
        """Text of the last ``role == "user"`` message ("" if none)."""
        return last_user_text(self.body)


@dataclass(slots=True)
class _Counters:
    calls: int = 0
    in_flight: int = 0
    peak: int = 0
    next_id: int = 0
    requests: list[RecordedRequest] = field(default_factory=list)


class StubServer:
    """OpenAI- and Anthropic-compatible stub server running in a background daemon thread.

    Both dialects share the script: ``/v1/chat/completions`` answers in the
    OpenAI format (:mod:`.openai_wire`), ``/v1/messages`` in the Anthropic
    Messages format (:mod:`.anthropic_wire`; litellm's ``anthropic/<model>``
    and the ``anthropic`` SDK take ``server.url`` without its ``/v1``).

    Usage::

        with StubServer(latency=0.05) as server:
            server.add_rule(r"capital of France", Reply(content="Paris"))
            server.inject_faults(Fault(kind="status", status=429, retry_after=1))
            ...  # point the client at server.url

    Reply resolution for a chat request:

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
    if one raises, the request is answered 500.  A callable may block (on an
    event or a barrier) to hold requests in flight: each request has its own
    handler thread.

    The server is thread-safe; every method may be called while it is serving.
    """

    #: The API dialects served; a path is routed to the first one that claims
    #: it, and the first one also answers unknown paths.
    wire_formats: ClassVar[tuple[WireFormat, ...]] = (OpenAIWire(), AnthropicWire())

    def __init__(self, *, latency: float = 0.0, host: str = "127.0.0.1", port: int = 0,
                 default: ReplySpec | None = None) -> None:
        if latency < 0:
            raise ValueError(f"latency must be >= 0, got {latency!r}")
        self._latency = float(latency)
        self.host = host
        self._port = int(port)
        self.script = Script(default)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # notified when in_flight changes
        self._counters = _Counters()
        self._connections: set[Any] = set()
        self._httpd: Any = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    # -- lifecycle -------------------------------------------------------------
    def start(self) -> Self:
        """Bind and start serving in a daemon thread (non-blocking); returns self.

        Calling ``start`` on a running server is a no-op.  A stopped server can
        be started again (with ``port=0`` it may get a different port).
        """
        from .handler import StubHandler, server_class

        with self._lock:
            if self._httpd is not None:
                return self
            self._stopping = threading.Event()
            httpd = server_class(self.host)((self.host, self._port), StubHandler)
            httpd.stub = self
            self._httpd = httpd
            self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                            name=f"ifbench-stub-{httpd.server_address[1]}", daemon=True)
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
    def default(self) -> ReplySpec | None:
        """Reply used when no rule matches (``None``: the ``"stub reply to: ..."`` echo); settable."""
        return self.script.default

    @default.setter
    def default(self, value: ReplySpec | None) -> None:
        self.script.default = value

    @property
    def requests(self) -> list[RecordedRequest]:
        """Snapshot copy of every request received so far (all paths), in order."""
        with self._lock:
            return list(self._counters.requests)

    @property
    def calls(self) -> int:
        """Number of chat requests received (faulted ones included)."""
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

    def wait_in_flight(self, count: int, *, timeout: float = 10.0) -> bool:
        """Block until at least ``count`` requests are in flight at once; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: self._counters.in_flight >= count, timeout)

    def wait_idle(self, *, timeout: float = 10.0) -> bool:
        """Block until no request is in flight (every record has ``answered_at``); False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: self._counters.in_flight == 0, timeout)

    # -- scripting -------------------------------------------------------------
    def add_rule(self, match: str, reply: Reply | Callable[[dict], Reply], *, times: int | None = None,
                 model: str | None = None) -> None:
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
        self.script.add_rule(match, reply, times=times, model=model)

    def inject_faults(self, *faults: Fault, match: str | None = None) -> None:
        """Queue ``faults``; each is consumed by one later chat request.

        Each subsequent chat request (whose last user message matches the regex
        ``match``, if given) consumes the next queued fault that applies to it
        instead of being answered normally.  Faults are consumed before rules
        are consulted.  Requests with an unparseable body are answered 400 and
        consume nothing.
        """
        self.script.inject_faults(*faults, match=match)

    @property
    def pending_faults(self) -> int:
        """Number of injected faults not consumed yet."""
        return self.script.pending_faults

    def reset(self) -> None:
        """Clear rules, queued faults, recorded requests and counters.

        ``default`` and ``latency`` are kept; requests still in flight keep
        being counted in ``in_flight``/``peak_concurrency``.
        """
        self.script.clear()
        with self._lock:
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
            raise TypeError(f"script must be a JSON object, got {type(script).__name__}")
        unknown = set(script) - {"latency", "default", "rules", "faults"}
        if unknown:
            raise ValueError(f"unknown script keys: {sorted(unknown)}")
        kwargs.setdefault("latency", float(script.get("latency") or 0.0))
        if script.get("default") is not None:
            kwargs.setdefault("default", reply_from_dict(script["default"], "default"))
        server = cls(**kwargs)
        load_script(server, script)
        return server

    # -- internals used by the handler -----------------------------------------
    def _route(self, path: str, headers: Mapping[str, str]) -> tuple[WireFormat, str | None]:
        """The format serving ``path`` and the endpoint kind (``None``: unknown path)."""
        for fmt in self.wire_formats:
            kind = fmt.endpoint(path, headers)
            if kind is not None:
                return fmt, kind
        return self.wire_formats[0], None

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
            self._changed.notify_all()

    def _leave(self, rec: RecordedRequest | None = None, started: float = 0.0) -> None:
        """One request is done; ``rec`` (recorded at ``time.monotonic() == started``) gets its ``answered_at``."""
        now = time.monotonic()
        with self._lock:
            c = self._counters
            c.in_flight -= 1
            self._changed.notify_all()
            if rec is None:
                return
            answered = dataclasses.replace(rec, answered_at=rec.received_at + (now - started))
            requests = c.requests
            for i in range(len(requests) - 1, -1, -1):  # it is near the end: recent requests
                if requests[i] is rec:
                    requests[i] = answered
                    break

    def _sleep(self, seconds: float) -> bool:
        """Sleep; True if interrupted because the server is stopping."""
        if seconds <= 0:
            return self._stopping.is_set()
        return self._stopping.wait(seconds)

    def _record(self, path: str, method: str, headers: dict[str, str], raw: bytes, body: dict | None,
                fault: str | None, *, chat: bool) -> RecordedRequest:
        rec = RecordedRequest(path=path, headers=headers, body=body, raw=raw, received_at=time.time(),
                              fault=fault, method=method)
        with self._lock:
            self._counters.requests.append(rec)
            if chat:
                self._counters.calls += 1
        return rec

    def _next_seq(self) -> int:
        with self._lock:
            self._counters.next_id += 1
            return self._counters.next_id
