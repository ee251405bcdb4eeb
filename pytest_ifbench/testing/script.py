"""What the stub answers: scripted replies, injected faults and the rules that pick them.

Everything here is format-neutral: a :class:`Script` sees requests through
:class:`ChatRequest` (which the wire format builds from the request body) and
answers with a :class:`Reply` or a :class:`Fault`; the wire format turns those
into bytes.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FAULT_KINDS", "ChatRequest", "Fault", "Reply", "ReplySpec", "Script", "fault_from_dict", "load_script",
    "reply_from_dict",
]

FAULT_KINDS = frozenset({"status", "timeout", "malformed", "disconnect"})


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
    * ``raw_body``, when set, is the whole HTTP 200 body, sent as is instead of
      the completion the other fields make: a reply no provider should send
      (``'{"choices": []}'``, a body without ``usage``, ``"<html>"``). Both
      formats honour it; streamed or not, it is sent unframed.
    """

    content: str | None = None
    tool_calls: list[dict] | None = None
    latency: float | None = None
    finish_reason: str | None = None
    raw_body: str | None = None

    def __post_init__(self) -> None:
        if self.content is not None and not isinstance(self.content, str):
            raise TypeError(f"Reply.content must be a str or None, got {type(self.content).__name__}")
        if self.tool_calls is not None and not isinstance(self.tool_calls, list):
            raise TypeError("Reply.tool_calls must be a list of OpenAI tool-call dicts or None")
        if self.latency is not None and self.latency < 0:
            raise ValueError(f"Reply.latency must be >= 0, got {self.latency!r}")
        if self.raw_body is not None and not isinstance(self.raw_body, str):
            raise TypeError(f"Reply.raw_body must be a str or None, got {type(self.raw_body).__name__}")

    @property
    def effective_finish_reason(self) -> str:
        """``finish_reason`` with its default applied."""
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """One injected failure, consumed by exactly one chat request.

    Kinds:

    * ``"status"``: answer immediately with HTTP ``status`` and the format's
      error body (OpenAI: ``{"error": {"message", "type", "param", "code"}}``);
      a ``Retry-After`` header (seconds) is sent when ``retry_after`` is set.
    * ``"timeout"``: sleep ``hang`` seconds, then answer normally, latency
      included (the client is expected to have timed out by then).
      ``StubServer.stop`` cuts the sleep short and drops the connection.
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
            raise ValueError(f"Fault.kind must be one of {sorted(FAULT_KINDS)}, got {self.kind!r}")
        if not 100 <= int(self.status) <= 599:
            raise ValueError(f"Fault.status must be an HTTP status code, got {self.status!r}")
        if self.retry_after is not None and self.retry_after < 0:
            raise ValueError(f"Fault.retry_after must be >= 0, got {self.retry_after!r}")
        if self.hang < 0:
            raise ValueError(f"Fault.hang must be >= 0, got {self.hang!r}")


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A parsed chat request, as the script sees it whatever the wire format.

    ``body`` is the parsed JSON object (what reply callables receive), ``text``
    the text of the last user message (what rules and faults match on),
    ``model`` the requested model id and ``stream`` whether an SSE stream was
    asked for.
    """

    body: dict
    text: str
    model: str | None
    stream: bool


#: A reply as scripted: fixed, or computed from the parsed request body.
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


