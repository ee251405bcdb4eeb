"""Model access: every model and judge call goes through its provider's transport, or litellm.

One :class:`ModelClient` per model string. It owns retries (exponential
backoff with full jitter, ``Retry-After`` honoured, hard caps on attempts and
total wait), the response cache and the per-call accounting. Calls to an
OpenAI-compatible endpoint that litellm would forward unchanged take the
direct path of :mod:`.openai_compat`; OpenAI's and Anthropic's models go
through their SDKs (:mod:`.openai_sdk`, :mod:`.anthropic_sdk`) -- same body,
same checks, same errors, no litellm import (see :mod:`.providers`); every
other call goes through litellm, imported with its
network-at-import behaviour off, in a background thread as soon as the run
knows it needs it (:func:`prefetch_litellm`) so the ~3 s import overlaps
collection instead of delaying the first request.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._redact import redact
from .._text import strip_reasoning
from .._types import GenerationParams
from .breaker import Breakers, CircuitOpen, is_connection_failure
from .cache import ResponseCache, cache_key
from .in_flight import kept_reply, reply_or_claim
from .openai_compat import DirectTransport, direct_route
from .provider_api import Transport
from .replies import MalformedReply, as_malformed, checked_reply, status_of

_RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
_litellm: Any = None
_import_lock = threading.Lock()
_prefetch: threading.Thread | None = None


def import_litellm() -> Any:
    """Import litellm lazily, offline-safe (no price-list download, no .env reading); thread-safe."""
    global _litellm
    if _litellm is not None:
        return _litellm
    with _import_lock:
        if _litellm is None:
            _litellm = _configured_litellm()
    return _litellm


def _configured_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
    import logging
    import warnings

    if threading.current_thread() is threading.main_thread():
        with warnings.catch_warnings():  # pydantic deprecation noise would land on a random test
            warnings.simplefilter("ignore")
            import litellm
    else:  # catch_warnings is process-wide: from a thread it would undo pytest's own filters
        import litellm  # (the plugin's filterwarnings lines hide pydantic's and litellm's noise)

    # litellm logs every call at INFO; with `--log-cli-level=INFO` (agent step progress) that is noise.
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        logging.getLogger(name).setLevel(logging.WARNING)
    litellm.telemetry = False
    litellm.drop_params = True
    litellm.suppress_debug_info = True
    from .local import register_local_provider

    register_local_provider(litellm)
    return litellm


def prefetch_litellm() -> None:
    """Start importing litellm in a daemon thread, once; returns at once."""
    global _prefetch
    if _litellm is not None or _prefetch is not None:
        return
    with _import_lock:
        if _prefetch is None:
            # sysconfig fills its config vars lazily and not thread-safely: a reader on another thread
            # (ruff's binary finder) could see EXE = None while the import initialises them.
            import sysconfig

            sysconfig.get_config_vars()
            _prefetch = threading.Thread(target=_import_quietly, name="ifbench-import-litellm", daemon=True)
            _prefetch.start()


def _import_quietly() -> None:
    try:
        import_litellm()
    except Exception:  # the first call imports again and reports the error where it belongs
        pass


async def litellm_module() -> Any:
    """litellm from a coroutine: never blocks the event loop while the import is running."""
    if _litellm is not None:
        return _litellm
    return await asyncio.get_running_loop().run_in_executor(None, import_litellm)


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    max_attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    #: Cap on the sum of all waits for one call; past it the call fails.
    max_total_wait: float = 300.0
    timeout: float = 600.0
    #: How a wait between attempts is spent; tests pass a recorder instead of really sleeping.
    sleep: Callable[[float], Awaitable[object]] = field(default=asyncio.sleep, repr=False, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    """One model reply with its accounting. ``text`` is after reasoning stripping."""

    text: str
    raw_text: str
    reasoning: str = ""
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency: float = 0.0
    cost: float | None = None
    cached: bool = False
    model: str = ""
    attempts: int = 1
    finish_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text, "raw_text": self.raw_text, "reasoning": self.reasoning,
            "reasoning_stripped": bool(self.reasoning), "tool_calls": list(self.tool_calls),
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "latency": round(self.latency, 4), "cost": self.cost, "cached": self.cached,
            "model": self.model, "attempts": self.attempts, "finish_reason": self.finish_reason,
        }


class ModelCallError(Exception):
    """A model call failed for good (after retries, or not retryable); the message is redacted.

    ``paid``: the completions the failed operation had already paid for (an agent run's steps, a
    dialogue's earlier turns), added by the layer that re-raises it, so the errored record counts them."""

    paid: tuple[Any, ...] = ()

    def __init__(self, model: str, message: str, *, attempts: int, status: int | None = None) -> None:
        self.model = model
        self.status = status
        self.attempts = attempts
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


def _error_message(exc: BaseException) -> str:
    """The one line a failed call is reported with; redacted before it is cut, so no key survives in part."""
    text = redact(str(exc)).strip()
    if isinstance(exc, MalformedReply):
        return text
    name = _kind(exc)
    message = text.splitlines()[0][:500] if text else name
    return message if name in message else f"{name}: {message}"


def _reply_cost(response: Any) -> float | None:
    """The ``cost`` (USD) a transport's reply carries, if it carries one."""
    cost = getattr(response, "cost", None)
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None


def _retry_after(exc: BaseException) -> float | None:
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


def _answered(exc: BaseException) -> bool:
    """Whether the endpoint answered: a reply it sent was unusable, or an HTTP status it sent (not one a
    client library made up for a timeout or a connection error)."""
    if isinstance(exc, MalformedReply):
        return True
    return status_of(exc) is not None and _kind(exc) not in {"Timeout", "APITimeoutError", "APIConnectionError"}


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


def _is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, MalformedReply):
        return True
    if is_context_window_error(exc):
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


