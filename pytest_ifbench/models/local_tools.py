"""Tool calls for the embedded model: llama.cpp has no tool-call format, so we make one.

A request with ``tools`` is answered under a JSON-schema grammar whose ``anyOf`` has one
branch per tool plus ``finish`` (:func:`tool_call_schema`; schemas llama.cpp's converter
cannot handle are simplified by :func:`grammar_schema`); the conversation is rendered as
plain chat turns that show the tools, earlier calls and their results
(:func:`render_tool_messages`); the model's JSON becomes an OpenAI-shaped reply with
``tool_calls``, or plain text for ``finish`` (:func:`tool_response`). See ``_local_model``'s
docstring for the prompt format and the finish rule.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

FINISH_TOOL = "finish"
_FINISH_DESCRIPTION = "Give your final answer to the user and stop."
_FINISH_PARAMETERS: dict[str, Any] = {
    "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
_ANY_VALUE: dict[str, Any] = {
    "anyOf": [{"type": t} for t in ("string", "number", "boolean", "object", "array", "null")]}
_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")
_STRING_FORMATS = ("date", "time", "date-time", "uuid")
#: The converter unrolls length/item bounds into one rule per position: larger ones are dropped.
_MAX_BOUND = 64
#: Deeper schemas (or $ref chains) become "any JSON value", bounding the grammar's size.
_MAX_DEPTH = 8


def _get(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` for dicts, ``obj.key`` for litellm/pydantic objects."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def function_tools(tools: Any) -> list[dict[str, Any]]:
    """OpenAI ``tools`` as ``{"name", "description", "parameters"}`` (function tools only, first of a name)."""
    out: list[dict[str, Any]] = []
    for tool in tools or ():
        fn = _get(tool, "function")
        if fn is None and _get(tool, "type", "function") == "function" and _get(tool, "name"):
            fn = tool  # flat form: {"type": "function", "name": ..., "parameters": ...}
        name = _get(fn, "name") if fn is not None else None
        if not isinstance(name, str) or not name or any(t["name"] == name for t in out):
            continue
        parameters = _get(fn, "parameters")
        out.append({"name": name, "description": _get(fn, "description") or "",
                    "parameters": dict(parameters) if isinstance(parameters, Mapping)
                    else {"type": "object", "properties": {}}})
    return out


def _pointer(root: Any, ref: str) -> Any:
    """The target of a local ``#/a/b`` JSON pointer in ``root``, or None."""
    node = root
    for part in ref[2:].split("/") if ref != "#" else ():
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _merge(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """``b`` layered on ``a``, properties and required lists combined (an approximation of allOf)."""
    out = {**a, **b}
    props = {**(a.get("properties") or {}), **(b.get("properties") or {})}
    if props:
        out["properties"] = props
    required = [*(a.get("required") or ()), *(r for r in b.get("required") or () if r not in (a.get("required") or ()))]
    if required:
        out["required"] = required
    return out


def _bound(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_BOUND else None


def grammar_schema(schema: Any, root: Any = None, _refs: tuple[str, ...] = (), _depth: int = 0) -> dict[str, Any]:
    """``schema`` rewritten into the subset of JSON Schema llama.cpp's grammar converter handles.

    The converter asserts on untyped schemas, unknown types and patterns not
    anchored by ``^...$``, resolves ``$ref`` against the whole document (which
    is no longer the tool's own once it is one branch of many), reads ``allOf``
    for properties only, and unrolls length/item bounds. Here: local ``$ref`` are
    inlined (a recursive one becomes "any JSON value"), ``allOf`` merged, type
    lists and ``anyOf``/``oneOf`` become ``anyOf`` branches, ``nullable`` adds
    ``null``, ``pattern``, numeric bounds and unknown formats are dropped, and
    anything unrecognised is "any JSON value". The result may accept more than
    ``schema`` but every JSON it accepts is well-formed.
    """
    if root is None:
        root = schema
    if not isinstance(schema, Mapping) or _depth > _MAX_DEPTH:
        return {"anyOf": list(_ANY_VALUE["anyOf"])}
    schema = dict(schema)
    ref = schema.pop("$ref", None)
    if isinstance(ref, str):
        target = _pointer(root, ref) if ref.startswith("#") and ref not in _refs else None
        if not isinstance(target, Mapping):
            return {"anyOf": list(_ANY_VALUE["anyOf"])}
        return grammar_schema(_merge(target, schema), root, (*_refs, ref), _depth + 1)
    parts = schema.pop("allOf", None)
    if isinstance(parts, list) and parts:
        merged: dict[str, Any] = {}
        for part in parts:
            while isinstance(part, Mapping) and isinstance(part.get("$ref"), str) and part["$ref"] not in _refs:
                target = _pointer(root, part["$ref"]) if part["$ref"].startswith("#") else None
                part = _merge(target, {k: v for k, v in part.items() if k != "$ref"}) if isinstance(
                    target, Mapping) else {}
            if isinstance(part, Mapping):
                merged = _merge(merged, {k: v for k, v in part.items() if k != "$ref"})
        return grammar_schema(_merge(merged, schema), root, _refs, _depth + 1)
    for key in ("anyOf", "oneOf"):
        branches = schema.pop(key, None)
        if isinstance(branches, list) and branches:
            base = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
            return {"anyOf": [grammar_schema(_merge(base, b) if isinstance(b, Mapping) else b, root, _refs, _depth + 1)
                              for b in branches]}
    if "const" in schema:
        return {"const": schema["const"]}
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return {"enum": list(schema["enum"])}

    declared = schema.get("type")
    types = [t for t in (declared if isinstance(declared, list) else [declared]) if t in _TYPES]
    if not types:
        if {"properties", "additionalProperties", "required"} & schema.keys():
            types = ["object"]
        elif {"items", "prefixItems"} & schema.keys():
            types = ["array"]
        elif {"minLength", "maxLength", "pattern", "format"} & schema.keys():
            types = ["string"]
        elif {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} & schema.keys():
            types = ["number"]
        else:
            return {"anyOf": list(_ANY_VALUE["anyOf"])}
    if schema.get("nullable") is True and "null" not in types:
        types.append("null")
    if len(types) > 1:
        return {"anyOf": [grammar_schema({**schema, "type": t, "nullable": False}, root, _refs, _depth + 1)
                          for t in types]}
    kind = types[0]
    out: dict[str, Any] = {"type": kind}
    if kind == "object":
        props = schema.get("properties")
        props = {k: grammar_schema(v, root, _refs, _depth + 1)
                 for k, v in (props.items() if isinstance(props, Mapping) else ()) if isinstance(k, str)}
        extra = schema.get("additionalProperties")
        if props:
            out["properties"] = props
            required = [r for r in schema.get("required") or () if r in props]
            if required:
                out["required"] = list(dict.fromkeys(required))
        elif extra is False:
            out["properties"] = {}  # exactly {}
        elif isinstance(extra, Mapping) and extra:
            out["additionalProperties"] = grammar_schema(extra, root, _refs, _depth + 1)
    elif kind == "array":
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(items, list) and prefix is None:  # draft-4 tuple form
            prefix = items
        if isinstance(prefix, list) and prefix:
            out["prefixItems"] = [grammar_schema(i, root, _refs, _depth + 1) for i in prefix]
        else:
            out["items"] = grammar_schema(items if isinstance(items, Mapping) else None, root, _refs, _depth + 1)
            low, high = _bound(schema.get("minItems")), _bound(schema.get("maxItems"))
            if low:
                out["minItems"] = low
            if high is not None and high >= (low or 0):
                out["maxItems"] = high
    elif kind == "string":
        if schema.get("format") in _STRING_FORMATS:
            out["format"] = schema["format"]
        else:
            low, high = _bound(schema.get("minLength")), _bound(schema.get("maxLength"))
            if low:
                out["minLength"] = low
            if high is not None and high >= (low or 0):
                out["maxLength"] = high
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class _ToolPlan:
    """What the model may answer: ``mode`` is auto, required, function or none."""

    mode: str
    tools: tuple[dict[str, Any], ...]
    finish: bool  # the synthetic finish branch is offered


def _choice_name(tool_choice: Any) -> str | None:
    return _get(_get(tool_choice, "function"), "name") or _get(tool_choice, "name")


def _tool_plan(tools: Any, tool_choice: Any = None) -> _ToolPlan:
    defined = function_tools(tools)
    synthetic_finish = all(t["name"] != FINISH_TOOL for t in defined)
    if tool_choice in (None, "auto"):
        return _ToolPlan("auto", tuple(defined), synthetic_finish)
    if tool_choice == "none":
        return _ToolPlan("none", (), False)
    if tool_choice in ("required", "any"):
        return _ToolPlan("required", tuple(defined), False)
    name = _choice_name(tool_choice)
    if isinstance(name, str):
        chosen = tuple(t for t in defined if t["name"] == name)
        if chosen or (name == FINISH_TOOL and synthetic_finish):
            return _ToolPlan("function", chosen, not chosen)
        raise ValueError(f"tool_choice names {name!r}, which is not one of the tools")
    raise ValueError(f"unsupported tool_choice {tool_choice!r}")


def _branch(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"tool": {"const": name}, "arguments": dict(arguments)},
            "required": ["tool", "arguments"]}


def _plan_schema(plan: _ToolPlan) -> dict[str, Any]:
    branches = [_branch(t["name"], grammar_schema(t["parameters"])) for t in plan.tools]
    if plan.finish:
        branches.append(_branch(FINISH_TOOL, _FINISH_PARAMETERS))
    return {"anyOf": branches}


def tool_call_schema(tools: Any, tool_choice: Any = None) -> dict[str, Any] | None:
    """The JSON schema the model's reply is constrained to; None for ``tool_choice="none"``."""
    plan = _tool_plan(tools, tool_choice)
    return None if plan.mode == "none" else _plan_schema(plan)


def _tool_section(plan: _ToolPlan) -> str:
    listed = [*plan.tools, *([{"name": FINISH_TOOL, "description": _FINISH_DESCRIPTION,
                               "parameters": _FINISH_PARAMETERS}] if plan.finish else [])]
    lines = ["You can use tools. Available tools:", ""]
    for tool in listed:
        lines.append(f"- {tool['name']}: {tool['description']}" if tool["description"] else f"- {tool['name']}")
        lines.append(f"  Parameters: {json.dumps(tool['parameters'], ensure_ascii=False)}")
    lines += ["", "Reply with exactly one JSON object and nothing else:",
              '{"tool": "<tool name>", "arguments": {<arguments>}}',
              'Each tool result comes back in a message that starts with "[tool result".']
    if plan.finish:
        lines.append(f"When the task is done, call {FINISH_TOOL} with your answer.")
    return "\n".join(lines)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(_get(p, "text", "") or "" for p in content)
    return "" if content is None else str(content)


def _call_line(call: Any) -> str:
    fn = _get(call, "function") or {}
    arguments = _get(fn, "arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            pass
    return json.dumps({"tool": _get(fn, "name"), "arguments": arguments}, ensure_ascii=False)


def render_tool_messages(messages: Sequence[Any], tools: Any, tool_choice: Any = None) -> list[dict[str, str]]:
    """The conversation as plain system/user/assistant turns for a tool request (format: module docstring)."""
    plan = _tool_plan(tools, tool_choice)
    names: dict[str, str] = {}
    out: list[dict[str, str]] = []
    pending: list[str] = []  # tool results waiting to become one user turn

    def flush() -> None:
        if pending:
            out.append({"role": "user", "content": "\n\n".join(pending)})
            pending.clear()

    for message in messages:
        role, content = _get(message, "role"), _text(_get(message, "content"))
        if role == "tool":
            call_id = _get(message, "tool_call_id") or ""
            name = _get(message, "name") or names.get(call_id, "")
            label = " ".join(x for x in (call_id, f"({name})" if name else "") if x)
            pending.append(f"[tool result{' ' + label if label else ''}]\n{content}\n[end tool result]")
            continue
        flush()
        calls = _get(message, "tool_calls") or []
        if role == "assistant" and calls:
            for call in calls:
                names[_get(call, "id") or ""] = _get(_get(call, "function"), "name") or ""
            content = "\n".join([*([content] if content.strip() else []), *map(_call_line, calls)])
        out.append({"role": role if role in ("system", "user", "assistant") else "user", "content": content})
    flush()
    if plan.mode != "none":
        section = _tool_section(plan)
        if out and out[0]["role"] == "system":
            system = out[0]["content"]
            out[0] = {"role": "system", "content": f"{system}\n\n{section}" if system.strip() else section}
        else:
            out.insert(0, {"role": "system", "content": section})
    return out


def _calls_so_far(messages: Sequence[Any]) -> int:
    return sum(len(_get(m, "tool_calls") or []) for m in messages if _get(m, "role") == "assistant")


def tool_response(raw: Mapping[str, Any], tools: Any, *, call_number: int = 1) -> dict[str, Any]:
    """llama.cpp's reply to a tool request as an OpenAI response (the finish rule: module docstring).

    Text that is not a complete ``{"tool", "arguments"}`` object naming a
    known tool (``max_tokens`` cut it) is returned unchanged, as plain text.
    """
    out = dict(raw)
    choice = dict(raw["choices"][0])
    text = _text(_get(choice.get("message"), "content"))
    try:
        reply = json.loads(text)
    except ValueError:
        return out
    if not isinstance(reply, dict) or not isinstance(reply.get("tool"), str):
        return out
    name, arguments = reply["tool"], reply.get("arguments", {})
    defined = {t["name"] for t in function_tools(tools)}
    if name == FINISH_TOOL and name not in defined:
        answer = arguments.get("answer") if isinstance(arguments, dict) else None
        choice["message"] = {"role": "assistant",
                             "content": answer if isinstance(answer, str) else json.dumps(arguments)}
        choice["finish_reason"] = "stop"
    elif name in defined:
        choice["message"] = {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{call_number}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
        }]}
        choice["finish_reason"] = "tool_calls"
    else:
        return out
    out["choices"] = [choice, *raw["choices"][1:]]
    return out
