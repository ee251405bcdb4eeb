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
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._text import strip_reasoning, utf8_safe, utf8_safe_value
from .._types import GenerationParams
from .background import call_over, call_sent
from .billing import amount, price, tokens, with_refused
from .breaker import Breakers, CircuitOpen, is_connection_failure
from .cache import ResponseCache, cache_key, kept_reply
from .call_errors import (
    EndpointDown,
    ModelCallError,
    SpendingLedgerUnavailable,
    SpendingLimitReached,
    answered,
    error_message,
    is_context_window_error,
    is_retryable,
    is_setup_error,
    is_timeout,
    retry_after,
)
from .in_flight import Slot, reply_or_turn
from .openai_compat import DirectTransport, direct_route
from .provider_api import Transport
from .replies import MalformedReply, as_malformed, checked_reply, status_of
from .spending import WAIT, Ledger, LedgerUnavailable

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


def litellm_coming() -> bool:
    """Whether this process has imported litellm, or started to (:func:`prefetch_litellm`): asking it
    then costs no import that the run would not pay anyway."""
    return _litellm is not None or _prefetch is not None


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


#: Seconds past its own timeout that an attempt is cancelled (a transport that ignores its timeout).
_HARD_LIMIT = 5.0


async def _admitted(limit: Ledger, model: str, attempt: int, patience: float) -> float:
    """The reservation of a call of ``model`` the run's spending limit lets start (waiting while the
    model's first call is on its way, or while it fits only once the calls on their way are paid, for
    at most ``patience`` seconds: longer than one attempt can take); raises
    :class:`SpendingLimitReached` when it does not (:class:`SpendingLedgerUnavailable` when a shared
    ledger cannot be asked)."""
    async def asked(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        # a file's lock is held for a read and a write of 2 KiB (~10 us): inline, where a thread hop
        # cost 0.6 ms a call; a shared ledger's round trip would hold the event loop up
        return await asyncio.to_thread(call, *args, **kwargs) if limit.remote else call(*args, **kwargs)

    deadline = time.monotonic() + patience
    while True:
        try:
            reserved = await asked(limit.start, model, wait=time.monotonic() < deadline)
        except LedgerUnavailable as problem:
            raise SpendingLedgerUnavailable(model, problem, attempts=attempt - 1) from None
        if reserved is None:  # (its message reads the ledger's figures)
            raise await asked(SpendingLimitReached, model, limit, attempts=attempt - 1)
        if reserved != WAIT:
            return reserved
        await asyncio.sleep(0.05)


def _refused_reply(model: str, response: Any, cost: float | None, attempt: int, latency: float) -> Completion:
    """A reply refused as malformed, as what it was billed: its tokens and price (no text: it had none usable)."""
    usage = getattr(response, "usage", None)
    choices = getattr(response, "choices", None)
    return Completion(text="", raw_text="", prompt_tokens=tokens(usage, "prompt_tokens"),
                      completion_tokens=tokens(usage, "completion_tokens"), latency=latency, cost=cost, model=model,
                      attempts=attempt, finish_reason=getattr(choices[0], "finish_reason", None) if choices else None)


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
    #: The run's spending limit (``--ifbench-max-cost``, shared by the model's and the judges' clients and
    #: every process of the run); None: no limit.
    spending: Ledger | None = field(default=None, repr=False)
    #: What the provider's replies depend on besides the request (``Provider.revision``), in every cache key.
    revision: str | None = None
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
                         sample=sample, tools=tools, response_format=response_format, revision=self.revision)

    def _completion(self, raw: str, entry: Mapping[str, Any], *, cached: bool) -> Completion:
        raw = utf8_safe(raw)  # every writer of the run can encode what the model said
        text, reasoning = strip_reasoning(raw) if self.strip_think else (raw, "")
        calls = entry.get("tool_calls") or ()
        return Completion(
            text=text, raw_text=raw, reasoning=reasoning,
            tool_calls=tuple(utf8_safe_value(list(calls))) if calls else (),
            prompt_tokens=tokens(entry, "prompt_tokens"), completion_tokens=tokens(entry, "completion_tokens"),
            latency=entry.get("latency", 0.0), cost=amount(entry.get("cost")), cached=cached, model=self.model,
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
        lease in the store (:meth:`ResponseCache.claim`, :mod:`.in_flight`). The mark and the lease
        are taken once the request holds its first attempt's slot of the concurrency limit (so a
        process claims only what it is sending, not the jobs queued behind the limit), and kept until
        the reply is kept or the call failed, retries included; a request that finds another
        process's claim gives its slot back while it waits for that reply."""
        key = self.key(messages, params, sample=sample, tools=tools, response_format=response_format)
        marks = self.cache_breakpoints if prompt_cache else ()
        if self.cache is None:
            try:
                entry = await self._call_with_retries(messages, params, tools=tools, response_format=response_format,
                                                      marks=marks)
            finally:
                call_over()
            return self._completion(entry["raw_text"], entry, cached=False)
        # A shared tier (S3, Redis) may read over the network on a local miss: off the event loop then.
        shared = self.cache.shared is not None
        kept = kept_reply(await asyncio.to_thread(self.cache.get, key) if shared else self.cache.get(key))
        if kept is not None:
            return self._hit(kept)
        loop = asyncio.get_running_loop()
        flight = (id(loop), key)
        first = self._in_flight.get(flight)
        if first is not None:
            answer = await asyncio.shield(first)  # this caller's own cancellation leaves the first alone
            if answer is not None:
                return self._hit(answer)
        mine = self._in_flight[flight] = loop.create_future()
        answer, claimed, slot = None, False, None
        try:
            policy = self.retry  # a process that takes longer than a call may take under the retry policy hangs
            patience = policy.max_attempts * policy.timeout + policy.max_total_wait
            # the claim is taken with the first attempt's slot held (not claimed: another's mark, patience out)
            answer, claimed, slot = await reply_or_turn(self.cache, key, patience, self.limiter)
            if answer is not None:
                return self._hit(answer)
            answer = await self._call_with_retries(messages, params, tools=tools, response_format=response_format,
                                                   marks=marks, slot=slot)
            answer = utf8_safe_value(answer)  # half an emoji a provider cut: the cache, too, writes UTF-8
            self.cache.put(key, {
                "model": self.model, "messages": list(messages), "params": params.litellm_kwargs(),
                "sample": sample, "tools": list(tools), "response_format": response_format, "response": answer,
            })
        finally:  # the reply is in the cache (or the call failed): a stopping run need not wait for it
            call_over(answer)  # (counted only if this task sent the call: not a reply another process paid for)
            if slot is not None:
                slot.release()  # unless its attempt did (a call that failed before it: litellm's import)
            if claimed:
                self.cache.release(key)
            if self._in_flight.get(flight) is mine:
                del self._in_flight[flight]
            mine.set_result(answer)  # None (failed, cancelled): whoever waited calls for itself
        return self._completion(answer["raw_text"], answer, cached=False)

    def _hit(self, entry: Mapping[str, Any]) -> Completion:
        """A reply from the cache (or a call another caller made): free, and what a call may cost."""
        self.stats.cache_hits += 1
        if self.spending is not None:
            self.spending.saw(self.model, entry.get("cost"))
        return self._completion(entry["raw_text"], entry, cached=True)

    async def _call_with_retries(self, messages, params, *, tools, response_format, marks=(),
                                 slot: Slot | None = None) -> dict[str, Any]:
        """The reply's cache entry; ``slot``: the limiter's slot held already for the first attempt that
        reaches the limiter (it is released with that attempt; each retry after it waits for one of its own).
        Replies refused as malformed were billed: the entry's ``cost`` includes theirs, and a call that fails
        for good carries them as its error's ``paid``, so that the errored record counts them."""
        refused: list[Completion] = []
        try:
            return await self._attempts(messages, params, tools=tools, response_format=response_format,
                                        marks=marks, slot=slot, refused=refused)
        except ModelCallError as failed:
            failed.paid = (*refused, *failed.paid)
            raise

    async def _attempts(self, messages, params, *, tools, response_format, marks, slot: Slot | None,
                        refused: list[Completion]) -> dict[str, Any]:
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
        spending = self.spending
        reserved: float | None = None  # what the spending limit holds for the attempt on its way

        async def send() -> Any:
            nonlocal reserved
            breaker.check()  # also after waiting for a slot: the endpoint may have been found dead meanwhile
            if spending is not None:  # after the slot too: a call waiting for one has not started
                # patience: past one attempt's hard limit, the model's first call has come back unless its
                # process died (waiting less let calls start unpriced beside a slow first call)
                reserved = await _admitted(spending, self.model, attempt, self.retry.timeout + _HARD_LIMIT + 1)
            call_sent()  # last before sending: a run stopping meanwhile sends nothing more (its reservation back)
            self.stats.calls += 1
            if litellm is None:
                call = self.direct.acompletion(model=self.model, messages=messages,  # type: ignore[union-attr]
                                               timeout=self.retry.timeout, **kwargs)
            else:
                call = litellm.acompletion(
                    model=self.model, messages=list(messages), num_retries=0, max_retries=0,
                    timeout=self.retry.timeout, **kwargs,
                )
            return await asyncio.wait_for(call, timeout=self.retry.timeout + _HARD_LIMIT)

        waited = 0.0
        attempt = 0
        while True:
            attempt += 1
            start = time.perf_counter()
            response = cost = None
            try:
                breaker.check()
                if self.limiter is not None:
                    async with slot if slot is not None and slot.held else self.limiter:
                        start = time.perf_counter()
                        response = await send()
                else:
                    response = await send()
                breaker.answered()
                latency = time.perf_counter() - start
                cost = price(response, litellm)  # before the reply is judged: one refused was billed too
                choice, raw, calls, usage = checked_reply(response)
                if reserved is not None:
                    spending.end(self.model, reserved, cost)  # type: ignore[union-attr]
                    reserved = None
                return {
                    "raw_text": raw, "tool_calls": calls,
                    "prompt_tokens": tokens(usage, "prompt_tokens"),
                    "completion_tokens": tokens(usage, "completion_tokens"),
                    "latency": latency, "cost": with_refused(cost, (r.cost for r in refused)), "attempts": attempt,
                    "finish_reason": getattr(choice, "finish_reason", None),
                }
            except asyncio.CancelledError:
                if reserved is not None:
                    spending.end(self.model, reserved, None, paid=False)  # type: ignore[union-attr]
                raise
            except SpendingLimitReached:
                self.stats.failures += 1
                raise
            except CircuitOpen as opened:
                self.stats.failures += 1
                raise EndpointDown(self.model, str(opened), attempts=attempt - 1) from None
            except Exception as error:
                exc = as_malformed(error)
                came = isinstance(exc, MalformedReply)  # a reply came and was refused: billed all the same
                billed = cost if came else None  # (priced before it was judged; none when litellm refused it)
                if came:
                    refused.append(_refused_reply(self.model, response, billed, attempt, time.perf_counter() - start))
                if reserved is not None:  # (sent and given up at its timeout: a provider may bill it)
                    spending.end(self.model, reserved, billed, paid=came,  # type: ignore[union-attr]
                                 given_up=is_timeout(exc) and not is_connection_failure(error))
                    reserved = None
                message = error_message(exc)
                if is_connection_failure(error):
                    breaker.failed(message)
                    if breaker.opened is not None:
                        self.stats.failures += 1
                        raise EndpointDown(self.model, breaker.opened, attempts=attempt) from None
                elif answered(exc):
                    breaker.answered()
                if not is_retryable(exc) or attempt >= self.retry.max_attempts:
                    self.stats.failures += 1
                    status = None if is_setup_error(exc) else status_of(exc)  # (litellm's made-up 500: not sent)
                    raise ModelCallError(self.model, message, attempts=attempt, status=status,
                                         context_window=is_context_window_error(exc)) from None
                delay = random.uniform(0, min(self.retry.max_delay, self.retry.base_delay * 2 ** (attempt - 1)))
                hinted = retry_after(exc)
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
