"""The OpenAI Chat Completions wire format (``POST /v1/chat/completions``): :data:`OPENAI_CHAT`.

For agent CLIs that speak Chat Completions (Codex-style CLIs, most open-source ones pointed at an
"OpenAI-compatible" base URL). Pure translation, no I/O; the proxy does the rest (:mod:`._base`).

Request (:meth:`OpenAIChat.translate`): the model call takes OpenAI chat messages already, so messages
pass through checked and cleaned -- ``system``/``developer`` -> ``system`` (text only); ``user`` text and
``image_url`` and ``file`` parts (one text part -> a plain string; the proxy fits images and files to the
target model, :func:`.documents.adapt`; another part becomes a line saying so, with a note); ``assistant``
``content`` and ``tool_calls`` (``arguments`` always a JSON string; ``reasoning_content`` is not sent
back, with a note, as thinking blocks are not on the Messages side); ``tool`` messages (their text).
``function`` tools pass; other tools are dropped with a note. ``max_completion_tokens`` (else
``max_tokens``; at most ``max_tokens_cap``), ``temperature``, ``top_p`` and ``stop`` become params, the
caller's defaults where absent; any other key is dropped with a note, as for Messages.

Record (:meth:`OpenAIChat.record`): the request as a Messages request, so the raw log and its
trajectories have one shape whatever the dialect -- leading system messages -> ``system``; user parts
-> ``text``/``image``/``document`` blocks; assistant ``tool_calls`` -> ``tool_use`` blocks; a run of ``tool``
messages and the user message after it -> one user message of ``tool_result`` blocks then its own
blocks (as Messages clients send them); ``tools`` -> ``{name, description, input_schema}``;
``stop`` -> ``stop_sequences``, ``max_completion_tokens`` -> ``max_tokens``.

Answer (:meth:`OpenAIChat.render`): a ``chat.completion`` from the recorded message -- text ->
``content``, thinking -> ``reasoning_content``, each ``tool_use`` -> a ``tool_calls`` entry with the same
id, the stop reason as ``finish_reason`` (``tool_calls``, ``length``, ``content_filter``, ``stop``); with
``"stream": true`` the same as ``chat.completion.chunk`` events ending in ``data: [DONE]`` (a usage
chunk first when ``stream_options.include_usage``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from ..._types import GenerationParams
from ._base import RequestError, Translated

__all__ = ["OPENAI_CHAT", "OpenAIChat"]

_USED_KEYS = frozenset({"model", "messages", "tools", "max_tokens", "max_completion_tokens", "temperature", "top_p",
                        "stop", "stream", "stream_options"})
_FINISH = {"tool_use": "tool_calls", "max_tokens": "length", "refusal": "content_filter"}
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 413: "invalid_request_error", 429: "rate_limit_error"}


def _parts(content: Any, where: str) -> list[Mapping[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not all(isinstance(p, Mapping | str) for p in content):
        raise RequestError(f"{where}.content must be a string or a list of parts")
    return [{"type": "text", "text": p} if isinstance(p, str) else p for p in content]


def _text(parts: list[Mapping[str, Any]]) -> str:
    return "\n\n".join(str(p.get("text") or "") for p in parts if p.get("type") == "text" and p.get("text"))


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value or {}, ensure_ascii=False)


def _calls(message: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list) or not all(isinstance(c, Mapping) for c in calls):
        raise RequestError(f"{where}.tool_calls must be a list of objects")
    return [{"id": str(c.get("id") or ""), "type": "function", "function": {
        "name": str((c.get("function") or {}).get("name") or ""),
        "arguments": _arguments((c.get("function") or {}).get("arguments"))}} for c in calls]


def _message(message: Any, where: str, notes: set[str]) -> dict[str, Any]:
    if not isinstance(message, Mapping):
        raise RequestError(f"{where} must be an object")
    role = message.get("role")
    parts = _parts(message.get("content"), where)
    if role in ("system", "developer"):
        return {"role": "system", "content": _text(parts)}
    if role == "tool":
        return {"role": "tool", "tool_call_id": str(message.get("tool_call_id") or ""), "content": _text(parts)}
    if role == "user":
        kept = [_user_part(p, notes) for p in parts if p.get("type") != "text" or p.get("text")]
        if len(kept) == 1 and kept[0]["type"] == "text":
            return {"role": "user", "content": kept[0]["text"]}
        return {"role": "user", "content": kept}
    if role == "assistant":
        if message.get("reasoning_content") or message.get("reasoning"):
            notes.add("thinking blocks of earlier replies are not sent back to the model")
        calls = _calls(message, where)
        out: dict[str, Any] = {"role": "assistant", "content": _text(parts) or (None if calls else "")}
        if calls:
            out["tool_calls"] = calls
        return out
    raise RequestError(f"{where}.role must be system, developer, user, assistant or tool, not {role!r}")


def _max_tokens(body: Mapping[str, Any], defaults: GenerationParams, cap: int | None, notes: set[str]) -> int:
    value = body.get("max_completion_tokens", body.get("max_tokens", defaults.max_tokens))
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise RequestError("max_tokens must be a positive integer")
    if cap is not None and value > cap:
        notes.add(f"max_tokens is capped at {cap}")
        return cap
    return value


def _user_part(part: Mapping[str, Any], notes: set[str]) -> dict[str, Any]:
    """One user part, cleaned: text, ``image_url`` and ``file`` pass (the proxy fits them to the target,
    :func:`.documents.adapt`); any other becomes a line saying it is not passed, with a note."""
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": str(part["text"])}
    if kind == "image_url":
        return {"type": "image_url", "image_url": {"url": str((part.get("image_url") or {}).get("url") or "")}}
    if kind == "file":
        return {"type": "file", "file": dict(part.get("file") or {})}
    notes.add(f"user parts of type {kind!r} are not passed to the model (a line in the message says so)")
    return {"type": "text", "text": f"[a {kind} part was here; the ifbench proxy cannot pass it to the model]"}


def _blocks(parts: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI user parts as Messages blocks (for the record)."""
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if part.get("type") == "text" and part.get("text"):
            blocks.append({"type": "text", "text": str(part["text"])})
        elif part.get("type") == "image_url":
            url = str((part.get("image_url") or {}).get("url") or "")
            if url.startswith("data:") and ";base64," in url:
                media, data = url[5:].split(";base64,", 1)
                blocks.append({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}})
            else:
                blocks.append({"type": "image", "source": {"type": "url", "url": url}})
        elif part.get("type") == "file":
            file = part.get("file") or {}
            url = str(file.get("file_data") or "")
            media, _, data = url[5:].partition(";base64,")
            blocks.append({"type": "document", "title": str(file.get("filename") or ""),
                           "source": {"type": "base64", "media_type": media, "data": data}})
    return blocks


