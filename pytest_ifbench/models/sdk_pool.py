"""What the provider-SDK transports (:mod:`.openai_sdk`, :mod:`.anthropic_sdk`) share.

* :class:`SDKTransport`: one SDK client per event loop (its aiohttp connections belong to the loop
  that opened them), closed by :func:`.openai_compat.close_sessions` before that loop stops. The
  client is built with the SDK's own retries off -- :class:`~.client.ModelClient` retries -- and
  the SDK's aiohttp transport (``DefaultAioHttpClient``: ~1.3 ms of CPU per call against ~9 ms with
  its default httpx pool), falling back to httpx when ``httpx-aiohttp`` is not installed.
* :meth:`SDKTransport.sent`: one ``POST`` through the client's low-level ``post``, cast to the
  SDK's HTTP response (``httpx.Response``; ``httpx2`` in newer ``anthropic`` releases), so the SDK
  neither walks the request through its typed-parameter transforms nor builds pydantic models of
  the reply: the body is read here, by the same code as the direct path's, and an unusable reply
  gets the same named error (:mod:`.replies`).
* :func:`provider_error`: the SDK's exceptions as the :class:`~.openai_compat.ProviderError` the
  direct path raises -- the same litellm exception names, ``Error code: <status> - <message>``
  text, status and ``Retry-After`` -- with the SDK's error kept in the chain, where the circuit
  breaker looks for connection failures.

The SDKs are imported by a transport's first call, never by importing this module.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from importlib.util import find_spec
from typing import Any

from .openai_compat import CONNECT_TIMEOUT, ProviderError, status_error, track_open


@functools.cache
def installed(package: str) -> bool:
    """Whether ``package`` can be imported (asked without importing it)."""
    return find_spec(package) is not None


class SDKTransport:
    """Base of the SDK transports: the per-loop client; subclasses build it (:meth:`new_client`)."""

    def __init__(self) -> None:
        #: (event loop, SDK client)
        self._pool: tuple[asyncio.AbstractEventLoop, Any] | None = None
        #: The SDK's HTTP library (set with the first client).
        self._http: Any = None

    def new_client(self, http_client: Any) -> Any:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def client(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._pool is None or self._pool[0] is not loop or self._pool[1].is_closed():
            self._http = self.http_module()
            self._pool = (loop, self.new_client(self._http_client()))
            track_open(self)
        return self._pool[1]

    def http_module(self) -> Any:
        """The HTTP library the SDK is built on (``httpx``; newer ``anthropic`` releases: ``httpx2``),
        found from the ``AsyncClient`` its ``DefaultAsyncHttpxClient`` extends."""
        import importlib

        base = next(c for c in self.sdk_module().DefaultAsyncHttpxClient.__mro__ if c.__name__ == "AsyncClient")
        return importlib.import_module(base.__module__.split(".")[0])

    def sdk_module(self) -> Any:  # pragma: no cover - every subclass overrides it
        """The SDK package (``openai``, ``anthropic``), imported."""
        raise NotImplementedError

    def _http_client(self) -> Any:
        timeout = self._http.Timeout(600.0, connect=CONNECT_TIMEOUT)
        try:
            return self.sdk_module().DefaultAioHttpClient(timeout=timeout)
        except (ImportError, RuntimeError, AttributeError):  # no aiohttp client: the SDK's default httpx pool
            return None

    async def aclose(self) -> None:
        """Close the client's connections (on the loop that made them, before it stops)."""
        pool = self._pool
        if pool is not None and pool[0] is asyncio.get_running_loop():
            self._pool = None
            await pool[1].close()

    async def sent(self, path: str, body: Mapping[str, Any], timeout: float) -> bytes:
        """POST ``body`` to ``path`` through this loop's client; the reply's bytes, or a :class:`ProviderError`."""
        client, http = self.client(), self._http
        try:
            response = await client.post(path, cast_to=http.Response, body=body, options={
                "timeout": http.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT))})
            return await response.aread()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            translated = provider_error(exc, timeout)
            if translated is None:
                raise
            raise translated from exc


def _named(exc: BaseException, name: str) -> bool:
    return any(kind.__name__ == name for kind in type(exc).__mro__)


def provider_error(exc: BaseException, timeout: float) -> ProviderError | None:
    """``exc`` (an ``openai``/``anthropic`` SDK error) as the direct path's error, or None if it is not one."""
    if _named(exc, "APIStatusError"):
        response = exc.response  # type: ignore[attr-defined]
        try:
            content = response.content
        except Exception:  # a body that was never read
            content = b""
        return status_error(response.status_code, content, response.headers, response.reason_phrase)
    if not _named(exc, "APIConnectionError"):  # (the SDKs' APITimeoutError is one too)
        return None
    # httpx-aiohttp reports a refused connection as httpx's ConnectTimeout, and the SDK then as a timeout:
    # the aiohttp error underneath says what happened, and is what the direct path reports.
    cause = _aiohttp_cause(exc)
    if cause is not None and not _named(cause, "ServerTimeoutError") and not _named(cause, "ConnectionTimeoutError"):
        return ProviderError("APIConnectionError", f"{type(cause).__name__}: {cause}".rstrip(": "))
    if cause is not None and _named(cause, "ConnectionTimeoutError"):
        connect = min(timeout, CONNECT_TIMEOUT)
        return ProviderError("Timeout", f"connecting timed out after {connect:g}s", status_code=408)
    if _named(exc, "APITimeoutError"):
        return ProviderError("Timeout", f"the request timed out after {timeout:g}s", status_code=408)
    inner = exc.__cause__ or exc.__context__
    detail = f"{type(inner).__name__}: {inner}".rstrip(": ") if inner is not None else str(exc)
    return ProviderError("APIConnectionError", detail)


def _aiohttp_cause(exc: BaseException) -> BaseException | None:
    """The first aiohttp error in ``exc``'s cause chain, if the SDK's aiohttp transport raised one."""
    seen = 0
    cause: BaseException | None = exc
    while cause is not None and seen < 12:
        if type(cause).__module__.startswith("aiohttp"):
            return cause
        seen += 1
        cause = cause.__cause__ or cause.__context__
    return None
