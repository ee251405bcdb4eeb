"""Model access: every model and judge call goes through litellm.

One :class:`ModelClient` per model string. It owns retries (exponential
backoff with full jitter, ``Retry-After`` honoured, hard caps on attempts and
total wait), the response cache and the per-call accounting. litellm is
imported on the first call only, with its network-at-import behaviour off.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._cache import ResponseCache, cache_key
from ._model_types import GenerationParams
from ._text import strip_reasoning

_RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
_litellm: Any = None


def import_litellm() -> Any:
    """Import litellm lazily, offline-safe (no price-list download, no .env reading)."""
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
        import warnings

        with warnings.catch_warnings():  # pydantic deprecation noise would land on a random test
            warnings.simplefilter("ignore")
            import litellm

        import logging

        # litellm logs every call at INFO; with `--log-cli-level=INFO` (agent step progress) that is noise.
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
            logging.getLogger(name).setLevel(logging.WARNING)
        litellm.telemetry = False
        litellm.drop_params = True
        litellm.suppress_debug_info = True
        from ._local_model import register_local_provider

        register_local_provider(litellm)
        _litellm = litellm
    return _litellm


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    max_attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    #: Cap on the sum of all waits for one call; past it the call fails.
    max_total_wait: float = 300.0
    timeout: float = 600.0


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
    """A model call failed for good (after retries, or not retryable)."""

    def __init__(self, model: str, message: str, *, attempts: int, status: int | None = None) -> None:
        self.model = model
        self.status = status
        self.attempts = attempts
        status_text = f" (HTTP {status})" if status else ""
        super().__init__(f"model {model!r} failed after {attempts} attempt(s){status_text}: {message}")


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


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


def _is_retryable(exc: BaseException) -> bool:
    name = type(exc).__name__
    if name in {"AuthenticationError", "PermissionDeniedError", "NotFoundError", "BadRequestError",
                "ContextWindowExceededError", "ContentPolicyViolationError", "UnsupportedParamsError"}:
        return False
    if name in {"Timeout", "APITimeoutError", "APIConnectionError", "RateLimitError",
                "ServiceUnavailableError", "InternalServerError", "BadGatewayError", "APIError",
                "TimeoutError", "JSONDecodeError"}:
        return True
    status = _status_of(exc)
    return status in _RETRYABLE_STATUS if status is not None else isinstance(exc, (OSError, asyncio.TimeoutError))


def _message_text(message: Any) -> tuple[str, list[dict[str, Any]]]:
    """The reply as the model wrote it, plus tool calls.

    litellm moves ``<think>`` blocks of some providers into ``reasoning_content``;
    we put them back so reasoning stripping is ours to do (and to turn off).
    """
    content = getattr(message, "content", None) or ""
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    reasoning = getattr(message, "reasoning_content", None)
    if reasoning and "<think>" not in content.lower():
        content = f"<think>{reasoning}</think>{content}"
    calls = []
    for call in getattr(message, "tool_calls", None) or []:
        fn = getattr(call, "function", None)
        calls.append({
            "id": getattr(call, "id", None), "type": "function",
            "function": {"name": getattr(fn, "name", None), "arguments": getattr(fn, "arguments", None)},
        })
    return content, calls


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
    ) -> Completion:
        key = self.key(messages, params, sample=sample, tools=tools, response_format=response_format)
        if self.cache is not None:
            entry = self.cache.get(key)
            if entry is not None and "response" in entry:
                self.stats.cache_hits += 1
                return self._completion(entry["response"]["raw_text"], entry["response"], cached=True)
        entry = await self._call_with_retries(messages, params, tools=tools, response_format=response_format)
        if self.cache is not None:
            self.cache.put(key, {
                "model": self.model, "messages": list(messages), "params": params.litellm_kwargs(),
                "sample": sample, "tools": list(tools), "response_format": response_format, "response": entry,
            })
        return self._completion(entry["raw_text"], entry, cached=False)

    async def _call_with_retries(self, messages, params, *, tools, response_format) -> dict[str, Any]:
        litellm = import_litellm()
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
        waited = 0.0
        attempt = 0
        while True:
            attempt += 1
            self.stats.calls += 1
            start = time.perf_counter()
            try:
                call = litellm.acompletion(
                    model=self.model, messages=list(messages), num_retries=0, max_retries=0,
                    timeout=self.retry.timeout, **kwargs,
                )
                if self.limiter is not None:
                    async with self.limiter:
                        start = time.perf_counter()
                        response = await asyncio.wait_for(call, timeout=self.retry.timeout + 5)
                else:
                    response = await asyncio.wait_for(call, timeout=self.retry.timeout + 5)
                latency = time.perf_counter() - start
                choice = response.choices[0]
                raw, calls = _message_text(choice.message)
                usage = getattr(response, "usage", None)
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
            except Exception as exc:
                message = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else type(exc).__name__
                if type(exc).__name__ not in message:
                    message = f"{type(exc).__name__}: {message}"
                if not _is_retryable(exc) or attempt >= self.retry.max_attempts:
                    self.stats.failures += 1
                    raise ModelCallError(self.model, message,
                                         attempts=attempt, status=_status_of(exc)) from None
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
                        attempts=attempt, status=_status_of(exc),
                    ) from None
                self.stats.retries += 1
                waited += delay
                await asyncio.sleep(delay)
