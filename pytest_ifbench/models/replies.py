"""Reading a provider's reply: the checks that make an unusable reply a named :class:`MalformedReply`.

Both routes end here -- the direct path's reply tree (:mod:`.openai_compat`) and litellm's response
objects -- so a reply is accepted or refused the same way whichever sent it: no choices, a choice
without a message, null content with neither tool calls nor reasoning, content that is not text (a
number, a boolean, an object, a list with a part that is not text), a body that is not JSON. Each is
retried by :class:`~.client.ModelClient` like a 5xx, then ends the call with its name.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: litellm's words for a message whose content it could not take as a string.
_LITELLM_CONTENT = re.compile(r"validation errors? for Message\s+content\b[^\n]*\n[^\n]*input_type=(\w+)")


class MalformedReply(Exception):
    """The provider answered, but with no usable completion; retried like a 5xx.

    The message names what was wrong ("the provider returned no choices"), never the body.
    """


def checked_reply(response: Any) -> tuple[Any, str, list[dict[str, Any]], Any]:
    """(choice, text, tool calls, usage) of a reply, or :class:`MalformedReply`.

    A message with null content is valid with tool calls (a tool-call answer) or reasoning
    (the model thought until ``max_tokens``); without either it is no answer at all.
    """
    choices = getattr(response, "choices", None)
    if not choices:
        raise MalformedReply("the provider returned no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise MalformedReply("the provider returned a choice without a message")
    raw, calls = _message_text(message)
    reasoning = getattr(message, "reasoning_content", None)
    if getattr(message, "content", None) is None and not calls and not (reasoning and isinstance(reasoning, str)):
        finish = getattr(choice, "finish_reason", None)
        raise MalformedReply(f"the provider returned null content and no tool calls (finish_reason: {finish})")
    # A reply without token usage is still a reply: some self-hosted servers never report usage, and
    # failing every call of theirs would lose good answers. Its tokens are recorded as 0.
    usage = getattr(response, "usage", None)
    return choice, raw, calls, usage


def as_malformed(exc: BaseException) -> BaseException:
    """litellm's errors for replies it could not read, as named :class:`MalformedReply` errors
    (litellm reports them as HTTP 500; a provider's own 4xx stays what it is)."""
    if status_of(exc) not in (None, 200, 500):
        return exc
    causes = []
    cause: BaseException | None = exc
    while cause is not None and len(causes) < 10:
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    if any(isinstance(c, json.JSONDecodeError) for c in causes):
        return MalformedReply("the provider returned a body that is not JSON")
    text = str(exc)
    if "provider returned 'choices' that is not a list" in text:
        return MalformedReply("the provider returned no choices ('choices' is not a list)")
    if "Invalid response object" in text:  # its text ends with the reply it received, as a Python repr
        if "'message': None" in text:
            return MalformedReply("the provider returned a choice without a message")
        not_text = _LITELLM_CONTENT.search(text)
        if not_text:  # pydantic's "validation error for Message / content / ... input_type=int"
            return MalformedReply(f"{NOT_TEXT} ({not_text.group(1)})")
        inner = causes[-1]
        detail = (str(inner).strip().splitlines() or [""])[0][:200]
        return MalformedReply(f"the provider returned a reply litellm cannot read ({type(inner).__name__}: {detail})")
    return exc


def status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


#: What every reply whose content is not text is reported as (the litellm path words it the same).
NOT_TEXT = "the provider returned content that is not text"


def _content_text(content: Any) -> str:
    """The message content as text: a string, null (no text), or a list of text parts joined;
    anything else (a number, a boolean, an object, a part that is not text) is a :class:`MalformedReply`."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise MalformedReply(f"{NOT_TEXT} ({type(content).__name__})")
    texts = []
    for part in content:
        text = part.get("text") if isinstance(part, dict) and part.get("type", "text") == "text" else None
        if not isinstance(text, str):
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise MalformedReply(f"{NOT_TEXT} (a list with a part of type {str(kind)[:40]!r})")
        texts.append(text)
    return "".join(texts)


def _message_text(message: Any) -> tuple[str, list[dict[str, Any]]]:
    """The reply as the model wrote it, plus tool calls.

    litellm moves ``<think>`` blocks of some providers into ``reasoning_content``;
    we put them back so reasoning stripping is ours to do (and to turn off).
    """
    content = _content_text(getattr(message, "content", None))
    reasoning = getattr(message, "reasoning_content", None)
    if reasoning and isinstance(reasoning, str) and "<think>" not in content.lower():
        content = f"<think>{reasoning}</think>{content}"
    calls = []
    for call in getattr(message, "tool_calls", None) or []:
        fn = getattr(call, "function", None)
        calls.append({
            "id": getattr(call, "id", None), "type": "function",
            "function": {"name": getattr(fn, "name", None), "arguments": getattr(fn, "arguments", None)},
        })
    return content, calls
