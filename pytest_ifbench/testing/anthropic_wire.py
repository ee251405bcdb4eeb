"""The Anthropic Messages dialect: just enough for ``litellm``'s ``anthropic/`` provider,
the ``anthropic`` SDK and agent CLIs that speak it.

* ``POST /v1/messages`` (``?beta=true`` too; the query is ignored): a ``message``
  object, or with ``"stream": true`` the event stream ``message_start``, one
  ``content_block_start``/``content_block_delta``/``content_block_stop`` run
  per block, ``message_delta`` (``stop_reason`` and usage) and
  ``message_stop``.
* ``POST /v1/messages/count_tokens``: ``{"input_tokens": N}``, counted like
  every stub usage figure (whitespace-separated words).
* Errors: ``{"type": "error", "error": {"type", "message"}}``.

A scripted :class:`~pytest_ifbench.testing.script.Reply` becomes blocks in
this order:

* a leading ``<think>...</think>`` in ``content`` -- a ``thinking`` block
  (with an empty ``signature``), so ``Reply(content="<think>plan</think>Done")``
  reaches a client through either dialect as the same reasoning and text;
* the rest of ``content`` -- a ``text`` block (none when empty);
* each tool call -- a ``tool_use`` block whose ``input`` is the parsed
  ``arguments`` (a scripted call whose arguments are not a JSON object is a
  bad reply: the server answers 500).

A ``Reply.raw_body`` is sent as is, instead of the message (as in the OpenAI
format): an Anthropic-shaped body no provider should send.

``stop_reason`` comes from ``Reply.finish_reason``: OpenAI names are mapped
(``stop`` -> ``end_turn``, ``tool_calls`` -> ``tool_use``, ``length`` ->
``max_tokens``), Anthropic names pass through.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .openai_wire import normalise_tool_calls
from .script import ChatRequest, Reply
from .wire import CHAT, TOKENS, Payload, content_text, count_tokens, last_user_text

__all__ = ["MALFORMED_BODY", "AnthropicWire", "cache_order", "error_body", "reply_blocks", "stop_reason"]

#: Body sent for a ``Fault(kind="malformed")``: valid HTTP, invalid JSON.
MALFORMED_BODY = b'{"type": "message", "content": ['

_PATHS = {"/v1/messages": CHAT, "/v1/messages/count_tokens": TOKENS}

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}

_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens",
                 "content_filter": "refusal", "function_call": "tool_use"}

_THINK = re.compile(r"^\s*<think>(.*?)</think>\s*", re.DOTALL)
_SSE = "text/event-stream"


def error_body(status: int, message: str) -> bytes:
    """Anthropic-style error body ``{"type": "error", "error": {"type", "message"}}``."""
    kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


def stop_reason(reply: Reply) -> str:
    """The Anthropic ``stop_reason`` of ``reply``."""
    reason = reply.effective_finish_reason
    return _STOP_REASONS.get(reason, reason)


def reply_blocks(reply: Reply, seq: int = 0) -> list[dict[str, Any]]:
    """The content blocks ``reply`` is sent as (see the module doc); ValueError on bad tool arguments."""
    blocks: list[dict[str, Any]] = []
    text = reply.content or ""
    think = _THINK.match(text)
    if think:
        blocks.append({"type": "thinking", "thinking": think.group(1), "signature": ""})
        text = text[think.end():]
    if text:
        blocks.append({"type": "text", "text": text})
    for i, call in enumerate(normalise_tool_calls(reply.tool_calls) or ()):
        scripted_id = reply.tool_calls[i].get("id") if reply.tool_calls else None
        arguments = json.loads(call["function"]["arguments"] or "{}")
        if not isinstance(arguments, dict):
            raise ValueError(f"tool call #{i}: arguments must be a JSON object")
        blocks.append({"type": "tool_use", "id": scripted_id or f"toolu_stub_{seq}_{i}",
                       "name": call["function"]["name"], "input": arguments})
    return blocks


def cache_order(body: dict) -> list[tuple[str, bool]]:
    """A Messages request's prompt in the order Anthropic caches it -- each tool, each system block,
    each message's blocks (with the message's role) -- as canonical JSON without the ``cache_control``
    mark, each with whether it carried one. What a request marked is cached as the texts up to the
    mark: a later request whose texts start the same way can read it."""
    system = body.get("system")
    blocks = [*(body.get("tools") or ()),
              *([{"type": "text", "text": system}] if isinstance(system, str) else system or ())]
    for message in body.get("messages") or ():
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        blocks += [dict(part, role=message.get("role")) for part in parts if isinstance(part, dict)]
    return [(json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True),
             "cache_control" in block) for block in blocks if isinstance(block, dict)]


def _prompt_text(body: dict) -> str:
    parts = [content_text(body.get("system"))]
    for message in body.get("messages") or ():
        if isinstance(message, dict):
            content = message.get("content")
            parts.append(content_text(content))
            if isinstance(content, list):  # tool results count too
                parts += [content_text(b.get("content")) for b in content
                          if isinstance(b, dict) and b.get("type") == "tool_result"]
    return "\n".join(parts)


def _output_tokens(blocks: list[dict[str, Any]]) -> int:
    pieces = [b.get("text") or b.get("thinking") or "" for b in blocks]
    pieces += [f"{b['name']} {json.dumps(b['input'])}" for b in blocks if b["type"] == "tool_use"]
    return count_tokens(" ".join(pieces))


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


class AnthropicWire:
    """:class:`~pytest_ifbench.testing.wire.WireFormat` for the Anthropic Messages API."""

    name = "anthropic"

    def endpoint(self, path: str, headers: Mapping[str, str]) -> str | None:
        return _PATHS.get(path)

    def chat_request(self, body: dict) -> ChatRequest:
        model = body.get("model")
        return ChatRequest(body=body, text=last_user_text(body), model=model if isinstance(model, str) else None,
                           stream=body.get("stream") is True)

    def chat_response(self, request: ChatRequest, reply: Reply, seq: int) -> Payload:
        if reply.raw_body is not None:  # a reply no provider should send: as is, unframed
            return Payload(reply.raw_body.encode())
        blocks = reply_blocks(reply, seq)
        message = {
            "id": f"msg_stub_{seq}", "type": "message", "role": "assistant",
            "model": request.body.get("model") or "stub", "content": blocks,
            "stop_reason": stop_reason(reply), "stop_sequence": None,
            "usage": {"input_tokens": count_tokens(_prompt_text(request.body)),
                      "output_tokens": _output_tokens(blocks)},
        }
        if request.stream:
            return Payload(self._stream(message), _SSE, {"Cache-Control": "no-cache"})
        return Payload(json.dumps(message).encode())

    def models_response(self) -> Payload:  # pragma: no cover - never routed: no models path is claimed
        raise NotImplementedError

    def tokens_response(self, body: dict) -> Payload:
        return Payload(json.dumps({"input_tokens": count_tokens(_prompt_text(body))}).encode())

    def error(self, status: int, message: str) -> Payload:
        return Payload(error_body(status, message))

    def malformed(self, request: ChatRequest) -> Payload:
        if request.stream:
            return Payload(b"event: message_start\ndata: " + MALFORMED_BODY + b"\n\n", _SSE)
        return Payload(MALFORMED_BODY)

    @staticmethod
    def _stream(message: dict[str, Any]) -> bytes:
        usage = message["usage"]
        head = {**message, "content": [], "stop_reason": None,
                "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1}}
        out = [_event("message_start", {"message": head}), _event("ping", {})]
        for index, block in enumerate(message["content"]):
            kind = block["type"]
            if kind == "text":
                start, deltas = {"type": "text", "text": ""}, [
                    {"type": "text_delta", "text": piece} for piece in re.findall(r"\s*\S+\s*|\s+", block["text"])]
            elif kind == "thinking":
                start = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [{"type": "thinking_delta", "thinking": block["thinking"]},
                          {"type": "signature_delta", "signature": block["signature"]}]
            else:
                start = {**block, "input": {}}
                arguments = json.dumps(block["input"])
                cut = len(arguments) // 2
                deltas = [{"type": "input_json_delta", "partial_json": arguments[:cut]},
                          {"type": "input_json_delta", "partial_json": arguments[cut:]}]
            out.append(_event("content_block_start", {"index": index, "content_block": start}))
            out += [_event("content_block_delta", {"index": index, "delta": delta}) for delta in deltas]
            out.append(_event("content_block_stop", {"index": index}))
        out.append(_event("message_delta", {"delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                            "usage": {"output_tokens": usage["output_tokens"]}}))
        out.append(_event("message_stop", {}))
        return b"".join(out)
