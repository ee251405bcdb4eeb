"""The seam between the HTTP server and the wire formats it speaks.

A *wire format* (:class:`WireFormat`) owns everything that depends on which API
the client believes it is talking to: which paths it serves, how a request body
is read (into a :class:`~pytest_ifbench.testing.script.ChatRequest`), and the
bytes of every answer (:class:`Payload`): completions, streams, model lists and
error bodies.  The HTTP handler (:mod:`.handler`) and the script
(:mod:`.script`) only deal in these neutral types, so a second format (the
Anthropic Messages API, say) is one more module beside :mod:`.openai_wire` and
one more entry in ``StubServer.wire_formats``.

Only the standard library is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .script import ChatRequest, Reply

__all__ = [
    "CHAT",
    "ENDPOINT_METHODS",
    "MODELS",
    "TOKENS",
    "Payload",
    "WireFormat",
    "content_text",
    "count_tokens",
    "last_user_text",
]

#: Endpoint kinds a format may serve.  The HTTP method each one answers to is
#: the same in every format (:data:`ENDPOINT_METHODS`); any other method on its
#: path gets a 404.
CHAT = "chat"
MODELS = "models"
TOKENS = "count_tokens"
ENDPOINT_METHODS = {CHAT: "POST", MODELS: "GET", TOKENS: "POST"}


@dataclass(frozen=True, slots=True)
class Payload:
    """An HTTP answer body with its ``Content-Type`` and any extra headers."""

    body: bytes
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)


class WireFormat(Protocol):
    """What the server needs from one API dialect.

    Every method returns bytes ready to send (:class:`Payload`); none of them
    sleeps, records or touches the server's state.
    """

    #: Short name, e.g. ``"openai"``.
    name: str

    def endpoint(self, path: str, headers: Mapping[str, str]) -> str | None:
        """:data:`CHAT`, :data:`MODELS`, :data:`TOKENS` or ``None`` for a normalised ``path``.

        ``headers`` (lower-cased keys) lets two formats that share a path tell
        their clients apart (Anthropic clients send ``anthropic-version``).
        """
        ...

    def chat_request(self, body: dict) -> ChatRequest:
        """The neutral view of a chat request body (a JSON object)."""
        ...

    def chat_response(self, request: ChatRequest, reply: Reply, seq: int) -> Payload:
        """The answer to ``request``: a complete object or, when
        ``request.stream``, the whole SSE stream.  ``seq`` is a server-wide
        counter for response ids.  May raise (a bad scripted reply); the server
        then answers 500."""
        ...

    def models_response(self) -> Payload:
        """The answer to a model-list request."""
        ...

    def tokens_response(self, body: dict) -> Payload:
        """The answer to a token-count request for a chat ``body``; only called
        for formats whose :meth:`endpoint` returns :data:`TOKENS`."""
        ...

    def error(self, status: int, message: str) -> Payload:
        """An error body for HTTP ``status`` in this format's shape."""
        ...

    def malformed(self, request: ChatRequest) -> Payload:
        """A 200 answer the client cannot parse (``Fault(kind="malformed")``)."""
        ...


# --------------------------------------------------------------------------- shared helpers
# OpenAI chat messages and Anthropic messages share this shape: a list of
# {"role", "content"} where content is a string or a list of typed parts.


def content_text(content: Any) -> str:
    """Text of a message ``content``: a string, or the text parts of a list joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str) and part.get("type", "text") in ("text", "input_text"):
                    parts.append(text)
        return "\n".join(parts)
    return str(content)


def last_user_text(body: dict | None) -> str:
    """Text of the last ``role == "user"`` message of a chat request body ("" if none)."""
    if not isinstance(body, dict):
        return ""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def count_tokens(text: str) -> int:
    """The stub's token count: whitespace-separated words, at least 1."""
    return max(1, len(text.split()))
