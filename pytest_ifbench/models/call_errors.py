"""What a failed model call is: the errors :class:`~.client.ModelClient` raises, which failures are
worth another attempt, and the one redacted line each is reported with."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from .._redact import redact
from .replies import MalformedReply, status_of
from .spending import Ledger, LedgerUnavailable, usd

_RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}


class ModelCallError(Exception):
    """A model call failed for good (after retries, or not retryable); the message is redacted.

    ``paid``: the completions the failed operation had already paid for (an agent run's steps, a
    dialogue's earlier turns), added by the layer that re-raises it, so the errored record counts them.
    ``context_window``: the provider refused the prompt as longer than the model's window (an agent run
    whose own steps filled it stops there, scored as it stands: see ``agents.loop``)."""

    paid: tuple[Any, ...] = ()
    context_window: bool = False

    def __init__(self, model: str, message: str, *, attempts: int, status: int | None = None,
                 context_window: bool = False) -> None:
        self.model = model
        self.status = status
        self.attempts = attempts
        self.context_window = context_window
        status_text = f" (HTTP {status})" if status else ""
        super().__init__(f"model {model!r} failed after {attempts} attempt(s){status_text}: {message}")


class EndpointDown(ModelCallError):
    """A call not sent (or not sent again): its endpoint's circuit breaker is open (:mod:`.breaker`)."""

    def __init__(self, model: str, message: str, *, attempts: int) -> None:
        Exception.__init__(self, f"model {model!r} not called: {message}" if not attempts else
                           f"model {model!r} failed after {attempts} attempt(s): {message}")
        self.model = model
        self.status = None
        self.attempts = attempts


class SpendingLimitReached(ModelCallError):
    """A call not sent: the run has paid what ``--ifbench-max-cost`` allows (:mod:`.spending`)."""

    def __init__(self, model: str, limit: Ledger, *, attempts: int) -> None:
        try:
            now = limit.status()
            paid = f"{usd(now.spent)} of {usd(now.limit)} paid; "
        except LedgerUnavailable:  # a shared ledger that refused the call and went away since
            paid = ""
        Exception.__init__(self, f"model {model!r} not called: the run's spending limit is reached "
                                 f"({paid}a run with a higher limit resumes from the cache)")
        self.model = model
        self.status = None
        self.attempts = attempts


class SpendingLedgerUnavailable(SpendingLimitReached):
    """A call not sent: the run's shared spending ledger could not be asked, so what the call costs could
    not be counted (a failure outside the model's reach, like a provider down)."""

    def __init__(self, model: str, problem: BaseException, *, attempts: int) -> None:
        Exception.__init__(self, f"model {model!r} not called: the run's spending limit cannot be checked "
                                 f"({problem})")
        self.model = model
        self.status = None
        self.attempts = attempts


def error_message(exc: BaseException) -> str:
    """The one line a failed call is reported with; redacted before it is cut, so no key survives in part."""
    text = redact(str(exc)).strip()
    if isinstance(exc, MalformedReply):
        return text
    name = _kind(exc)
    message = text.splitlines()[0][:500] if text else name
    return message if name in message else f"{name}: {message}"


def retry_after(exc: BaseException) -> float | None:
    for headers in (
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "litellm_response_headers", None),
        getattr(exc, "headers", None),
    ):
        if not headers:
            continue
        try:
            value = headers.get("retry-after") or headers.get("Retry-After")
        except AttributeError:
            continue
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            return None
    return None


def answered(exc: BaseException) -> bool:
    """Whether the endpoint answered: a reply it sent was unusable, or an HTTP status it sent (not one a
    client library made up for a timeout, a connection error or a call it could not send)."""
    if isinstance(exc, MalformedReply):
        return True
    return (status_of(exc) is not None and _kind(exc) not in {"Timeout", "APITimeoutError", "APIConnectionError"}
            and not is_setup_error(exc))


def _kind(exc: BaseException) -> str:
    """The error's litellm exception name (the direct path's errors carry it as ``kind``)."""
    return getattr(exc, "kind", None) or type(exc).__name__


#: How providers word a prompt longer than the model's window when they do not raise litellm's
#: ``ContextWindowExceededError`` (llama.cpp, behind litellm's custom-provider path, raises a ValueError
#: that arrives as an ``APIConnectionError``: "Requested tokens (N) exceed context window of 4096").
_CONTEXT_WINDOW = re.compile(r"exceeds? (?:the )?context window|context[_ ]length[_ ]exceeded"
                             r"|maximum context length|context window exceeded", re.I)


def is_context_window_error(exc: BaseException) -> bool:
    """Whether ``exc`` says the prompt does not fit the model's window: never worth a retry."""
    return _kind(exc) == "ContextWindowExceededError" or bool(_CONTEXT_WINDOW.search(str(exc)[:2000]))


#: How litellm (or the SDK under it) words a call it could not send: no key for the provider (OpenAI's
#: as an HTTP 500 it makes up: "Missing credentials. Please pass an `api_key` ... or set the
#: `OPENAI_API_KEY`"; Anthropic's as a 401), or no provider for the model string (a mistyped bare name).
_NOT_SENT = re.compile(r"Missing credentials\. Please pass an `api_key`|Missing \w+ API Key"
                       r"|api_key client option must be set|LLM Provider NOT provided")


def is_setup_error(exc: BaseException) -> bool:
    """Whether ``exc`` says the call could not be sent as the run is set up (a missing key, an unknown
    provider): every attempt would fail alike, and no endpoint answered."""
    return not isinstance(exc, MalformedReply) and bool(_NOT_SENT.search(str(exc)[:2000]))


def is_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` is a call given up at its timeout (the client's, or the transport's own)."""
    return isinstance(exc, TimeoutError) or _kind(exc) in {"Timeout", "APITimeoutError", "TimeoutError",
                                                          "ReadTimeout", "ServerTimeoutError"}


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, MalformedReply):
        return True
    if is_context_window_error(exc) or is_setup_error(exc):
        return False
    name = _kind(exc)
    if name in {"AuthenticationError", "PermissionDeniedError", "NotFoundError", "BadRequestError",
                "ContextWindowExceededError", "ContentPolicyViolationError", "UnsupportedParamsError"}:
        return False
    if name in {"Timeout", "APITimeoutError", "APIConnectionError", "RateLimitError",
                "ServiceUnavailableError", "InternalServerError", "BadGatewayError", "APIError",
                "TimeoutError", "JSONDecodeError"}:
        return True
    status = status_of(exc)
    return status in _RETRYABLE_STATUS if status is not None else isinstance(exc, (OSError, asyncio.TimeoutError))