def _input(arguments: Any) -> dict[str, Any]:
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return {}
    return dict(value) if isinstance(value, Mapping) else {}


def _recorded_messages(messages: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    """(leading system text, Messages-format messages) of OpenAI chat ``messages``; never raises."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []  # tool_result blocks waiting for the next user message

    def flush(extra: list[dict[str, Any]]) -> None:
        if results or extra:
            out.append({"role": "user", "content": [*results, *extra]})
            results.clear()

    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        try:
            parts = _parts(message.get("content"), "message")
        except RequestError:
            parts = []
        if role in ("system", "developer"):
            if out or results:
                flush([])
                out.append({"role": "system", "content": _text(parts)})
            else:
                system.append(_text(parts))
        elif role == "tool":
            results.append({"type": "tool_result", "tool_use_id": str(message.get("tool_call_id") or ""),
                            "content": _text(parts)})
        elif role == "user":
            content = message.get("content")
            if isinstance(content, str) and not results:
                out.append({"role": "user", "content": content})
            else:
                flush(_blocks(parts))
        elif role == "assistant":
            flush([])
            blocks: list[dict[str, Any]] = [{"type": "text", "text": _text(parts)}] if _text(parts) else []
            for call in message.get("tool_calls") or ():
                if isinstance(call, Mapping):
                    function = call.get("function") or {}
                    blocks.append({"type": "tool_use", "id": str(call.get("id") or ""),
                                   "name": str(function.get("name") or ""), "input": _input(function.get("arguments"))})
            out.append({"role": "assistant", "content": blocks})
    flush([])
    return "\n\n".join(s for s in system if s), out


class OpenAIChat:
    """The Chat Completions dialect as a :class:`~._base.WireFormat` (see the module doc)."""

    __slots__ = ()
    name = "openai_chat"
    paths = ("/v1/chat/completions", "/chat/completions")
    helpers: Mapping[str, Any] = {}

    def translate(self, body: Mapping[str, Any], *, defaults: GenerationParams,
                  max_tokens_cap: int | None) -> Translated:
        if not isinstance(body.get("messages"), list):
            raise RequestError('the request needs a "messages" list')
        notes = {f"request field {key!r} is not passed to the model" for key in body if key not in _USED_KEYS}
        messages = [_message(m, f"messages[{n}]", notes) for n, m in enumerate(body["messages"])]
        tools = []
        for tool in body.get("tools") or ():
            function = tool.get("function") if isinstance(tool, Mapping) and tool.get("type") == "function" else None
            if isinstance(function, Mapping) and isinstance(function.get("name"), str):
                tools.append({"type": "function", "function": {
                    "name": function["name"], "description": str(function.get("description") or ""),
                    "parameters": function.get("parameters") or {"type": "object", "properties": {}}}})
            else:
                notes.add("tools other than functions are not passed to the model")
        stop = body.get("stop")
        stop = [stop] if isinstance(stop, str) else stop if isinstance(stop, list) else []
        params = GenerationParams(
            temperature=body.get("temperature", defaults.temperature),
            max_tokens=_max_tokens(body, defaults, max_tokens_cap, notes),
            top_p=body.get("top_p", defaults.top_p), seed=defaults.seed, stop=tuple(str(s) for s in stop))
        usage = isinstance(body.get("stream_options"), Mapping) and body["stream_options"].get("include_usage") is True
        return Translated(messages=messages, tools=tools, params=params, stream=body.get("stream") is True,
                          model=str(body.get("model") or ""), notes=tuple(sorted(notes)),
                          extra={"include_usage": usage})

    def record(self, body: Mapping[str, Any]) -> dict[str, Any]:
        messages = body.get("messages")
        system, recorded = _recorded_messages(messages if isinstance(messages, list) else [])
        out = {key: value for key, value in body.items()
               if key not in ("messages", "tools", "stop", "max_completion_tokens")}
        if "max_completion_tokens" in body:
            out["max_tokens"] = body["max_completion_tokens"]
        stop = body.get("stop")
        if stop:
            out["stop_sequences"] = [stop] if isinstance(stop, str) else stop
        if system:
            out["system"] = system
        out["messages"] = recorded
        tools = [t.get("function") for t in body.get("tools") or () if isinstance(t, Mapping)]
        if tools:
            out["tools"] = [{"name": f.get("name"), "description": f.get("description") or "",
                             "input_schema": f.get("parameters") or {}} for f in tools if isinstance(f, Mapping)]
        return out

    def render(self, message: Mapping[str, Any], translated: Translated) -> tuple[dict[str, str], bytes]:
        blocks = message.get("content") or []
        text = "".join(b["text"] for b in blocks if b.get("type") == "text")
        reasoning = "".join(b["thinking"] for b in blocks if b.get("type") == "thinking")
        calls = [{"id": b["id"], "type": "function", "function": {
            "name": b["name"], "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False)}}
            for b in blocks if b.get("type") == "tool_use"]
        finish = _FINISH.get(str(message.get("stop_reason")), "stop")
        tokens = message.get("usage") or {}
        usage = {"prompt_tokens": tokens.get("input_tokens", 0), "completion_tokens": tokens.get("output_tokens", 0)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        head = {"id": f"chatcmpl-{str(message.get('id', ''))[4:]}", "created": int(time.time()),
                "model": translated.model}
        if not translated.stream:
            answer: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
            if reasoning:
                answer["reasoning_content"] = reasoning
            if calls:
                answer["tool_calls"] = calls
            body = {**head, "object": "chat.completion", "usage": usage,
                    "choices": [{"index": 0, "message": answer, "finish_reason": finish}]}
            return {"Content-Type": "application/json"}, json.dumps(body, ensure_ascii=False).encode()
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        if reasoning:
            deltas.append({"reasoning_content": reasoning})
        if text:
            deltas.append({"content": text})
        deltas += [{"tool_calls": [{"index": i, **call}]} for i, call in enumerate(calls)]
        chunks = [{"index": 0, "delta": delta, "finish_reason": None} for delta in deltas]
        chunks.append({"index": 0, "delta": {}, "finish_reason": finish})
        events = [{**head, "object": "chat.completion.chunk", "choices": [choice]} for choice in chunks]
        if translated.extra.get("include_usage"):
            events.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        data = b"".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n".encode() for e in events)
        return {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}, data + b"data: [DONE]\n\n"

    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}


#: The Chat Completions wire format.
OPENAI_CHAT = OpenAIChat()
