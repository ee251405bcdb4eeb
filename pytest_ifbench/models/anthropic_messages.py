"""OpenAI chat requests as Anthropic Messages requests, and Anthropic replies as OpenAI chat replies.

The translation litellm's ``anthropic/`` provider makes for the calls this plugin sends, so a model
answers the same request whichever route carries it:

* ``system`` messages become the request's ``system`` text; ``tool`` messages become
  ``tool_result`` blocks of a user turn; an assistant's ``tool_calls`` become ``tool_use`` blocks;
  consecutive turns of one role are merged (the Messages API wants them alternating); images in
  ``image_url`` parts become ``image`` blocks (a ``data:`` URL as base64, any other as a URL);
* ``max_tokens`` is required: litellm's default of 4096 when the call sets none; ``stop`` becomes
  ``stop_sequences``; ``seed`` is dropped (no such parameter); ``reasoning_effort`` becomes a thinking
  budget (low 1024, medium 2048, high 4096 tokens, as litellm's defaults);
* tools become ``{name, description, input_schema}``; a ``json_schema`` ``response_format`` becomes
  the forced tool litellm uses (``json_tool_call``), whose input is the reply's text.

Prompt caching: a call that carries litellm's ``cache_control_injection_points`` gets the same
``cache_control`` marks litellm would give it, for the two kinds of point :data:`CACHE_POINTS` uses --
``{"location": "message", "role": R}`` marks the last block of every message of role R (the system
text then goes as one text block), ``{"location": "message", "index": i}`` the last block of message i
(negative from the end) -- so the request is the same on either route (see :func:`cache_breakpoints`).

A reply's ``text`` blocks are its content, ``thinking`` blocks its reasoning, ``tool_use`` blocks
its tool calls; ``stop_reason`` becomes OpenAI's ``finish_reason``; usage counts every prompt token
(cache reads and writes included) as litellm does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .prices import Usage
from .replies import NOT_TEXT, MalformedReply

#: litellm's ``max_tokens`` for an Anthropic call that sets none.
DEFAULT_MAX_TOKENS = 4096
#: The forced tool a ``response_format`` becomes (litellm's name for it).
JSON_TOOL = "json_tool_call"
_THINKING_BUDGET = {"low": 1024, "medium": 2048, "high": 4096}
#: Where a conversation that goes on (an agent's steps) asks Anthropic to cache its prompt: the system
#: text (with the tools before it, the prefix every step repeats) and the last message, each step's
#: new end. Anthropic looks up to 20 blocks back from a mark for a prefix it cached, so the next step,
#: which adds the reply and its tool results after it, reads this one's (0.1x the input price) and
#: writes only what it added (1.25x); a prompt shorter than the model's minimum is not cached and costs
#: nothing more. litellm's ``cache_control_injection_points``, so the litellm route marks the same blocks.
CACHE_POINTS: tuple[Mapping[str, Any], ...] = ({"location": "message", "role": "system"},
                                               {"location": "message", "index": -1})
_EPHEMERAL = {"type": "ephemeral"}
_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
           "tool_use": "tool_calls", "refusal": "content_filter"}


def request_body(name: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> dict[str, Any]:
    """The ``POST /v1/messages`` body for a call the client describes in OpenAI's terms."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    marked_roles, marked = _marks(params.get("cache_control_injection_points"), len(messages))
    for position, message in enumerate(messages):
        role = message.get("role")
        if role in ("system", "developer"):
            system.append(_text(message.get("content")))
            continue
        if role == "tool":
            blocks = [{"type": "tool_result", "tool_use_id": message.get("tool_call_id") or "",
                       "content": _text(message.get("content"))}]
            role = "user"
        elif role == "assistant":
            blocks = _blocks(message.get("content")) + [_tool_use(call) for call in message.get("tool_calls") or ()]
        else:
            blocks = _blocks(message.get("content"))
            role = "user"
        if blocks and (position in marked or message.get("role") in marked_roles):
            blocks[-1]["cache_control"] = dict(_EPHEMERAL)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    body: dict[str, Any] = {"model": name, "messages": turns,
                            "max_tokens": params.get("max_tokens") or DEFAULT_MAX_TOKENS}
    if any(system):
        text = "\n".join(text for text in system if text)
        cached = "system" in marked_roles or "developer" in marked_roles
        body["system"] = [{"type": "text", "text": text, "cache_control": dict(_EPHEMERAL)}] if cached else text
    for key in ("temperature", "top_p"):
        if params.get(key) is not None:
            body[key] = params[key]
    stop = params.get("stop")
    if stop:
        body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    budget = _THINKING_BUDGET.get(str(params.get("reasoning_effort") or ""))
    if budget:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        body["max_tokens"] = max(body["max_tokens"], budget + 1)
    tools = [_tool(t) for t in params.get("tools") or ()]
    schema = _response_schema(params.get("response_format"))
    if schema is not None:
        tools.append({"name": JSON_TOOL, "input_schema": schema})
        body["tool_choice"] = {"type": "auto"} if budget else {"type": "tool", "name": JSON_TOOL}
    if tools:
        body["tools"] = tools
    return body


