"""What a model provider declares: :class:`Provider`, and the :class:`Transport` it may bring.

A provider is one way of reaching models: litellm (the default), the direct path to
OpenAI-compatible servers, the embedded llama.cpp model, a third party's own API. The
:class:`ModelClient <.client.ModelClient>` keeps retries, the response cache, reasoning
stripping and accounting for every provider alike; a provider only says which model strings
it serves, what sends the calls, whether it can run here and how many calls it wants in flight.
The table of providers and ``make_client`` are in :mod:`.providers`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, final


class Transport(Protocol):
    """Sends one chat completion; the client around it retries, caches and accounts.

    ``acompletion`` gets the model string, the messages, a timeout in seconds and the keyword
    arguments litellm would get (generation parameters, ``tools``, ``response_format``, the
    client's ``extra`` and ``api_base``; ignore what you do not use). It returns a reply shaped
    like an OpenAI chat-completions response -- ``choices[0].message.content`` /
    ``.tool_calls``, ``choices[0].finish_reason``, ``usage.prompt_tokens`` -- as attributes:
    :func:`pytest_ifbench.chat_reply` builds one from the response's JSON mapping; a reply may carry
    ``cost`` (USD, a float), which the client records as the call's cost. An error
    with an int ``status_code`` (and ``headers`` holding ``retry-after``) is retried like an HTTP
    error of that status; an ``OSError`` or ``TimeoutError`` is retried; anything else fails the
    call at once.
    """

    async def acompletion(self, *, model: str, messages: Sequence[Mapping[str, Any]], timeout: float,
                          **params: Any) -> Any: ...


def _no_problem() -> str | None:
    return None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Provider:
    """A model provider, as the provider table (:mod:`.providers`) consults it.

    The table asks each provider in turn whether it :meth:`serves` a model string (``prefix``,
    or the ``serves(model, api_base, extra)`` predicate for anything finer); the first that does
    builds the client's transport, answers the availability check before a run calls the model,
    and sets the run's concurrency when ``--ifbench-concurrency`` is left at auto.
    """

    #: Shown in messages and listings; unique within a table.
    name: str
    #: Serves every model string that starts with this (e.g. ``"myprov/"``).
    prefix: str | None = None
    #: Or: ``serves(model, api_base, extra) -> bool``, with the run's ``--api-base`` and the
    #: keyword arguments the client will send (e.g. ``api_key``).
    serves_when: Callable[[str, str | None, Mapping[str, Any]], bool] | None = None
    #: ``transport(model, api_base, extra) -> Transport``; None: the built-in path (litellm, or the
    #: direct path where :func:`.openai_compat.direct_route` allows it).
    transport: Callable[[str, str | None, Mapping[str, Any]], Transport] | None = None
    #: Why this provider cannot run here (a missing package, a missing key...), or None if it can.
    problem: Callable[[], str | None] = _no_problem
    #: What a run needs, for the message that stops it: ``<needed> but <problem>`` (``{model}``: the model).
    needed: str = "model {model!r} is needed"
    #: Calls in flight at once when ``--ifbench-concurrency`` is 0 (auto).
    concurrency: int = 16
    #: Whether its calls import litellm (the run then starts importing it early, in the background).
    needs_litellm: bool = True
    #: Whether the run's ``--api-base`` is passed on to its clients.
    uses_api_base: bool = True
    #: ``context_window(model) -> tokens`` where the provider knows it (None: unknown). A run checks it
    #: at start-up against what must fit (a real agent CLI's own prompt), instead of failing every call.
    context_window: Callable[[str], int | None] | None = None
    #: ``cache_breakpoints(model) -> points``: where a conversation that goes on after a call (an agent's
    #: steps) asks the provider to cache its prompt, as litellm's ``cache_control_injection_points``
    #: (which its transport then gets among the call's keyword arguments). None or empty: the provider
    #: caches prompts by itself (OpenAI) or not at all, and calls carry no marks.
    cache_breakpoints: Callable[[str], Sequence[Mapping[str, Any]]] | None = None
    #: Whether its calls cost nothing (a model run on this machine, recorded replies): the run's spending
    #: limit (``--ifbench-max-cost``) neither counts nor refuses them, and accepts its models unpriced.
    free: bool = False
    #: ``revision(model) -> str``: what its replies depend on besides the request (the embedded model: how
    #: it decodes). It enters the response cache's key of every call, so a new revision never reuses what
    #: an older one answered. None: the request alone decides (and the keys stay as they always were).
    revision: Callable[[str], str] | None = None

    def serves(self, model: str, api_base: str | None, extra: Mapping[str, Any]) -> bool:
        if self.prefix is not None and not model.startswith(self.prefix):
            return False
        if self.serves_when is not None:
            return self.serves_when(model, api_base, extra)
        return self.prefix is not None
