"""The Anthropic Messages wire format (``POST /v1/messages``): :data:`ANTHROPIC_MESSAGES`.

The recording proxy (:mod:`..proxy`) answers agent CLIs such as Claude Code, Kilo and Droid in the
Messages format and calls any litellm model; this module is the pure translation, both ways, with no
I/O. Its message (:func:`message_from_completion`) is also what the raw log records for *every* wire
format (see :mod:`._base`).

Request (:func:`translate_request`) -> OpenAI chat messages, function tools and
:class:`~pytest_ifbench._types.GenerationParams`:

- ``system`` (a string or text blocks) -> one leading system message; a ``system`` message inside
  ``messages`` stays a system message at its place.
- user blocks: ``text``, ``image`` (base64 or URL) and ``document`` (an OpenAI ``file`` part,
  :func:`.documents.file_part`; the proxy then passes it or its text, :func:`.documents.adapt`) -> content
  parts (one text part -> a plain string); each ``tool_result`` -> a ``tool`` message (``tool_call_id``;
  the text of its blocks, its images and documents moved to the user message that follows with a line
  saying so; ``is_error`` has no OpenAI counterpart and is not carried), placed before the user's other
  parts because OpenAI wants tool messages right after the calls. A block of another type becomes a line
  saying it was there and is not passed (and a note): nothing is dropped silently.
  ``cache_control`` marks are transport hints and are left out everywhere.
- assistant blocks: ``text`` -> content, ``tool_use`` -> ``tool_calls`` (``arguments`` a JSON string),
  ``thinking``/``redacted_thinking`` -> dropped (a note says so: reasoning is not replayed to the model).
- ``tools`` with an ``input_schema`` -> OpenAI function tools; server tools (no schema) are dropped.
- ``max_tokens`` (at most ``max_tokens_cap``), ``temperature``, ``top_p``, ``stop_sequences`` ->
  params, the caller's defaults where absent; ``top_k``, ``thinking``, ``tool_choice``, ``metadata`` and
  other keys the model call cannot carry are dropped, each with a note.

Response (:func:`message_from_completion`): a ``message`` whose blocks are ``thinking`` (the
completion's reasoning, empty signature), ``text`` and one ``tool_use`` per tool call, ``stop_reason``
``tool_use`` when there are calls, else from the finish reason (``length`` -> ``max_tokens``, otherwise
``end_turn``). Tool-use ids are derived from the request and the call's position, so a repeated run asks
the (cached) model the very same follow-up requests. :func:`sse_stream` renders a message as the
event stream a ``"stream": true`` request gets.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..._types import GenerationParams
from ._base import RequestError, Translated
from .documents import file_part

if TYPE_CHECKING:
    from ...models.client import Completion

__all__ = ["ANTHROPIC_MESSAGES", "AnthropicMessages", "RequestError", "Translated", "error_body", "estimate_tokens",
           "message_from_completion", "sse_stream", "translate_request"]

#: Request keys that map onto the model call; every other key is dropped with a note.
_USED_KEYS = frozenset({"model", "messages", "system", "tools", "max_tokens", "temperature", "top_p",
                        "stop_sequences", "stream"})
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
                529: "overloaded_error"}


def _text_blocks(content: Any, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise RequestError(f"{where} must be a string or a list of blocks")
    return "\n\n".join(str(b.get("text") or "") for b in content if isinstance(b, Mapping) and b.get("type") == "text")


def _image_part(block: Mapping[str, Any]) -> dict[str, Any]:
    source = block.get("source") or {}
    if source.get("type") == "base64":
        url = f"data:{source.get('media_type') or 'image/png'};base64,{source.get('data') or ''}"
    elif source.get("type") == "url":
        url = str(source.get("url") or "")
    else:
        raise RequestError(f"unsupported image source type {source.get('type')!r}")
    return {"type": "image_url", "image_url": {"url": url}}


def _blocks(content: Any, where: str) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not all(isinstance(b, Mapping | str) for b in content):
        raise RequestError(f"{where}.content must be a string or a list of blocks")
    return [{"type": "text", "text": b} if isinstance(b, str) else b for b in content]


def _not_passed(kind: Any, notes: set[str]) -> str:
    """The line standing for a block the model call cannot carry (never dropped silently), and its note."""
    notes.add(f"user blocks of type {kind!r} are not passed to the model (a line in the message says so)")
    return f"[a {kind} block was here; the ifbench proxy cannot pass it to the model]"


def _user(blocks: list[Mapping[str, Any]], where: str, notes: set[str]) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for n, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "text":
            if block.get("text"):
                parts.append({"type": "text", "text": str(block["text"])})
        elif kind == "image":
            parts.append(_image_part(block))
        elif kind == "document":
            parts.append(file_part(block))
        elif kind == "tool_result":
            inner = _blocks(block.get("content") or "", f"{where}[{n}]")
            texts = []
            for item in inner:
                if item.get("type") == "text":
                    texts.append(str(item.get("text") or ""))
                elif item.get("type") in ("image", "document"):
                    parts.append(_image_part(item) if item.get("type") == "image" else file_part(item))
                    texts.append(f"[{'an image' if item.get('type') == 'image' else 'a document'}: it follows "
                                 "in the next user message]")
                    notes.add(f"{item.get('type')}s in tool results are passed in the next user message")
                else:
                    texts.append(_not_passed(item.get("type"), notes))
            tools.append({"role": "tool", "tool_call_id": str(block.get("tool_use_id") or ""),
                          "content": "\n\n".join(texts)})
        else:
            parts.append({"type": "text", "text": _not_passed(kind, notes)})
    if parts and all(p["type"] == "text" for p in parts) and len(parts) == 1:
        return [*tools, {"role": "user", "content": parts[0]["text"]}]
    return [*tools, *([{"role": "user", "content": parts}] if parts else [])]


def _assistant(blocks: list[Mapping[str, Any]], notes: set[str]) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            if block.get("text"):
                texts.append(str(block["text"]))
        elif kind == "tool_use":
            calls.append({"id": str(block.get("id") or ""), "type": "function", "function": {
                "name": str(block.get("name") or ""),
                "arguments": json.dumps(block.get("input") or {}, ensure_ascii=False)}})
        elif kind in ("thinking", "redacted_thinking"):
            notes.add("thinking blocks of earlier replies are not sent back to the model")
        else:
            notes.add(f"assistant blocks of type {kind!r} are not passed to the model")
    message: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) or (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    return message


def translate_request(body: Mapping[str, Any], *, defaults: GenerationParams = GenerationParams(),
                      max_tokens_cap: int | None = None) -> Translated:
    """A Messages request body as ``ModelClient.complete`` arguments (see the module doc);
    :class:`RequestError` when it is not a valid request."""
    if not isinstance(body.get("messages"), list):
        raise RequestError('the request needs a "messages" list')
    notes: set[str] = {f"request field {key!r} is not passed to the model" for key in body if key not in _USED_KEYS}
    messages: list[dict[str, Any]] = []
    system = _text_blocks(body.get("system"), "system")
    if system:
        messages.append({"role": "system", "content": system})
    for n, message in enumerate(body["messages"]):
        where = f"messages[{n}]"
        if not isinstance(message, Mapping):
            raise RequestError(f"{where} must be an object")
        role = message.get("role")
        blocks = _blocks(message.get("content"), where)
        if role == "user":
            messages += _user(blocks, where, notes)
        elif role == "assistant":
            messages.append(_assistant(blocks, notes))
        elif role == "system":
            messages.append({"role": "system", "content": _text_blocks(message.get("content"), where)})
        else:
            raise RequestError(f"{where}.role must be user, assistant or system, not {role!r}")
    tools: list[dict[str, Any]] = []
    for tool in body.get("tools") or ():
        if isinstance(tool, Mapping) and isinstance(tool.get("name"), str) and "input_schema" in tool:
            tools.append({"type": "function", "function": {"name": tool["name"],
                          "description": str(tool.get("description") or ""), "parameters": tool["input_schema"]}})
        else:
            notes.add("server tools (no input_schema) are not passed to the model")
    max_tokens = body.get("max_tokens", defaults.max_tokens)
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise RequestError("max_tokens must be a positive integer")
    if max_tokens_cap is not None and max_tokens > max_tokens_cap:
        max_tokens = max_tokens_cap
        notes.add(f"max_tokens is capped at {max_tokens_cap}")
    stop = body.get("stop_sequences") or ()
    params = GenerationParams(
        temperature=body.get("temperature", defaults.temperature), max_tokens=max_tokens,
        top_p=body.get("top_p", defaults.top_p), seed=defaults.seed,
        stop=tuple(str(s) for s in stop) if isinstance(stop, list) else ())
    return Translated(messages=messages, tools=tools, params=params, stream=body.get("stream") is True,
                      model=str(body.get("model") or ""), notes=tuple(sorted(notes)))


def _stop_reason(completion: Completion) -> str:
    if completion.tool_calls:
        return "tool_use"
    return {"length": "max_tokens", "content_filter": "refusal"}.get(completion.finish_reason or "", "end_turn")


def _tool_input(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, Mapping):
        return dict(arguments)
    try:
        value = json.loads(arguments or "{}")
    except (TypeError, ValueError):
        return {}  # the CLI then reports the missing arguments to the model as a tool error
    return value if isinstance(value, dict) else {}


def message_from_completion(completion: Completion, translated: Translated) -> dict[str, Any]:
    """The Messages-format ``message`` answering ``translated`` with ``completion`` (see the module doc)."""
    seed = hashlib.sha256(json.dumps([translated.messages, translated.tools], sort_keys=True,
                                     ensure_ascii=False, default=str).encode()).hexdigest()
    content: list[dict[str, Any]] = []
    if completion.reasoning:
        content.append({"type": "thinking", "thinking": completion.reasoning, "signature": ""})
    if completion.text:
        content.append({"type": "text", "text": completion.text})
    for i, call in enumerate(completion.tool_calls):
        function = call.get("function") or {}
        ident = hashlib.sha256(f"{seed}:{i}".encode()).hexdigest()[:24]
        content.append({"type": "tool_use", "id": f"toolu_{ident}", "name": str(function.get("name") or ""),
                        "input": _tool_input(function.get("arguments"))})
    return {"id": f"msg_{seed[:24]}", "type": "message", "role": "assistant", "model": translated.model,
            "content": content, "stop_reason": _stop_reason(completion), "stop_sequence": None,
            "usage": {"input_tokens": completion.prompt_tokens, "output_tokens": completion.completion_tokens}}


def _event(kind: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data}, ensure_ascii=False)}\n\n".encode()


def sse_stream(message: Mapping[str, Any]) -> bytes:
    """``message`` as a Messages event stream: ``message_start``, one block start/delta/stop run per
    content block (``text_delta``, ``thinking_delta`` + ``signature_delta``, ``input_json_delta``),
    ``message_delta`` with the stop reason and output tokens, ``message_stop``."""
    usage = message["usage"]
    head = {**message, "content": [], "stop_reason": None,
            "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 0}}
    out = [_event("message_start", {"message": head})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            start, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": block["text"]}]
        elif block["type"] == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"]},
                      {"type": "signature_delta", "signature": block.get("signature") or ""}]
        else:
            start = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"], ensure_ascii=False)}]
        out.append(_event("content_block_start", {"index": index, "content_block": start}))
        out += [_event("content_block_delta", {"index": index, "delta": delta}) for delta in deltas]
        out.append(_event("content_block_stop", {"index": index}))
    out.append(_event("message_delta", {"delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                        "usage": {"output_tokens": usage["output_tokens"]}}))
    out.append(_event("message_stop", {}))
    return b"".join(out)


def error_body(status: int, message: str) -> dict[str, Any]:
    """A Messages-format error object for HTTP ``status``."""
    kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def estimate_tokens(body: Mapping[str, Any]) -> int:
    """A rough input-token count for ``count_tokens``: one token per 4 characters of the JSON of the
    request's ``system``, ``messages`` and ``tools`` (no tokenizer, no model call; clients use it only
    to decide when to compact a long conversation)."""
    parts: Sequence[Any] = [body.get("system") or "", body.get("messages") or [], body.get("tools") or []]
    return max(1, math.ceil(len(json.dumps(parts, ensure_ascii=False)) / 4))


class AnthropicMessages:
    """The Messages dialect as a :class:`~._base.WireFormat`; the raw log's own shape, so
    :meth:`record` is the identity."""

    __slots__ = ()
    name = "anthropic_messages"
    paths = ("/v1/messages",)
    helpers = {"/v1/messages/count_tokens": lambda body: {"input_tokens": estimate_tokens(body)}}

    def translate(self, body: Mapping[str, Any], *, defaults: GenerationParams,
                  max_tokens_cap: int | None) -> Translated:
        return translate_request(body, defaults=defaults, max_tokens_cap=max_tokens_cap)

    def record(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return dict(body)

    def render(self, message: Mapping[str, Any], translated: Translated) -> tuple[dict[str, str], bytes]:
        if translated.stream:
            return {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}, sse_stream(message)
        return {"Content-Type": "application/json"}, json.dumps(message, ensure_ascii=False).encode()

    def error(self, status: int, message: str) -> dict[str, Any]:
        return error_body(status, message)


#: The Messages wire format (Claude Code, Kilo's and Droid's ``anthropic`` providers).
ANTHROPIC_MESSAGES = AnthropicMessages()
