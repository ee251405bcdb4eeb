"""The provider table, and :func:`make_client`: the one way a :class:`ModelClient` is built from a model string.

Which provider serves a model string is decided here and nowhere else. The table asks, in order:
the providers added through the ``pytest_ifbench_model_providers`` hook (in the order added), then
the built-ins -- the embedded model (``local/``, :mod:`.local`), recorded responses
(:mod:`.recorded`), the direct path to OpenAI-compatible servers (:mod:`.openai_compat`, when
:func:`~.openai_compat.direct_route` allows it), OpenAI's and Anthropic's models through their SDKs
(:mod:`.openai_sdk`, :mod:`.anthropic_sdk`) -- and last, for everything else, litellm. The
provider found builds the client's transport, answers the availability check before a run calls
the model, sets the run's concurrency at ``--ifbench-concurrency=0`` (auto), and says whether the
run should start importing litellm early.

Every way of naming an OpenAI-compatible endpoint reaches the same provider: ``--api-base``, or for
OpenAI's models (``openai/...``, bare names litellm files under OpenAI) ``OPENAI_BASE_URL`` /
``OPENAI_API_BASE`` -- the variables litellm reads, in its order -- resolved here (:func:`endpoint`)
before the table is asked, so a server named by the environment gets the direct path too.

Nothing here imports litellm, aiohttp or a provider SDK: a transport imports what it needs when it is called.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from . import anthropic_messages, anthropic_sdk, local, openai_compat, openai_sdk, recorded
from .breaker import Breakers
from .cache import ResponseCache
from .client import ModelClient, RetryPolicy
from .prices import context_window, provider_of
from .provider_api import Provider
from .spending import Ledger


def _litellm_cache_breakpoints(model: str) -> tuple[Mapping[str, Any], ...]:
    """Anthropic's models through litellm get the marks the ``anthropic`` SDK route gives them."""
    return anthropic_messages.CACHE_POINTS if provider_of(model) == "anthropic" else ()


#: The default: litellm serves every model string no other provider takes (its code is in :mod:`.client`).
LITELLM = Provider(name="litellm", serves_when=lambda model, api_base, extra: True,
                   cache_breakpoints=_litellm_cache_breakpoints, context_window=context_window)
#: The built-in providers before the default, in the order they are asked.
BUILTIN: tuple[Provider, ...] = (local.PROVIDER, recorded.PROVIDER, openai_compat.PROVIDER, openai_sdk.PROVIDER,
                                 anthropic_sdk.PROVIDER)
#: The environment variables that name OpenAI's endpoint, in the order litellm reads them.
OPENAI_BASE_ENV = ("OPENAI_BASE_URL", "OPENAI_API_BASE")


def endpoint(model: str, api_base: str | None) -> str | None:
    """The endpoint ``model`` is called at: ``api_base`` (``--api-base``), else for OpenAI's models the
    first of :data:`OPENAI_BASE_ENV` that is set, else None (the provider's own)."""
    if api_base:
        return api_base
    if model.startswith("openai/") or ("/" not in model and provider_of(model) == "openai"):
        for name in OPENAI_BASE_ENV:
            value = os.environ.get(name, "").strip()
            if value:
                return value
    return None


class ProviderTable:
    """The providers of a run, in the order they are asked; litellm always last (``trylast``)."""

    __slots__ = ("_added",)

    def __init__(self, providers: Iterable[Provider] = ()) -> None:
        self._added: list[Provider] = []
        for provider in providers:
            self.add(provider)

    @classmethod
    def from_hook(cls, hook: Any) -> ProviderTable:
        """The built-ins plus every plugin's ``pytest_ifbench_model_providers`` (historic: later
        plugins, e.g. a conftest, add theirs too)."""
        table = cls()
        hook.pytest_ifbench_model_providers.call_historic(kwargs={"providers": table})
        return table

    def add(self, provider: Provider) -> None:
        """Ask ``provider`` before the built-ins (and after those added earlier)."""
        if not isinstance(provider, Provider):
            raise TypeError(f"model providers are Provider declarations, not {type(provider).__name__}")
        if provider.name in {p.name for p in self}:
            raise ValueError(f"model provider {provider.name!r} is already registered")
        self._added.append(provider)

    def __iter__(self) -> Iterator[Provider]:
        yield from self._added
        yield from BUILTIN
        yield LITELLM

    def for_model(self, model: str, api_base: str | None = None,
                  extra: Mapping[str, Any] | None = None) -> Provider:
        """The provider that serves ``model`` (with the run's ``--api-base``, or the endpoint the
        environment names: :func:`endpoint`)."""
        api_base = endpoint(model, api_base)
        if extra is None:
            extra = openai_compat.self_hosted_key(model, api_base)
        return next(p for p in self if p.serves(model, api_base, extra))

    def unavailable(self, models: Iterable[str], api_base: str | None = None) -> tuple[str, Provider, str] | None:
        """``(model, provider, problem)`` for the first of ``models`` whose provider cannot run here;
        each provider is asked once."""
        asked: set[str] = set()
        for model in models:
            provider = self.for_model(model, api_base)
            if provider.name in asked:
                continue
            asked.add(provider.name)
            problem = provider.problem()
            if problem:
                return model, provider, problem
        return None


#: The table of a caller that has no plugins to ask (never added to).
_BUILTIN_TABLE = ProviderTable()


def make_client(model: str, *, api_base: str | None = None, cache: ResponseCache | None = None,
                retry: RetryPolicy = RetryPolicy(), strip_think: bool = True,
                extra: Mapping[str, Any] | None = None, providers: ProviderTable | None = None,
                breakers: Breakers | None = None, spending: Ledger | None = None) -> ModelClient:
    """The client for ``model``, built by the provider that serves it.

    ``api_base`` is the ``--api-base`` setting (a provider that does not use it, like the embedded
    model, does not get it; without it an OpenAI model gets ``OPENAI_BASE_URL``/``OPENAI_API_BASE``);
    ``extra`` is sent with every call (an ``openai/`` model on a server of one's own gets
    ``api_key="no-key"`` unless ``OPENAI_API_KEY`` is set); ``providers`` is the
    run's table (default: the built-ins only); ``breakers`` the run's circuit breakers (default: the
    client's own, see :mod:`.breaker`); ``spending`` the run's spending limit (see :mod:`.spending`; a
    provider whose calls are free is not given it).
    """
    table = _BUILTIN_TABLE if providers is None else providers
    api_base = endpoint(model, api_base)
    sent = openai_compat.self_hosted_key(model, api_base) | dict(extra or {})
    provider = table.for_model(model, api_base, sent)
    base = api_base if provider.uses_api_base else None
    transport = provider.transport(model, base, sent) if provider.transport is not None else None
    marks = tuple(provider.cache_breakpoints(model)) if provider.cache_breakpoints is not None else ()
    return ModelClient(model=model, api_base=base, cache=cache, retry=retry, strip_think=strip_think,
                       extra=sent, direct=transport, cache_breakpoints=marks,
                       spending=None if provider.free else spending,
                       revision=provider.revision(model) if provider.revision is not None else None,
                       **({"breakers": breakers} if breakers is not None else {}))


def chat_reply(data: Mapping[str, Any]) -> Any:
    """A reply for a :class:`~.provider_api.Transport` to return, from an OpenAI chat-completions
    response body as a mapping (``{"choices": [{"message": {...}, "finish_reason": ...}], "usage": {...}}``)."""
    return openai_compat.reply_tree(dict(data))