@dataclass(kw_only=True)
class CallStats:
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0


@dataclass(kw_only=True)
class ModelClient:
    """Calls one model through litellm with caching and retries."""

    model: str
    api_base: str | None = None
    cache: ResponseCache | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    strip_think: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)
    stats: CallStats = field(default_factory=CallStats)
    #: Shared concurrency limit (set by the background generator); None = unlimited.
    limiter: Any = None
    #: What sends the calls instead of litellm: the transport of the provider that serves the model
    #: (``make_client`` passes it, see :mod:`.providers`); a client built without one takes the direct
    #: path's when :func:`direct_route` allows it (see :mod:`.openai_compat`). None: litellm.
    direct: Transport | None = field(default=None, repr=False)
    #: The process's circuit breakers (the session shares one set between the model and the judges).
    breakers: Breakers = field(default_factory=Breakers, repr=False)
    #: Where a call made with ``prompt_cache=True`` asks the provider to cache its prompt (litellm's
    #: ``cache_control_injection_points``; ``make_client`` takes them from the provider): empty, no marks.
    cache_breakpoints: tuple[Mapping[str, Any], ...] = ()
    #: Calls on their way, by (event loop, cache key): an identical request waits for the first (see
    #: :meth:`complete`).
    _in_flight: dict[tuple[int, str], asyncio.Future[Any]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.direct is None and self.api_base and direct_route(self.model, self.api_base, self.extra):
            self.direct = DirectTransport(self.api_base, self.extra)

    @property
    def endpoint(self) -> str:
        """What the circuit breaker is kept for: the API base, else the provider prefix of the model string."""
        if self.api_base:
            return self.api_base.rstrip("/")
        prefix = self.model.split("/", 1)[0] if "/" in self.model else "default"
        return f"the {prefix!r} provider's endpoint"

    @property
    def uses_litellm(self) -> bool:
        return self.direct is None

    def key(self, messages: Sequence[Mapping[str, Any]], params: GenerationParams, *, sample: int,
            tools: Sequence[Mapping[str, Any]], response_format: Mapping[str, Any] | None) -> str:
        return cache_key(model=self.model, messages=messages, params=params.litellm_kwargs(),
                         sample=sample, tools=tools, response_format=response_format)

    def _completion(self, raw: str, entry: Mapping[str, Any], *, cached: bool) -> Completion:
        text, reasoning = strip_reasoning(raw) if self.strip_think else (raw, "")
        return Completion(
            text=text, raw_text=raw, reasoning=reasoning,
            tool_calls=tuple(entry.get("tool_calls") or ()),
            prompt_tokens=entry.get("prompt_tokens", 0), completion_tokens=entry.get("completion_tokens", 0),
            latency=entry.get("latency", 0.0), cost=entry.get("cost"), cached=cached, model=self.model,
            attempts=entry.get("attempts", 1), finish_reason=entry.get("finish_reason"),
        )

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        params: GenerationParams = GenerationParams(),
        *,
        sample: int = 0,
        tools: Sequence[Mapping[str, Any]] = (),
        response_format: Mapping[str, Any] | None = None,
        prompt_cache: bool = False,
    ) -> Completion:
        """The model's reply, from the response cache when it has one.

        ``prompt_cache``: the conversation goes on after this call (an agent's step), so the provider is
        asked to cache its prompt where it wants to be asked (:attr:`cache_breakpoints`). The marks
        change what the call costs, never what it asks: the cache key is the same with or without.

        With the cache on, a request identical to one still on its way (the same cache key: a
        dialogue opening with another instance's prompt, one prompt in two suites) waits for that
        one's reply instead of paying for its own, and gets it as a cache hit, as it would have a
        moment later; if that call fails or is cancelled, the waiting one calls for itself. In one
        process through an in-memory map; between processes sharing the cache directory (xdist
        workers) through a mark beside the entry, and with a shared tier between machines through a
        lease in the store (:meth:`ResponseCache.claim`, :mod:`.in_flight`)."""
        key = self.key(messages, params, sample=sample, tools=tools, response_format=response_format)
        marks = self.cache_breakpoints if prompt_cache else ()
        if self.cache is None:
            entry = await self._call_with_retries(messages, params, tools=tools, response_format=response_format,
                                                  marks=marks)
            return self._completion(entry["raw_text"], entry, cached=False)
        # A shared tier (S3, Redis) may read over the network on a local miss: off the event loop then.
        shared = self.cache.shared is not None
        kept = kept_reply(await asyncio.to_thread(self.cache.get, key) if shared else self.cache.get(key))
        if kept is not None:
            self.stats.cache_hits += 1
            return self._completion(kept["raw_text"], kept, cached=True)
        loop = asyncio.get_running_loop()
        flight = (id(loop), key)
        first = self._in_flight.get(flight)
        if first is not None:
            answer = await asyncio.shield(first)  # this caller's own cancellation leaves the first alone
            if answer is not None:
                self.stats.cache_hits += 1
                return self._completion(answer["raw_text"], answer, cached=True)
        mine = self._in_flight[flight] = loop.create_future()
        answer, claimed = None, False
        try:
            policy = self.retry  # a process that takes longer than a call may take under the retry policy hangs
            answer = await reply_or_claim(self.cache, key, policy.max_attempts * policy.timeout + policy.max_total_wait)
            if answer is not None:
                self.stats.cache_hits += 1
                return self._completion(answer["raw_text"], answer, cached=True)
            claimed = True
            answer = await self._call_with_retries(messages, params, tools=tools, response_format=response_format,
                                                   marks=marks)
            self.cache.put(key, {
                "model": self.model, "messages": list(messages), "params": params.litellm_kwargs(),
                "sample": sample, "tools": list(tools), "response_format": response_format, "response": answer,
            })
        finally:
            if claimed:
                self.cache.release(key)
            if self._in_flight.get(flight) is mine:
                del self._in_flight[flight]
            mine.set_result(answer)  # None (failed, cancelled): whoever waited calls for itself
        return self._completion(answer["raw_text"], answer, cached=False)

    async def _call_with_retries(self, messages, params, *, tools, response_format, marks=()) -> dict[str, Any]:
        litellm = await litellm_module() if self.direct is None else None
        kwargs: dict[str, Any] = dict(self.extra) | params.litellm_kwargs()
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if tools:
            kwargs["tools"] = list(tools)
            # litellm.completion() imports its MCP gateway (and the optional `mcp` package) whenever
            # `tools` is set, unless told to skip it; it pops this flag, so no provider sees it.
            kwargs["_skip_mcp_handler"] = True
        if response_format is not None:
            kwargs["response_format"] = dict(response_format)
        if marks:
            kwargs["cache_control_injection_points"] = [dict(point) for point in marks]
        breaker = self.breakers.for_endpoint(self.endpoint)

        async def send() -> Any:
            breaker.check()  # also after waiting for a slot: the endpoint may have been found dead meanwhile
            self.stats.calls += 1
            if litellm is None:
                call = self.direct.acompletion(model=self.model, messages=messages,  # type: ignore[union-attr]
                                               timeout=self.retry.timeout, **kwargs)
            else:
                call = litellm.acompletion(
                    model=self.model, messages=list(messages), num_retries=0, max_retries=0,
                    timeout=self.retry.timeout, **kwargs,
                )
            return await asyncio.wait_for(call, timeout=self.retry.timeout + 5)

        waited = 0.0
        attempt = 0
        while True:
            attempt += 1
            start = time.perf_counter()
            try:
                breaker.check()
                if self.limiter is not None:
                    async with self.limiter:
                        start = time.perf_counter()
                        response = await send()
                else:
                    response = await send()
                breaker.answered()
                latency = time.perf_counter() - start
                choice, raw, calls, usage = checked_reply(response)
                # A transport prices its own replies (the SDK providers, at litellm's prices); the direct
                # path serves only models litellm has no price for, so its replies carry none.
                cost = _reply_cost(response) if litellm is None else None
                if litellm is not None:
                    try:
                        cost = float(litellm.completion_cost(completion_response=response))
                    except Exception:
                        cost = None
                return {
                    "raw_text": raw, "tool_calls": calls,
                    "prompt_tokens": getattr(usage, "prompt_tokens", 0) or 0,
                    "completion_tokens": getattr(usage, "completion_tokens", 0) or 0,
                    "latency": latency, "cost": cost, "attempts": attempt,
                    "finish_reason": getattr(choice, "finish_reason", None),
                }
            except asyncio.CancelledError:
                raise
            except CircuitOpen as opened:
                self.stats.failures += 1
                raise EndpointDown(self.model, str(opened), attempts=attempt - 1) from None
            except Exception as error:
                exc = as_malformed(error)
                message = _error_message(exc)
                if is_connection_failure(error):
                    breaker.failed(message)
                    if breaker.opened is not None:
                        self.stats.failures += 1
                        raise EndpointDown(self.model, breaker.opened, attempts=attempt) from None
                elif _answered(exc):
                    breaker.answered()
                if not _is_retryable(exc) or attempt >= self.retry.max_attempts:
                    self.stats.failures += 1
                    raise ModelCallError(self.model, message,
                                         attempts=attempt, status=status_of(exc)) from None
                delay = random.uniform(0, min(self.retry.max_delay, self.retry.base_delay * 2 ** (attempt - 1)))
                hinted = _retry_after(exc)
                if hinted is not None:
                    delay = max(delay, hinted)
                if waited + delay > self.retry.max_total_wait:
                    self.stats.failures += 1
                    raise ModelCallError(
                        self.model,
                        f"{message} (gave up: retry wait budget of "
                        f"{self.retry.max_total_wait:g}s exhausted)",
                        attempts=attempt, status=status_of(exc),
                    ) from None
                self.stats.retries += 1
                waited += delay
                await self.retry.sleep(delay)
