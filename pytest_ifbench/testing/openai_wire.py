"""The OpenAI REST dialect: just enough for ``litellm`` and the ``openai`` SDK.

* ``POST /v1/chat/completions`` (and ``/chat/completions``): a
  ``chat.completion`` object, or with ``"stream": true`` a Server-Sent-Events
  stream of ``chat.completion.chunk`` objects ending with ``data: [DONE]``.
* ``GET /v1/models`` (and ``/models``): a small model list (:data:`MODEL_IDS`).
* Errors: ``{"error": {"message", "type", "param", "code"}}``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from typing import Any

from .script import ChatRequest, Reply
from .wire import CHAT, MODELS, Payload, content_text, count_tokens, last_user_text

__all__ = ["MALFORMED_BODY", "MODEL_IDS", "OpenAIWire", "error_body", "normalise_tool_calls"]

#: Model ids listed by ``GET /v1/models``.
MODEL_IDS = ("stub", "stub-large", "gpt-4o-mini")

#: Body sent for a ``Fault(kind="malformed")``: valid HTTP, invalid JSON.
MALFORMED_BODY = b'{"choices": ['

_PATHS = {
    "/v1/chat/completions": CHAT,
    "/chat/completions": CHAT,
    "/v1/models": MODELS,
    "/models": MODELS,
}

# Only 400 uses OpenAI's "invalid_request_error" type: litellm maps any error
# whose text contains that string to BadRequestError, whatever the status, so
# other statuses get distinct types and keep their own litellm exception class.
_ERROR_TYPES = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("not_found_error", "not_found"),
    408: ("timeout_error", "timeout"),
    409: ("conflict_error", "conflict"),
    413: ("request_too_large", "request_too_large"),
    422: ("unprocessable_entity_error", "unprocessable_entity"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    503: ("server_error", "service_unavailable"),
}

_SSE = "text/event-stream"


def error_body(status: int, message: str) -> bytes:
    """OpenAI-style error body ``{"error": {"message", "type", "param", "code"}}``."""
    err_type, code = _ERROR_TYPES.get(status, ("server_error" if status >= 500 else "client_error", str(status)))
    return json.dumps({"error": {"message": message, "type": err_type, "param": None, "code": code}}).encode()


def normalise_tool_calls(tool_calls: list[dict] | None) -> list[dict] | None:
    """``Reply.tool_calls`` with ``id``/``type`` filled in and ``arguments`` JSON-encoded."""
    if not tool_calls:
        return None
    out: list[dict] = []
    for i, call in enumerate(tool_calls):
        if not isinstance(call, dict):
            raise TypeError(f"tool call #{i} must be a dict, got {type(call).__name__}")
        function = dict(call.get("function") or {})
        arguments = function.get("arguments", "{}")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        function["arguments"] = arguments
        function.setdefault("name", "")
        out.append({"id": call.get("id") or f"call_{i}", "type": call.get("type") or "function", "function": function})
    return out


def _prompt_text(body: dict) -> str:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    return "\n".join(content_text(m.get("content")) for m in messages if isinstance(m, dict))


def _usage(body: dict, reply: Reply, tool_calls: list[dict] | None) -> dict:
    pieces = [reply.content or ""]
    for call in tool_calls or ():
        pieces.append(call["function"]["name"])
        pieces.append(call["function"]["arguments"])
    prompt = count_tokens(_prompt_text(body))
    completion = count_tokens(" ".join(pieces))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class OpenAIWire:
    """:class:`~pytest_ifbench.testing.wire.WireFormat` for OpenAI chat completions."""

    name = "openai"

    def endpoint(self, path: str, headers: Mapping[str, str]) -> str | None:
        return _PATHS.get(path)

    def chat_request(self, body: dict) -> ChatRequest:
        model = body.get("model")
        return ChatRequest(
            body=body,
            text=last_user_text(body),
            model=model if isinstance(model, str) else None,
            stream=body.get("stream") is True,
        )

    def chat_response(self, request: ChatRequest, reply: Reply, seq: int) -> Payload:
        if reply.raw_body is not None:
            return Payload(reply.raw_body.encode())
        tool_calls = normalise_tool_calls(reply.tool_calls)
        ident = f"chatcmpl-stub-{seq}"
        if request.stream:
            return Payload(self._stream(request.body, reply, tool_calls, ident), _SSE, {"Cache-Control": "no-cache"})
        return Payload(self._completion(request.body, reply, tool_calls, ident))

    def models_response(self) -> Payload:
        data = [{"id": mid, "object": "model", "created": 0, "owned_by": "pytest-ifbench"} for mid in MODEL_IDS]
        return Payload(json.dumps({"object": "list", "data": data}).encode())

    def error(self, status: int, message: str) -> Payload:
        return Payload(error_body(status, message))

    def malformed(self, request: ChatRequest) -> Payload:
        if request.stream:
            return Payload(b"data: " + MALFORMED_BODY + b"\n\n", _SSE)
        return Payload(MALFORMED_BODY)

    # -- bodies ----------------------------------------------------------------
    def _completion(self, body: dict, reply: Reply, tool_calls: list[dict] | None, ident: str) -> bytes:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return json.dumps(
            {
                "id": ident,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model") or "stub",
                "choices": [
                    {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.effective_finish_reason}
                ],
                "usage": _usage(body, reply, tool_calls),
                "system_fingerprint": "fp_stub",
            }
        ).encode()

    def _stream(self, body: dict, reply: Reply, tool_calls: list[dict] | None, ident: str) -> bytes:
        created = int(time.time())
        model = body.get("model") or "stub"

        def chunk(delta: dict, finish: str | None = None, usage: dict | None = None) -> bytes:
            obj: dict[str, Any] = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_stub",
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            }
            if usage is not None:
                obj["usage"] = usage
            return b"data: " + json.dumps(obj).encode() + b"\n\n"

        out = [chunk({"role": "assistant", "content": ""})]
        for piece in re.findall(r"\s*\S+\s*|\s+", reply.content or ""):
            out.append(chunk({"content": piece}))
        for i, call in enumerate(tool_calls or ()):
            function = call["function"]
            head = {"index": i, "id": call["id"], "type": call["type"],
                    "function": {"name": function["name"], "arguments": ""}}
            out.append(chunk({"tool_calls": [head]}))
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": function["arguments"]}}]}))
        out.append(chunk({}, reply.effective_finish_reason, _usage(body, reply, tool_calls)))
        out.append(b"data: [DONE]\n\n")
        return b"".join(out)
