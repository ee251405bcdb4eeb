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

Other endpoints: a wire format's helpers (``POST /v1/messages/count_tokens``: an estimate, no model call,
not recorded); ``HEAD /`` and ``GET /`` answer 200; anything else is a 404, remembered in
:attr:`RecordingProxy.notes`.

Failures are the harness's, not the agent's. When the model call fails (after the client's own
retries), the CLI gets an error carrying the provider's message (redacted): HTTP 413 when the provider
said 413, else 400, with ``x-should-retry: false`` (the CLIs retry any 5xx, repeating what the client
already retried). The call is recorded with the error as its ``response_body`` and listed in
:attr:`RecordingProxy.failures`, which the runner reports as a harness error. A request that cannot be
translated gets the same 400 and is a refused request, listed in :attr:`RecordingProxy.untranslatable`:
the runner reports it only when the CLI then ends without an answer (a gap of the translation). The
CLI's own process sends whatever its configuration says, and the agent can edit that (an MCP server at
the relay's address): a request it made the CLI send in passing must not turn its run into an error.

Model calls are coroutines run by ``submit(coro) -> concurrent.futures.Future`` (the plugin's background
loop, else the proxy's own :class:`LoopThread`); each connection has its own thread.

Only the CLI's own traffic (``relay_only=True``, as the CLI runner starts it): the sandbox's relay
(:mod:`pytest_ifbench.sandbox._forward`) lets the CLI's connections through after the line
``IFBENCH-RELAY cli`` and refuses the rest itself, telling the proxy in one line; the proxy accepts Unix
connections from that relay alone (:func:`~.proxy_bounds.not_the_relay`) and nothing on TCP. Everything
else -- and a body out of the bounds of :mod:`.proxy_bounds` -- is a **refused request**: it never reaches
the model, is not a call (:attr:`RecordingProxy.calls`), and is recorded as an event
(:attr:`RecordingProxy.refusals`, and a log line ``{..., "request_body": null, "response_body": null,
"refused": {kind, status, reason, method, path, bytes}}`` that
:func:`~pytest_ifbench.agents.normalize.normalize` puts in the trajectory's ``meta["refused_requests"]``).
A successful answer passes through :func:`~pytest_ifbench._redact.redact` on its way back into the sandbox.

Accounting and limits (``meter``, a :class:`~.accounting.Meter`, as the CLI runner passes it): every
call is admitted by the meter first and counted after; one call's ``max_tokens`` is capped by what is left of
the run's budget, and waiting for the model ends at the run's deadline. Past a limit the CLI gets a
non-retryable HTTP 400 naming it (a refused request of kind ``limit``, ``"limit": <the stop reason>``, which
:func:`~.normalize.normalize` makes the trajectory's ``stop_reason``), and a second later every process of
its sandbox is killed (:class:`~.proxy_bounds.SandboxEnder`); the meter keeps the stop reason too. So does
a call refused as over the model's context window once one was answered (:data:`~.accounting.CONTEXT_WINDOW`).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import socketserver
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, Self

from .._redact import redact
from .._types import GenerationParams
from ..models.client import Completion, ModelClient
from . import proxy_bounds as _bounds
from .accounting import CONTEXT_WINDOW, Meter, tool_names
from .progress import BOARD
from .proxy_bounds import LIMIT_KIND, MAX_BODY_BYTES, NOT_CLI, SandboxEnder, redact_bytes
from .proxy_handler import ProxyHandler
from .proxy_loop import LoopThread
from .wire import ANTHROPIC_MESSAGES, RequestError, WireFormat, message_from_completion
from .wire.anthropic_messages import error_body
from .wire.documents import Accepts, fit

__all__ = ["LIMIT_KIND", "MAX_BODY_BYTES", "NOT_CLI", "LoopThread", "RecordingProxy", "Submit"]

#: Runs a model-call coroutine somewhere and returns a future for its result.
Submit = Callable[[Coroutine[Any, Any, Completion]], "concurrent.futures.Future[Completion]"]


class RecordingProxy:
    """A model endpoint on a Unix socket and/or ``127.0.0.1`` that calls ``client`` and records.

    ``wire_formats``: the dialects served, routed by path (default: Anthropic Messages alone; the
    first one's error format answers unknown paths). ``socket_path``: where to listen (a fresh socket
    file; its directory must exist). ``tcp``: also listen on a free local port (:attr:`url`), for
    debugging and tests. ``defaults``: the generation parameters a request does not set (temperature,
    top_p, seed); ``max_tokens_cap`` bounds the ``max_tokens`` a CLI asks for; ``accepts``: which documents
    and images the target takes as they are (:mod:`.wire.documents`: the rest becomes text).
    ``relay_only``: serve only the sandbox relay's CLI connections (see the module doc). Use as a context
    manager, or :meth:`start` and :meth:`stop`.
    """

    def __init__(self, client: ModelClient, *, log_path: Path, session_id: str = "session",
                 socket_path: Path | None = None, tcp: bool = False, submit: Submit | None = None,
                 defaults: GenerationParams = GenerationParams(), max_tokens_cap: int | None = None,
                 wire_formats: Sequence[WireFormat] = (ANTHROPIC_MESSAGES,), relay_only: bool = False,
                 meter: Meter | None = None, accepts: Accepts | None = None) -> None:
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
        self.accepts = accepts or Accepts.for_model(client.model)
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
        #: Counts and caps the calls (None: neither); past a limit, the sandbox's processes are ended.
        self.meter = meter
        self._ender = SandboxEnder()
        self._on_board = False
        self._answered: dict[int, tuple[Completion, dict[str, Any]]] = {}
        self._slots = threading.BoundedSemaphore(_bounds.MAX_CONNECTIONS)
        self.failures: list[str] = []
        #: Requests that could not be translated (refused, not calls): see the module doc.
        self.untranslatable: list[str] = []
        self._answering = 0  # answer() calls under way, each until its call is recorded and counted
        self._settled = threading.Condition(self._lock)
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
        if self.meter is not None and not self._on_board:  # a metered proxy is one agent run (live status)
            self._on_board = True
            BOARD.begin()
        self._log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed by stop()
        if self._given_submit is None:
            self._loop = LoopThread()
            self._submit = self._loop.submit
        try:
            if self.socket_path is not None:
                address, self._dir_fd = _bounds.bind_path(self.socket_path)
                self._serve(_bounds.UnixServer(address, ProxyHandler))
            if self._tcp:
                self._serve(_bounds.TCPServer(("127.0.0.1", 0), ProxyHandler))
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
        self._ender.close()
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
        if self._on_board:
            self._on_board = False
            BOARD.end()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` of the TCP listener (RuntimeError without one)."""
        for server in self._servers:
            if isinstance(server, _bounds.TCPServer):
                return f"http://127.0.0.1:{server.server_address[1]}"
        raise RuntimeError("the proxy is not listening on TCP (start it with tcp=True)")

    def settle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the requests under way to be answered, recorded and counted
        (a CLI killed while its model call ran: the call is paid for all the same); whether they were."""
        with self._settled:
            return self._settled.wait_for(lambda: self._answering == 0, timeout=max(timeout, 0.0))

    @property
    def answering(self) -> int:
        """Requests under way now, from the moment they are read until their call is recorded and counted."""
        with self._lock:
            return self._answering

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
        with self._lock:
            self._answering += 1
        try:
            return self._answer(wire, body)
        finally:
            with self._settled:
                self._answering -= 1
                self._settled.notify_all()

    def _answer(self, wire: WireFormat, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        request_time = int(time.time() * 1000)
        meter, cap = self.meter, self.max_tokens_cap
        if meter is not None:  # one call's max_tokens is capped by what is left of the run's budget
            cap = meter.tokens_left() if cap is None else min(cap, meter.tokens_left())
        try:
            translated = wire.translate(body, defaults=self.defaults, max_tokens_cap=cap)
        except RequestError as exc:  # recorded as an event, not a call: its body is no conversation
            message = redact(f"the proxy cannot translate this request: {exc}")
            with self._lock:
                self.untranslatable.append(message)
            self.refuse("untranslatable", message, status=400, method="POST", path=wire.paths[0])
            return _no_retry(wire, 400, message)
        translated = fit(translated, self.accepts)
        notes = translated.notes
        if meter is not None and cap != self.max_tokens_cap:  # one note, not one per remaining budget
            notes = tuple("max_tokens is capped by the run's max_tokens budget left"
                          if n.startswith("max_tokens is capped") else n for n in notes)
        self._note(*notes)
        if meter is not None and (stopped := meter.admit()) is not None:
            return self._stopped(wire, stopped)
        try:
            return self._call(wire, body, translated, request_time)
        finally:
            if meter is not None:
                completion, message = self._answered.pop(threading.get_ident(), (None, {}))
                meter.record(completion, tools=tool_names(message))

    def _call(self, wire: WireFormat, body: dict[str, Any], translated: Any,
              request_time: int) -> tuple[int, dict[str, str], bytes]:
        call = self.client.complete(translated.messages, translated.params, tools=translated.tools, prompt_cache=True)
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
            completion = future.result(timeout=None if self.meter is None else max(self.meter.seconds_left(), 0.001))
        except concurrent.futures.TimeoutError:  # the run's max_seconds ran out during the call
            future.cancel()
            return self._stopped(wire, self.meter.stop("max_seconds") if self.meter else "timed out")
        except concurrent.futures.CancelledError:
            return self._fail(wire, 400, "the proxy stopped before the model answered", body, request_time)
        except Exception as exc:  # noqa: BLE001 - any failure of the model call is reported, not raised
            if self.meter is not None and self.calls and getattr(exc, "context_window", False):
                return self._stopped(wire, self.meter.stop(CONTEXT_WINDOW))  # the run's own steps filled it
            status = 413 if getattr(exc, "status", None) == 413 else 400
            return self._fail(wire, status, f"model call failed: {exc}", body, request_time)
        finally:
            with self._lock:
                self._pending.discard(future)
        message = message_from_completion(completion, translated)
        self._answered[threading.get_ident()] = (completion, message)
        self._record(wire, body, message, request_time)
        headers, rendered = wire.render(message, translated)
        return 200, headers, redact_bytes(rendered)

    def _stopped(self, wire: WireFormat, message: str) -> tuple[int, dict[str, str], bytes]:
        """The answer past a limit (recorded; not a call, not a failure): a non-retryable error; the CLI ends."""
        self._ender.end()
        limit = self.meter.stop_reason if self.meter is not None else None
        self.refuse(LIMIT_KIND, message, status=400, method="POST", path=wire.paths[0], limit=limit or "max_seconds")
        return _no_retry(wire, 400, message)

    def _fail(self, wire: WireFormat, status: int, message: str, body: dict[str, Any],
              request_time: int) -> tuple[int, dict[str, str], bytes]:
        message = redact(message)
        with self._lock:
            self.failures.append(message)
        self._record(wire, body, error_body(status, message), request_time)
        return _no_retry(wire, status, message)

    def _record(self, wire: WireFormat, request: dict[str, Any], response: dict[str, Any], request_time: int) -> None:
        record = {"session_id": self.session_id, "biz_id": "", "request_time": request_time,
                  "request_body": request, "response_body": response}
        if wire.name != ANTHROPIC_MESSAGES.name:  # the log's own shape: other dialects are converted
            record.update(request_body=wire.record(request), wire=wire.name)
        with self._lock:
            self.calls += 1
            self.last_response = response
        self._write(record)

    def refuse(self, kind: str, reason: str, *, status: int, method: str = "", path: str = "", size: int = 0,
               limit: str | None = None) -> None:
        """Record one refused request (see the module doc; ``limit``: the one reached); it is not a call."""
        event = {"kind": kind, "status": status, "reason": redact(reason)[:500], "method": method, "path": path,
                 "bytes": size, **({"limit": limit} if limit else {})}
        with self._lock:
            self.refused += 1
            if len(self.refusals) >= _bounds.MAX_RECORDED_REFUSALS:
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


def _no_retry(wire: WireFormat, status: int, message: str) -> tuple[int, dict[str, str], bytes]:
    """An error answer in ``wire`` that the CLI should not retry."""
    return status, {"Content-Type": "application/json", "x-should-retry": "false"}, json.dumps(
        wire.error(status, message)).encode()