def cache_breakpoints(model: str) -> tuple[Mapping[str, Any], ...]:
    """The cache marks a continuing conversation with an Anthropic model asks for (:data:`CACHE_POINTS`);
    the ``cache_breakpoints`` of the providers that reach Anthropic's API."""
    return CACHE_POINTS


def _marks(points: Any, count: int) -> tuple[frozenset[str], frozenset[int]]:
    """The roles and the message positions ``points`` (litellm's injection points) mark."""
    roles: set[str] = set()
    positions: set[int] = set()
    for point in points if isinstance(points, list | tuple) else ():
        if not isinstance(point, Mapping) or point.get("location") != "message":
            continue
        index = point.get("index")
        if isinstance(index, int) and not isinstance(index, bool) and -count <= index < count:
            positions.add(index % count)
        elif isinstance(point.get("role"), str):
            roles.add(point["role"])
    return frozenset(roles), frozenset(positions)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return "" if content is None else str(content)


def _blocks(content: Any) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        text = _text(content)
        return [{"type": "text", "text": text}] if text else []
    blocks = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "image_url":
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            blocks.append({"type": "image", "source": _image_source(str(url or ""))})
        elif isinstance(part.get("text"), str) and part["text"]:
            blocks.append({"type": "text", "text": part["text"]})
    return blocks


def _image_source(url: str) -> dict[str, Any]:
    if url.startswith("data:") and ";base64," in url:
        media, data = url[5:].split(";base64,", 1)
        return {"type": "base64", "media_type": media, "data": data}
    return {"type": "url", "url": url}


def _tool_use(call: Mapping[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except ValueError:
        arguments = {}
    return {"type": "tool_use", "id": call.get("id") or "", "name": function.get("name") or "",
            "input": arguments if isinstance(arguments, dict) else {}}


def _tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = tool.get("function") or tool
    out = {"name": function.get("name") or "",
           "input_schema": function.get("parameters") or {"type": "object", "properties": {}}}
    if function.get("description"):
        out["description"] = function["description"]
    return out


def _response_schema(response_format: Any) -> dict[str, Any] | None:
    if not isinstance(response_format, Mapping) or response_format.get("type") == "text":
        return None
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    if isinstance(schema, Mapping):
        return dict(schema)
    return {"type": "object", "properties": {}, "additionalProperties": True}


def reply_data(data: Any) -> dict[str, Any]:
    """An Anthropic ``message`` as an OpenAI chat-completions body (for :func:`.openai_compat.reply_tree`)."""
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise MalformedReply("the provider returned no choices ('content' is not a list)")
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in data["content"]:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            if not isinstance(block.get("text"), str):
                raise MalformedReply(f"{NOT_TEXT} (a text block of type {type(block.get('text')).__name__})")
            texts.append(block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            thinking.append(block["thinking"])
        elif kind == "tool_use" and block.get("name") == JSON_TOOL:
            texts.append(json.dumps(block.get("input")))
        elif kind == "tool_use":
            calls.append({"id": block.get("id"), "type": "function",
                          "function": {"name": block.get("name"), "arguments": json.dumps(block.get("input") or {})}})
    finish = data.get("stop_reason")
    if finish == "tool_use" and not calls:  # only the response_format tool was used: a plain answer
        finish = "end_turn"
    message = {"role": "assistant", "content": "".join(texts) if texts else None,
               "tool_calls": calls or None, "reasoning_content": "".join(thinking) or None}
    usage = usage_of(data.get("usage"))
    return {"model": data.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": _FINISH.get(finish, finish)}],
            "usage": {"prompt_tokens": usage.prompt, "completion_tokens": usage.completion}}


def usage_of(usage: Any) -> Usage:
    """The reply's token counts; the prompt counts cache reads and writes too."""
    if not isinstance(usage, dict):
        return Usage()

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and value > 0 else 0

    read, written = count("cache_read_input_tokens"), count("cache_creation_input_tokens")
    return Usage(prompt=count("input_tokens") + read + written, completion=count("output_tokens"),
                 cache_read=read, cache_write=written)
