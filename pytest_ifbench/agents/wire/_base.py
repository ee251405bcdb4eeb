"""What a wire format is: the contract between the recording proxy and one HTTP dialect of model APIs.

The proxy (:mod:`..proxy`) knows no dialect. For every ``POST`` it finds the wire format that claims the
path (:attr:`WireFormat.paths`), asks it to translate the body into :meth:`ModelClient.complete`
arguments (:class:`Translated`), makes the call, turns the completion into the *recorded message* -- a
Messages-format ``message``, the one shape the raw log and :func:`~..normalize.normalize` know -- and
asks the wire format to render that message in its own dialect (:meth:`WireFormat.render`).

So every dialect records the same trajectory shape: a format's :meth:`WireFormat.record` gives its
request as a Messages-format request body (the identity for Anthropic Messages), and the response is
always the recorded message. Paths a format answers without a model call (token counting) are its
:attr:`WireFormat.helpers`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..._types import GenerationParams

__all__ = ["RequestError", "Translated", "WireFormat"]


class RequestError(ValueError):
    """A request the proxy cannot translate (the CLI gets a 400 with this message)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Translated:
    """A request as :meth:`ModelClient.complete` arguments, plus what was left out."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    params: GenerationParams
    stream: bool
    model: str
    notes: tuple[str, ...] = field(default=())
    #: Dialect-specific rendering wishes (e.g. OpenAI's ``stream_options.include_usage``).
    extra: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class WireFormat(Protocol):
    """One HTTP dialect the proxy can serve. Stateless; every method is pure (no I/O)."""

    #: The name CLIs declare (:attr:`~..clis.AgentCli.wire`), e.g. ``"anthropic_messages"``.
    name: str
    #: ``POST`` paths answered with a model call (query strings and a trailing ``/`` are ignored).
    paths: tuple[str, ...]
    #: ``POST`` paths answered without a model call and not recorded: path -> body -> JSON answer.
    helpers: Mapping[str, Callable[[Mapping[str, Any]], dict[str, Any]]]

    def translate(self, body: Mapping[str, Any], *, defaults: GenerationParams,
                  max_tokens_cap: int | None) -> Translated:
        """The request as model-call arguments; :class:`RequestError` when it is not a valid request."""
        ...

    def record(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The request as the raw log records it: a Messages-format request body."""
        ...

    def render(self, message: Mapping[str, Any], translated: Translated) -> tuple[dict[str, str], bytes]:
        """Headers and body of the 200 answer carrying the recorded ``message`` in this dialect
        (an event stream when ``translated.stream``)."""
        ...

    def error(self, status: int, message: str) -> dict[str, Any]:
        """This dialect's error object for HTTP ``status``."""
        ...