class Script:
    """Thread-safe rules, fault queue and default reply of one stub server.

    Resolution for a chat request: a queued fault that applies is consumed
    first (:meth:`take_fault`); otherwise the first rule (insertion order) that
    matches and has uses left answers (:meth:`resolve`); otherwise ``default``;
    otherwise ``"stub reply to: <first 200 chars of the last user message>"``.
    """

    def __init__(self, default: ReplySpec | None = None) -> None:
        self.default = default
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
        self._faults: list[_QueuedFault] = []

    def add_rule(self, match: str, reply: ReplySpec, *, times: int | None = None, model: str | None = None) -> None:
        if times is not None and times < 0:
            raise ValueError(f"times must be >= 0 or None, got {times!r}")
        if not isinstance(reply, Reply) and not callable(reply):
            raise TypeError("reply must be a Reply or a callable taking the request body")
        rule = _Rule(re.compile(match, re.DOTALL), reply, times, model)
        with self._lock:
            self._rules.append(rule)

    def inject_faults(self, *faults: Fault, match: str | None = None) -> None:
        for fault in faults:
            if not isinstance(fault, Fault):
                raise TypeError(f"inject_faults takes Fault objects, got {type(fault).__name__}")
        pattern = re.compile(match, re.DOTALL) if match is not None else None
        with self._lock:
            self._faults.extend(_QueuedFault(f, pattern) for f in faults)

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return len(self._faults)

    def clear(self) -> None:
        """Drop every rule and queued fault (``default`` is kept)."""
        with self._lock:
            self._rules.clear()
            self._faults.clear()

    def take_fault(self, request: ChatRequest) -> Fault | None:
        """Consume and return the first queued fault that applies to ``request``."""
        with self._lock:
            for i, queued in enumerate(self._faults):
                if queued.pattern is not None and not queued.pattern.search(request.text):
                    continue
                del self._faults[i]
                return queued.fault
        return None

    def resolve(self, request: ChatRequest) -> Reply:
        """The reply for ``request``; a reply callable's exception propagates."""
        chosen: Any = None
        with self._lock:
            for rule in self._rules:
                if rule.remaining is not None and rule.remaining <= 0:
                    continue
                if rule.model is not None and rule.model != request.model:
                    continue
                if not rule.pattern.search(request.text):
                    continue
                if rule.remaining is not None:
                    rule.remaining -= 1
                chosen = rule.reply
                break
        if chosen is None:
            chosen = self.default
        if chosen is None:
            return Reply(content=f"stub reply to: {request.text[:200]}")
        if isinstance(chosen, Reply):
            return chosen
        return _coerce_reply(chosen(request.body))


def _coerce_reply(value: Any) -> Reply:
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply(content=value)
    raise TypeError(f"reply callable must return a Reply (or str), got {type(value).__name__}")


# --------------------------------------------------------------------------- JSON scripts


def reply_from_dict(data: Any, where: str) -> Reply:
    """A :class:`Reply` from its JSON form (an object of its fields, or a plain string)."""
    if isinstance(data, str):
        return Reply(content=data)
    if not isinstance(data, dict):
        raise TypeError(f"{where}: reply must be an object or a string, got {type(data).__name__}")
    try:
        return Reply(**data)
    except TypeError as exc:
        raise ValueError(f"{where}: bad reply {data!r}: {exc}") from None


def fault_from_dict(data: Any, where: str) -> tuple[Fault, str | None]:
    """A :class:`Fault` and its ``match`` regex (or ``None``) from its JSON form."""
    if not isinstance(data, dict):
        raise TypeError(f"{where}: fault must be an object, got {type(data).__name__}")
    data = dict(data)
    match = data.pop("match", None)
    try:
        return Fault(**data), match
    except TypeError as exc:
        raise ValueError(f"{where}: bad fault {data!r}: {exc}") from None


def load_script(target: Any, script: dict) -> None:
    """Add the ``rules`` and ``faults`` of a JSON script to ``target``
    (anything with ``add_rule``/``inject_faults``: a :class:`Script` or a server)."""
    for i, rule in enumerate(script.get("rules") or []):
        where = f"rules[{i}]"
        if not isinstance(rule, dict):
            raise TypeError(f"{where}: must be an object")
        extra = set(rule) - {"match", "reply", "times", "model"}
        if extra:
            raise ValueError(f"{where}: unknown keys {sorted(extra)}")
        if "reply" not in rule:
            raise ValueError(f"{where}: missing 'reply'")
        target.add_rule(str(rule.get("match", "")), reply_from_dict(rule["reply"], where),
                        times=rule.get("times"), model=rule.get("model"))
    for i, data in enumerate(script.get("faults") or []):
        fault, match = fault_from_dict(data, f"faults[{i}]")
        target.inject_faults(fault, match=match)
