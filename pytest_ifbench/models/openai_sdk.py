"""OpenAI's models through the ``openai`` SDK: ``openai/gpt-4o-mini``, or the bare ``gpt-4o-mini``.

Served here (:func:`sdk_route`): a model litellm would send to OpenAI's chat completions unchanged --
an ``openai/`` model string, or a bare name litellm's price table files under OpenAI -- when an
OpenAI key is known, no keyword argument beyond ``api_key`` is sent, the name is not one litellm
rewrites requests for (o-series, gpt-5: they stay with litellm), and ``PYTEST_IFBENCH_LITELLM_ONLY``
is unset. With ``--api-base`` (or ``OPENAI_BASE_URL``/``OPENAI_API_BASE``) the SDK is pointed there;
unpriced models on such a server are the direct path's (:mod:`.openai_compat`), which the table asks
first.

The request body is the direct path's (the same keys, sent as they are); the reply is read by the
same code, and the cost is litellm's price for the usage (:mod:`.prices`), so a run through this
module records what a run through litellm recorded, under the same cache keys.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from .openai_compat import BODY_PARAMS, LITELLM_ONLY_ENV, REWRITTEN, reply_tree
from .prices import Usage, context_window, cost_of, provider_of
from .provider_api import Provider
from .sdk_pool import SDKTransport, installed


def _key(extra: Mapping[str, Any]) -> str | None:
    return extra.get("api_key") or os.environ.get("OPENAI_API_KEY")


def sdk_route(model: str, api_base: str | None, extra: Mapping[str, Any]) -> bool:
    """Whether the ``openai`` SDK serves ``model`` (see the module docstring)."""
    if os.environ.get(LITELLM_ONLY_ENV, "").strip() not in ("", "0") or set(extra) - {"api_key"}:
        return False
    if provider_of(model) != "openai" or not installed("openai"):
        return False
    name = model.removeprefix("openai/")
    return bool(name) and not REWRITTEN.match(name) and bool(_key(extra))


class OpenAISDKTransport(SDKTransport):
    """``POST /chat/completions`` through an ``openai.AsyncOpenAI`` client on aiohttp."""

    def __init__(self, api_base: str | None, extra: Mapping[str, Any]) -> None:
        super().__init__()
        self.api_base = api_base
        self._api_key = _key(extra)

    def sdk_module(self) -> Any:
        import openai

        return openai

    def new_client(self, http_client: Any) -> Any:
        from openai import AsyncOpenAI

        return AsyncOpenAI(api_key=self._api_key, base_url=self.api_base or None, max_retries=0,
                           http_client=http_client)

    async def acompletion(self, *, model: str, messages: Sequence[Mapping[str, Any]], timeout: float,
                          **params: Any) -> Any:
        body: dict[str, Any] = {"messages": list(messages), "model": model.removeprefix("openai/")}
        body.update(sorted((k, v) for k, v in params.items() if k in BODY_PARAMS))
        data = json.loads(await self.sent("/chat/completions", body, timeout))
        reply = reply_tree(data)
        reply.cost = cost_of(body["model"], _usage(data.get("usage")))
        return reply


def _usage(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(prompt=_count(usage.get("prompt_tokens")), completion=_count(usage.get("completion_tokens")),
                 cache_read=_count(cached))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def _transport(model: str, api_base: str | None, extra: Mapping[str, Any]) -> OpenAISDKTransport:
    return OpenAISDKTransport(api_base, extra)


#: OpenAI's models through the ``openai`` SDK (asked after the direct path, before litellm).
PROVIDER = Provider(name="openai", serves_when=sdk_route, transport=_transport, needs_litellm=False,
                    context_window=context_window)
