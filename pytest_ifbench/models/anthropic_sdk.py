"""Anthropic's models through the ``anthropic`` SDK: ``anthropic/claude-sonnet-4-5``, or the bare name.

Served here (:func:`sdk_route`): an ``anthropic/`` model string, or a bare name litellm's price
table files under Anthropic, when the ``anthropic`` package is installed, a key is known
(``ANTHROPIC_API_KEY``, or ``api_key`` in the client's keyword arguments, the only one allowed) and
``PYTEST_IFBENCH_LITELLM_ONLY`` is unset; otherwise litellm serves it as before. The endpoint is the
run's ``--api-base`` when given (as litellm sends it there too; a trailing ``/v1`` is dropped, the
SDK adds it), else ``ANTHROPIC_API_BASE``, else the SDK's own (``ANTHROPIC_BASE_URL`` or Anthropic's).

The request and reply are translated by :mod:`.anthropic_messages`; retries, cache keys (the
model string and the OpenAI-style request, unchanged), redaction and the reply checks stay the
client's, and the cost is litellm's price for the usage (:mod:`.prices`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from .anthropic_messages import cache_breakpoints, reply_data, request_body, usage_of
from .openai_compat import LITELLM_ONLY_ENV, reply_tree
from .prices import context_window, cost_of, provider_of
from .provider_api import Provider
from .sdk_pool import SDKTransport, installed


def _key(extra: Mapping[str, Any]) -> str | None:
    return extra.get("api_key") or os.environ.get("ANTHROPIC_API_KEY")


def sdk_route(model: str, api_base: str | None, extra: Mapping[str, Any]) -> bool:
    """Whether the ``anthropic`` SDK serves ``model`` (see the module docstring)."""
    if os.environ.get(LITELLM_ONLY_ENV, "").strip() not in ("", "0") or set(extra) - {"api_key"}:
        return False
    return provider_of(model) == "anthropic" and bool(model.removeprefix("anthropic/")) \
        and bool(_key(extra)) and installed("anthropic")


def base_url(api_base: str | None) -> str | None:
    """The SDK's ``base_url`` for the run's endpoint (None: the SDK's default)."""
    url = api_base or os.environ.get("ANTHROPIC_API_BASE")
    if not url:
        return None
    url = url.rstrip("/").removesuffix("/v1/messages").removesuffix("/v1")
    return url or None


class AnthropicSDKTransport(SDKTransport):
    """``POST /v1/messages`` through an ``anthropic.AsyncAnthropic`` client on aiohttp."""

    def __init__(self, api_base: str | None, extra: Mapping[str, Any]) -> None:
        super().__init__()
        self.base_url = base_url(api_base)
        self._api_key = _key(extra)

    def sdk_module(self) -> Any:
        import anthropic

        return anthropic

    def new_client(self, http_client: Any) -> Any:
        from anthropic import AsyncAnthropic

        return AsyncAnthropic(api_key=self._api_key, base_url=self.base_url, max_retries=0, http_client=http_client)

    async def acompletion(self, *, model: str, messages: Sequence[Mapping[str, Any]], timeout: float,
                          **params: Any) -> Any:
        name = model.removeprefix("anthropic/")
        data = json.loads(await self.sent("/v1/messages", request_body(name, messages, params), timeout))
        reply = reply_tree(reply_data(data))
        reply.cost = cost_of(name, usage_of(data.get("usage")))
        return reply


def _transport(model: str, api_base: str | None, extra: Mapping[str, Any]) -> AnthropicSDKTransport:
    return AnthropicSDKTransport(api_base, extra)


#: Anthropic's models through the ``anthropic`` SDK (asked before litellm).
PROVIDER = Provider(name="anthropic", serves_when=sdk_route, transport=_transport, needs_litellm=False,
                    cache_breakpoints=cache_breakpoints, context_window=context_window)
