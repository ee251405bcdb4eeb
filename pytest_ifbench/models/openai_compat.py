"""The direct path for OpenAI-compatible endpoints: one ``POST /chat/completions`` over aiohttp.

``openai/<name>`` with an ``--api-base`` (vLLM, llama.cpp server, SGLang, a proxy, the test stub) is
what litellm forwards unchanged: the same JSON body, the same bearer key. Sending that body
ourselves skips ``import litellm`` (~3 s, the largest part of a generation run's start-up) and its
per-call work (logging objects, pydantic response models, cost lookups), which at concurrency 64
is what bounds a 2-core machine.

The path is taken only where litellm would add nothing (:func:`direct_route`): the model has no
price in litellm's bundled price list (so litellm's cost is ``None`` too), is not one of the names
litellm rewrites requests for (o-series, gpt-5), and a key is known. Everything else, and every run
with ``PYTEST_IFBENCH_LITELLM_ONLY=1``, goes through litellm. Retries, cache keys, redaction and the
reply checks stay in :mod:`._client`; this module only turns HTTP into a reply object with the
attributes :mod:`._client` reads, or an error carrying the status, ``Retry-After`` and the
provider's message under the exception name litellm would have raised.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import weakref
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from .prices import is_priced
from .provider_api import Provider

#: Set to 1 to send every call through litellm, as before the direct path existed.
LITELLM_ONLY_ENV = "PYTEST_IFBENCH_LITELLM_ONLY"
#: Model names litellm rewrites requests for (``max_tokens`` -> ``max_completion_tokens``, dropped params).
REWRITTEN = re.compile(r"^(o\d|gpt-5|gpt-4\.5|computer-use)", re.IGNORECASE)
#: Keyword arguments the direct path sends as they are (litellm passes them unchanged to these servers).
BODY_PARAMS = frozenset({"temperature", "max_tokens", "top_p", "seed", "reasoning_effort", "stop", "tools",
                          "response_format"})
#: Finish reasons as litellm normalises them (its own map, reduced to what OpenAI-style servers send).
_FINISH = {"stop": "stop", "length": "length", "tool_calls": "tool_calls", "content_filter": "content_filter",
           "function_call": "function_call", "eos": "stop", "eos_token": "stop", "stop_sequence": "stop",
           "end_turn": "stop", "max_tokens": "length", "tool_use": "tool_calls"}
#: HTTP status -> the litellm exception name :mod:`._client` classifies errors by.
_STATUS_NAMES = {400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError",
                 404: "NotFoundError", 408: "Timeout", 409: "APIError", 422: "UnprocessableEntityError",
                 429: "RateLimitError", 500: "InternalServerError", 502: "BadGatewayError",
                 503: "ServiceUnavailableError"}
#: Seconds to establish a connection (at most the request timeout): a host that never answers the
#: connect is a connection failure for the circuit breaker (:mod:`.breaker`), not a slow reply.
CONNECT_TIMEOUT = 30.0
_CONTEXT = re.compile(r"context_length_exceeded|maximum context length|context length|too many tokens"
                      r"|prompt is too long",
                      re.IGNORECASE)


class ProviderError(Exception):
    """An HTTP or transport failure of the direct path, named as litellm names it (``kind``)."""

    def __init__(self, kind: str, message: str, *, status_code: int | None = None,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.status_code = status_code
        self.headers = dict(headers or {})


def direct_route(model: str, api_base: str | None, extra: Mapping[str, Any]) -> bool:
    """Whether ``model`` may skip litellm: see the module docstring for the conditions."""
    if os.environ.get(LITELLM_ONLY_ENV, "").strip() not in ("", "0"):
        return False
    if not api_base or not model.startswith("openai/") or set(extra) - {"api_key"}:
        return False
    name = model.removeprefix("openai/")
    if not name or REWRITTEN.match(name) or not _api_key(extra):
        return False
    return not is_priced(model)


def self_hosted_key(model: str, api_base: str | None) -> dict[str, Any]:
    """The client's ``extra`` for ``model``: ``api_key="no-key"`` for an ``openai/`` model on a server of
    one's own (``--api-base``) when no ``OPENAI_API_KEY`` is set -- such servers rarely need a key, and
    litellm refuses to call without one."""
    if api_base and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        return {"api_key": "no-key"}
    return {}


def _direct_transport(model: str, api_base: str | None, extra: Mapping[str, Any]) -> DirectTransport:
    assert api_base is not None  # direct_route needs one
    return DirectTransport(api_base, extra)


def _api_key(extra: Mapping[str, Any]) -> str | None:
    return extra.get("api_key") or os.environ.get("OPENAI_API_KEY")


class DirectTransport:
    """Sends chat completions to one OpenAI-compatible base URL over one pooled aiohttp session per loop.

    aiohttp (a litellm dependency, and litellm's own transport for these calls) rather than httpx:
    at 64 requests in flight httpx's connection pool costs several times more CPU per call.
    """

    def __init__(self, api_base: str, extra: Mapping[str, Any]) -> None:
        self.url = api_base.rstrip("/") + "/chat/completions"
        self._headers = {"Authorization": f"Bearer {_api_key(extra)}", "Content-Type": "application/json",
                         "Accept": "application/json"}
        #: (event loop, session): connections belong to one loop; another loop gets a new session.
        self._pool: tuple[asyncio.AbstractEventLoop, Any] | None = None

    def _session(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._pool is None or self._pool[0] is not loop or self._pool[1].closed:
            # limit=0: no cap of aiohttp's own; the run's concurrency limiter is the only one
            self._pool = (loop, aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), trust_env=True))
            _OPEN.add(self)
        return self._pool[1]

    async def aclose(self) -> None:
        """Close the pooled connections (called on the loop that made them, before it stops)."""
        pool = self._pool
        if pool is not None and pool[0] is asyncio.get_running_loop():
            self._pool = None
            _OPEN.discard(self)
            await pool[1].close()

    async def acompletion(self, *, model: str, messages: Sequence[Mapping[str, Any]], timeout: float,
                          **params: Any) -> SimpleNamespace:
        import aiohttp

        body: dict[str, Any] = {"messages": list(messages), "model": model.removeprefix("openai/")}
        body.update(sorted((k, v) for k, v in params.items() if k in BODY_PARAMS))
        connect = min(timeout, CONNECT_TIMEOUT)
        try:
            async with self._session().post(self.url, data=json.dumps(body).encode(), headers=self._headers,
                                            timeout=aiohttp.ClientTimeout(total=timeout, sock_connect=connect)
                                            ) as response:
                content = await response.read()
                status, headers, reason = response.status, response.headers, response.reason
        except aiohttp.ConnectionTimeoutError:  # the breaker finds it in the chain: a connection failure
            raise ProviderError("Timeout", f"connecting timed out after {connect:g}s", status_code=408) from None
        except (TimeoutError, aiohttp.ServerTimeoutError):
            raise ProviderError("Timeout", f"the request timed out after {timeout:g}s", status_code=408) from None
        except aiohttp.ClientError as exc:
            raise ProviderError("APIConnectionError", f"{type(exc).__name__}: {exc}".rstrip(": ")) from None
        if status >= 400:
            raise status_error(status, content, headers, reason)
        return reply_object(content)


#: The direct path in the provider table: litellm's own route, without litellm.
PROVIDER = Provider(name="openai-compatible", serves_when=direct_route, transport=_direct_transport,
                    needs_litellm=False)

#: Transports with a session open (this module's and the SDK providers'), so the loop that made the
#: sessions can close them before it stops.
_OPEN: weakref.WeakSet[Any] = weakref.WeakSet()


def track_open(transport: Any) -> None:
    """Have :func:`close_sessions` close ``transport`` (an object with ``async aclose()``) on its loop."""
    _OPEN.add(transport)


async def close_sessions() -> None:
    """Close every pooled session made on the running loop -- the direct path's and the SDK providers'
    (the background generator's shutdown). Public: code that calls clients on an event loop of its own
    (an ``asyncio.Runner`` of a generator) awaits it on that loop before closing it, or aiohttp warns
    of unclosed sessions at exit."""
    for transport in list(_OPEN):
        await transport.aclose()


def status_error(status: int, content: bytes, headers: Mapping[str, str], reason: str | None) -> ProviderError:
    message = content.decode("utf-8", "replace").strip() or (reason or "")
    try:
        error = json.loads(content).get("error")
        if isinstance(error, Mapping) and error.get("message"):
            message = str(error["message"])
        elif isinstance(error, str) and error:
            message = error
    except (ValueError, AttributeError):
        pass
    kind = _STATUS_NAMES.get(status, "APIError" if status >= 500 else "BadRequestError")
    if status == 400 and _CONTEXT.search(message):
        kind = "ContextWindowExceededError"
    return ProviderError(kind, f"Error code: {status} - {message}", status_code=status,
                         headers={k.lower(): v for k, v in headers.items()})


def reply_object(content: bytes) -> SimpleNamespace:
    """The reply body as the attribute tree :func:`.replies.checked_reply` reads (litellm's shape).

    Raises ``json.JSONDecodeError`` for a body that is not JSON and ``ValueError`` naming the field
    for one whose ``choices`` is not a list (both become :class:`.replies.MalformedReply`).
    """
    return reply_tree(json.loads(content))


def reply_tree(data: Any) -> SimpleNamespace:
    """:func:`reply_object` for a body already parsed (a provider's own transport may have the mapping)."""
    if not isinstance(data, dict):
        raise ValueError("provider returned 'choices' that is not a list")
    choices = data.get("choices")
    if not isinstance(choices, list):  # missing and null too, as litellm words it
        raise ValueError("provider returned 'choices' that is not a list")
    usage = data.get("usage")
    return SimpleNamespace(
        model=data.get("model"),
        choices=[_choice(c) for c in choices],
        usage=SimpleNamespace(prompt_tokens=usage.get("prompt_tokens"),
                              completion_tokens=usage.get("completion_tokens")) if isinstance(usage, dict) else None,
    )


def _choice(choice: Any) -> SimpleNamespace:
    if not isinstance(choice, dict):
        return SimpleNamespace(message=None, finish_reason=None)
    finish = choice.get("finish_reason")
    message = choice.get("message")
    if isinstance(message, dict):
        calls = [SimpleNamespace(id=c.get("id"), function=SimpleNamespace(**{
                     "name": (c.get("function") or {}).get("name"),
                     "arguments": (c.get("function") or {}).get("arguments")}))
                 for c in message.get("tool_calls") or [] if isinstance(c, dict)]
        message = SimpleNamespace(content=message.get("content"), tool_calls=calls or None,
                                  reasoning_content=message.get("reasoning_content") or message.get("reasoning"))
    else:
        message = None
    return SimpleNamespace(message=message, finish_reason=None if finish is None else _FINISH.get(finish, "stop"))
