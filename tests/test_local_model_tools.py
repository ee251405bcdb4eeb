"""Tool calls on the embedded model: schema, prompt, response mapping, and a few real SmolLM2 calls.

Most tests need no model. The ones marked ``needs_llama`` load llama.cpp;
only three of them generate (short, ``max_tokens`` small): the 135M model is
slow on a loaded machine.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest

from pytest_ifbench._types import GenerationParams
from pytest_ifbench.models import local as _local_model
from pytest_ifbench.models.cache import cache_key
from pytest_ifbench.models.client import ModelClient, RetryPolicy, import_litellm
from pytest_ifbench.models.local import local_model_problem
from pytest_ifbench.models.local_tools import grammar_schema, render_tool_messages, tool_call_schema, tool_response
from pytest_ifbench.testing import Reply
from tests._support import closing_sessions

needs_llama = pytest.mark.skipif(local_model_problem() is not None, reason="the embedded model needs the [local] extra")


def _tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


#: Bounded strings bound the tokens a call can take, so a small max_tokens always fits a whole call.
SHORT = {"type": "string", "maxLength": 24}
READ = _tool("read_file", "Read a text file and return its content.",
             {"type": "object", "properties": {"path": SHORT}, "required": ["path"]})
WRITE = _tool("write_file", "Write text to a file.",
              {"type": "object", "properties": {"path": SHORT, "content": SHORT}, "required": ["path", "content"]})
TOOLS = [READ, WRITE]
ASK = [{"role": "user", "content": "What is in notes.txt?"}]
HISTORY = [
    *ASK,
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "Buy milk and eggs."},
]
FINISH_BRANCH = {
    "type": "object",
    "properties": {"tool": {"const": "finish"},
                   "arguments": {"type": "object", "properties": {"answer": {"type": "string"}},
                                 "required": ["answer"]}},
    "required": ["tool", "arguments"],
}
ANY = grammar_schema(True)


def _raw(content: str, finish_reason: str = "stop") -> dict[str, Any]:
    """A llama.cpp chat completion as create_chat_completion returns it."""
    return {"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "logprobs": None,
                         "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def _check_call(call: dict[str, Any], number: int) -> dict[str, Any]:
    """A well-formed OpenAI tool call to one of TOOLS whose arguments match its schema; returns the arguments."""
    assert call["id"] == f"call_{number}" and call["type"] == "function"
    name = call["function"]["name"]
    assert name in {"read_file", "write_file"}
    arguments = json.loads(call["function"]["arguments"])
    required = {"read_file": {"path"}, "write_file": {"path", "content"}}[name]
    assert set(arguments) == required and all(isinstance(v, str) and len(v) <= 24 for v in arguments.values())
    return arguments


# --- schema building ------------------------------------------------------------------------------


def test_schema_has_one_branch_per_tool_plus_finish():
    schema = tool_call_schema(TOOLS)
    assert list(schema) == ["anyOf"] and len(schema["anyOf"]) == 3
    read, write, finish = schema["anyOf"]
    assert read == {"type": "object", "properties": {"tool": {"const": "read_file"},
                                                     "arguments": READ["function"]["parameters"]},
                    "required": ["tool", "arguments"]}
    assert write["properties"]["tool"] == {"const": "write_file"}
    assert write["properties"]["arguments"] == WRITE["function"]["parameters"]
    assert finish == FINISH_BRANCH


def test_a_tool_named_finish_replaces_the_finish_branch():
    finish = _tool("finish", "Submit the work.", {"type": "object", "properties": {"summary": {"type": "string"}},
                                                  "required": ["summary"]})
    branches = tool_call_schema([READ, finish])["anyOf"]
    assert [b["properties"]["tool"]["const"] for b in branches] == ["read_file", "finish"]
    assert branches[1]["properties"]["arguments"]["properties"] == {"summary": {"type": "string"}}
    # ... and choosing it is an ordinary tool call, not the end of the conversation
    mapped = tool_response(_raw('{"tool": "finish", "arguments": {"summary": "done"}}'), [READ, finish])
    assert mapped["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "finish"


@pytest.mark.parametrize(("choice", "names"), [
    (None, ["read_file", "write_file", "finish"]),
    ("auto", ["read_file", "write_file", "finish"]),
    ("required", ["read_file", "write_file"]),
    ({"type": "function", "function": {"name": "write_file"}}, ["write_file"]),
    ({"type": "function", "function": {"name": "finish"}}, ["finish"]),
])
def test_tool_choice_selects_the_branches(choice, names):
    branches = tool_call_schema(TOOLS, choice)["anyOf"]
    assert [b["properties"]["tool"]["const"] for b in branches] == names


def test_tool_choice_none_and_unknown():
    assert tool_call_schema(TOOLS, "none") is None
    with pytest.raises(ValueError, match="delete_file"):
        tool_call_schema(TOOLS, {"type": "function", "function": {"name": "delete_file"}})


#: Parameter schemas llama.cpp's schema-to-grammar converter rejects, once embedded in a branch.
AWKWARD = {
    "untyped": {"type": "object", "properties": {"value": {"description": "anything"}}},
    "unknown type": {"type": "object", "properties": {"blob": {"type": "file"}}},
    "unanchored pattern": {"type": "object", "properties": {"id": {"type": "string", "pattern": "[a-z]+"}}},
    "local $ref": {"type": "object", "properties": {"p": {"$ref": "#/$defs/Point"}}, "required": ["p"],
                   "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}},
                                       "required": ["x"]}}},
    "remote $ref": {"type": "object", "properties": {"p": {"$ref": "other.json#/Point"}}},
}


@needs_llama
@pytest.mark.parametrize("name", list(AWKWARD))
def test_awkward_schemas_are_simplified_into_grammars_llama_cpp_accepts(name):
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    tools = [READ, _tool("odd", "", AWKWARD[name])]
    naive = {"anyOf": [*tool_call_schema([READ])["anyOf"][:1],
                       {"type": "object", "properties": {"tool": {"const": "odd"}, "arguments": AWKWARD[name]},
                        "required": ["tool", "arguments"]}]}
    with pytest.raises((AssertionError, ValueError)):
        json_schema_to_gbnf(json.dumps(naive))
    engine = _local_model.engine_for("smollm2")
    assert engine._valid_gbnf(tool_call_schema(tools)) is not None, "the converter and llama.cpp's parser accept it"


def test_grammar_schema_rewrites():
    assert grammar_schema({"description": "anything"}) == ANY
    assert grammar_schema({"type": "file"}) == ANY
    assert grammar_schema({"type": "string", "pattern": "[a-z]+", "maxLength": 10}) == {"type": "string",
                                                                                         "maxLength": 10}
    assert grammar_schema({"type": "string", "maxLength": 100000}) == {"type": "string"}
    assert grammar_schema({"type": ["string", "null"]}) == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert grammar_schema({"type": "integer", "nullable": True}) == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert grammar_schema({"type": "string", "enum": ["a", "b"]}) == {"enum": ["a", "b"]}
    point = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    assert grammar_schema(AWKWARD["local $ref"]) == {
        "type": "object", "properties": {"p": point}, "required": ["p"]}
    assert grammar_schema(AWKWARD["remote $ref"]) == {"type": "object", "properties": {"p": ANY}}
    both = {"allOf": [{"$ref": "#/$defs/A"}, {"properties": {"b": {"type": "boolean"}}, "required": ["b"]}],
            "$defs": {"A": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}}
    assert grammar_schema(both) == {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}},
                                    "required": ["a", "b"]}
    tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}}
    assert grammar_schema(tree)["properties"]["kids"]["items"]["properties"]["kids"]["items"] == ANY
    assert grammar_schema({"type": "object", "additionalProperties": False}) == {"type": "object", "properties": {}}


# --- prompt rendering -----------------------------------------------------------------------------


def test_prompt_renders_tools_calls_and_results_as_text_turns():
    prompt = render_tool_messages([{"role": "system", "content": "Be brief."}, *HISTORY], TOOLS)
    assert [m["role"] for m in prompt] == ["system", "user", "assistant", "user"]
    assert all(set(m) == {"role", "content"} and isinstance(m["content"], str) for m in prompt)
    system = prompt[0]["content"]
    assert system.startswith("Be brief.\n\nYou can use tools. Available tools:\n")
    assert "- read_file: Read a text file and return its content.\n  Parameters: " in system
    assert json.dumps(WRITE["function"]["parameters"]) in system
    assert "- finish: " in system and "call finish with your answer" in system
    assert '{"tool": "<tool name>", "arguments": {<arguments>}}' in system
    assert prompt[2]["content"] == '{"tool": "read_file", "arguments": {"path": "notes.txt"}}'
    assert prompt[3]["content"] == "[tool result call_1 (read_file)]\nBuy milk and eggs.\n[end tool result]"


def test_prompt_merges_parallel_results_and_keeps_assistant_text():
    calls = [{"id": f"call_{i}", "type": "function",
              "function": {"name": "read_file", "arguments": json.dumps({"path": p})}}
             for i, p in ((1, "a"), (2, "b"))]
    prompt = render_tool_messages([
        *ASK, {"role": "assistant", "content": "Reading both.", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "A"}]},
        {"role": "tool", "tool_call_id": "call_2", "content": "B"},
        {"role": "user", "content": "Thanks"},
    ], TOOLS, "required")
    assert prompt[0]["role"] == "system" and "finish" not in prompt[0]["content"]
    assert prompt[2]["content"] == ('Reading both.\n{"tool": "read_file", "arguments": {"path": "a"}}\n'
                                    '{"tool": "read_file", "arguments": {"path": "b"}}')
    assert prompt[3] == {"role": "user", "content": "[tool result call_1 (read_file)]\nA\n[end tool result]\n\n"
                                                    "[tool result call_2 (read_file)]\nB\n[end tool result]"}
    assert prompt[4] == {"role": "user", "content": "Thanks"}


def test_prompt_without_tool_list_for_tool_choice_none():
    prompt = render_tool_messages(HISTORY, TOOLS, "none")
    assert [m["role"] for m in prompt] == ["user", "assistant", "user"]
    assert "Buy milk and eggs." in prompt[2]["content"]


# --- response mapping -----------------------------------------------------------------------------


def test_a_tool_choice_becomes_an_openai_tool_call():
    mapped = tool_response(_raw('{"tool": "write_file", "arguments": {"path": "a.txt", "content": "hé"}}'),
                           TOOLS, call_number=3)
    choice = mapped["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"] == {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_3", "type": "function",
        "function": {"name": "write_file", "arguments": '{"path": "a.txt", "content": "hé"}'}}]}
    assert mapped["usage"] == _raw("")["usage"]


def test_the_finish_branch_becomes_plain_text():
    choice = tool_response(_raw('{"tool": "finish", "arguments": {"answer": "It says: buy milk."}}'),
                           TOOLS)["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "It says: buy milk."}
    assert choice["finish_reason"] == "stop"


@pytest.mark.parametrize("text", ['{"tool": "read_file", "argum', '{"tool": "delete_file", "arguments": {}}', "hi"])
def test_incomplete_or_unknown_replies_stay_text(text):
    raw = _raw(text, "length")
    assert tool_response(raw, TOOLS) == raw


class _FakeLlama:
    """Stands in for llama_cpp.Llama: records the call, answers with canned text."""

    def __init__(self, reply: str) -> None:
        self.reply, self.calls = reply, []

    def reset(self) -> None:
        pass

    def create_chat_completion(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        return _raw(self.reply)


def _fake_engine(reply: str) -> _local_model._Engine:
    import threading

    engine = _local_model._Engine.__new__(_local_model._Engine)
    engine.lock, engine._grammars, engine.llm = threading.Lock(), {}, _FakeLlama(reply)
    engine._tool_grammar = lambda plan: ("grammar", plan)
    return engine


def test_tool_calls_cross_litellm_without_a_model(monkeypatch):
    """Prompt, grammar and mapping wired through the custom provider and ModelClient."""
    engine = _fake_engine('{"tool": "read_file", "arguments": {"path": "eggs.txt"}}')
    monkeypatch.setattr(_local_model, "engine_for", lambda name: engine)
    result = asyncio.run(ModelClient(model="local/smollm2").complete(HISTORY, GenerationParams(max_tokens=40),
                                                                     tools=TOOLS))
    assert result.finish_reason == "tool_calls" and result.text == ""
    assert _check_call(result.tool_calls[0], 2) == {"path": "eggs.txt"}
    (call,) = engine.llm.calls
    assert call["grammar"][0] == "grammar" and call["max_tokens"] == 40 and "tools" not in call
    assert call["messages"][-1]["content"].endswith("Buy milk and eggs.\n[end tool result]")


# --- the non-tool path is unchanged ---------------------------------------------------------------


def _old_chat(llm: Any, messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    """_Engine.chat as it was before tool support."""
    kwargs = {k: v for k, v in params.items() if k in _local_model._PASSED_PARAMS and v is not None}
    fmt = kwargs.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        kwargs["response_format"] = {"type": "json_object", **({"schema": schema} if schema else {})}
    llm.reset()
    return llm.create_chat_completion(messages=messages, **kwargs)


@pytest.mark.parametrize("params", [
    {"temperature": 0.0, "max_tokens": 8},
    {"max_tokens": 8, "stop": ["x"], "seed": 1, "response_format": {
        "type": "json_schema", "json_schema": {"name": "v", "schema": {"type": "object"}}}},
    {"max_tokens": 8, "tools": [{"type": "web_search"}]},  # no function tool: the plain path as before
])
def test_non_tool_requests_reach_llama_cpp_as_before(params):
    messages = [{"role": "user", "content": "Say hi."}]
    new, old = _fake_engine("hi"), _FakeLlama("hi")
    assert new.chat(messages, dict(params)) == _old_chat(old, messages, dict(params))
    assert new.llm.calls == old.calls


def test_non_tool_cache_key_and_litellm_call_unchanged(monkeypatch):
    client = ModelClient(model="local/smollm2")
    params = GenerationParams(max_tokens=8)
    messages = [{"role": "user", "content": "Say hi."}]
    assert client.key(messages, params, sample=0, tools=(), response_format=None) == cache_key(
        model="local/smollm2", messages=messages, params=params.litellm_kwargs(), sample=0, tools=(),
        response_format=None)
    litellm = import_litellm()
    seen: list[dict[str, Any]] = []

    async def fake_acompletion(**kwargs: Any) -> Any:
        seen.append(kwargs)
        return litellm.ModelResponse(**_raw("hi"))

    monkeypatch.setattr(litellm, "acompletion", fake_acompletion)
    asyncio.run(client.complete(messages, params))
    asyncio.run(client.complete(messages, params, tools=TOOLS))
    assert set(seen[0]) == {"model", "messages", "num_retries", "max_retries", "timeout", "max_tokens", "temperature"}
    assert seen[1]["_skip_mcp_handler"] is True and seen[1]["tools"] == TOOLS


# --- litellm's MCP import -------------------------------------------------------------------------


def test_tools_do_not_import_mcp_nor_reach_the_provider(stub_env, monkeypatch):
    """litellm.completion() imports its MCP gateway (and the optional `mcp` package) when tools are passed."""
    for module in ("mcp", "litellm.responses.mcp.chat_completions_handler",
                   "litellm.responses.mcp.litellm_proxy_mcp_handler"):
        monkeypatch.setitem(sys.modules, module, None)  # importing it now raises ImportError
    call = {"id": "call_9", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}
    stub_env.add_rule("notes", Reply(tool_calls=[call]))
    client = ModelClient(model="openai/stub", api_base=stub_env.url, retry=RetryPolicy(max_attempts=1, timeout=5))
    result = asyncio.run(closing_sessions(client.complete(ASK, GenerationParams(max_tokens=20), tools=TOOLS)))
    assert result.tool_calls == (call,) and result.finish_reason == "tool_calls"
    body = stub_env.requests[0].body
    assert body["tools"] == TOOLS
    assert not {k for k in body if "mcp" in k}, "the flag is litellm's, not the provider's"


# --- the real model -------------------------------------------------------------------------------


def _local(choice: Any = None) -> ModelClient:
    return ModelClient(model="local/smollm2", extra={"tool_choice": choice} if choice is not None else {})


@needs_llama
def test_real_model_calls_one_of_two_tools():
    result = asyncio.run(_local("required").complete(ASK, GenerationParams(max_tokens=96), tools=TOOLS))
    assert result.finish_reason == "tool_calls" and result.text == ""
    assert len(result.tool_calls) == 1
    _check_call(result.tool_calls[0], 1)


@needs_llama
def test_real_model_continues_after_a_tool_result():
    """With the finish branch on offer the model may call a tool again or answer: either is well-formed."""
    result = asyncio.run(_local().complete(HISTORY, GenerationParams(max_tokens=64), tools=TOOLS))
    if result.tool_calls:
        assert result.finish_reason == "tool_calls" and len(result.tool_calls) == 1
        _check_call(result.tool_calls[0], 2)
    elif result.finish_reason == "stop":
        assert result.text.strip() and not result.text.lstrip().startswith("{"), "finish comes back as plain text"
    else:  # an unbounded answer cut by max_tokens: documented to come back as the raw text
        assert result.finish_reason == "length" and result.text.startswith('{"tool": "finish"')


@needs_llama
def test_real_model_tool_choice_none_gives_text():
    result = asyncio.run(_local("none").complete(HISTORY, GenerationParams(max_tokens=8), tools=TOOLS))
    assert result.text.strip() and not result.tool_calls
    assert result.finish_reason in ("stop", "length")
