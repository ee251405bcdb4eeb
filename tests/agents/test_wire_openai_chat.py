"""The OpenAI Chat Completions wire format through the recording proxy (real HTTP on 127.0.0.1, the stub
server behind it): translation, streams, errors, routing, and a raw log with the same trajectory shape as
the equivalent Anthropic Messages conversation."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from pytest_ifbench.agents.normalize import load_raw, normalize
from pytest_ifbench.agents.proxy import RecordingProxy
from pytest_ifbench.agents.wire import ANTHROPIC_MESSAGES, OPENAI_CHAT
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.testing import Reply

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
          "additionalProperties": False}
CHAT_TOOL = {"type": "function", "function": {"name": "Write", "description": "Write a file", "parameters": SCHEMA}}
MESSAGES_TOOL = {"name": "Write", "description": "Write a file", "input_schema": SCHEMA}
WRITE_CALL = {"id": "call_w", "function": {"name": "Write", "arguments": {"path": "hello.txt"}}}


def start(stub, tmp_path, name: str, *wires) -> RecordingProxy:
    client = ModelClient(model="openai/stub", api_base=stub.url, retry=RetryPolicy(max_attempts=1, timeout=10))
    return RecordingProxy(client, log_path=tmp_path / f"{name}.jsonl", session_id="s1", tcp=True,
                          wire_formats=wires or (OPENAI_CHAT,)).start()


@pytest.fixture
def chat(stub_env, tmp_path):
    proxy = start(stub_env, tmp_path, "chat")
    yield proxy
    proxy.stop()


def post(proxy: RecordingProxy, payload, path="/v1/chat/completions"):
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    request = urllib.request.Request(proxy.url + path, data=data, method="POST", headers={
        "content-type": "application/json", "authorization": "Bearer sk-cli-secret-0123456789"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def chat_body(*messages, **extra) -> dict:
    return {"model": "gpt-5-codex", "max_completion_tokens": 200, "messages": list(messages), **extra}


def test_a_tool_call_round_trip(chat, stub_env):
    stub_env.add_rule("make the file", Reply(content="Writing.", tool_calls=[WRITE_CALL]))
    status, headers, raw = post(chat, chat_body({"role": "system", "content": "Be kind."},
                                                {"role": "user", "content": "make the file"}, tools=[CHAT_TOOL]))
    answer = json.loads(raw)
    assert status == 200 and headers["Content-Type"] == "application/json" and answer["object"] == "chat.completion"
    (choice,) = answer["choices"]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] == "Writing."
    (use,) = choice["message"]["tool_calls"]
    assert use["type"] == "function" and use["function"]["name"] == "Write"
    assert json.loads(use["function"]["arguments"]) == {"path": "hello.txt"}
    assert answer["usage"]["prompt_tokens"] > 0 and answer["model"] == "gpt-5-codex"
    sent = stub_env.requests[-1].body
    assert sent["tools"] == [CHAT_TOOL] and sent["max_tokens"] == 200
    assert sent["messages"] == [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "make the file"}]

    stub_env.add_rule("", Reply(content="Done."))
    status, _, raw = post(chat, chat_body(
        {"role": "system", "content": "Be kind."}, {"role": "user", "content": "make the file"},
        choice["message"], {"role": "tool", "tool_call_id": use["id"], "content": "File created"},
        {"role": "user", "content": "thanks"}, tools=[CHAT_TOOL], stop="STOP", top_k=5))
    assert status == 200 and json.loads(raw)["choices"][0]["message"] == {"role": "assistant", "content": "Done."}
    sent = stub_env.requests[-1].body
    assert sent["messages"][2:] == [
        {"role": "assistant", "content": "Writing.", "tool_calls": [{"id": use["id"], "type": "function", "function": {
            "name": "Write", "arguments": '{"path": "hello.txt"}'}}]},
        {"role": "tool", "tool_call_id": use["id"], "content": "File created"},
        {"role": "user", "content": "thanks"}]
    assert sent["stop"] == ["STOP"] and "request field 'top_k' is not passed to the model" in chat.notes

    records = [json.loads(line) for line in chat.log_path.read_text().splitlines()]
    assert [r["wire"] for r in records] == ["openai_chat"] * 2
    assert records[1]["request_body"]["messages"][2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": use["id"], "content": "File created"},
        {"type": "text", "text": "thanks"}]}
    assert "sk-cli-secret" not in chat.log_path.read_text()
    (traj,) = normalize(load_raw(chat.log_path))
    (call,) = traj.tool_calls()
    assert call.name == "Write" and call.arguments == {"path": "hello.txt"} and call.result.content == "File created"
    assert traj.final_text() == "Done."


def test_the_same_trajectory_as_the_anthropic_wire(stub_env, tmp_path):
    """One conversation with a tool call, once per dialect: the two raw logs normalize alike."""
    stub_env.add_rule("make the file", Reply(content="<think>plan</think>Writing.", tool_calls=[WRITE_CALL]))
    stub_env.add_rule("", Reply(content="Done."))
    anthropic, openai = start(stub_env, tmp_path, "messages", ANTHROPIC_MESSAGES), start(stub_env, tmp_path, "chat")
    try:
        first = json.loads(post(anthropic, {"model": "m", "max_tokens": 200, "system": "Be kind.", "tools": [
            MESSAGES_TOOL], "messages": [{"role": "user", "content": "make the file"}]}, "/v1/messages")[2])
        use = first["content"][-1]
        post(anthropic, {"model": "m", "max_tokens": 200, "system": "Be kind.", "tools": [MESSAGES_TOOL], "messages": [
            {"role": "user", "content": "make the file"}, {"role": "assistant", "content": first["content"]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "ok"},
                                         {"type": "text", "text": "go on"}]}]}, "/v1/messages")

        start_chat = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "make the file"}]
        status, _, raw = post(openai, chat_body(*start_chat, tools=[CHAT_TOOL], stream=True,
                                                stream_options={"include_usage": True}))
        chunks = [json.loads(line[6:]) for line in raw.decode().split("\n\n") if line.startswith("data: {")]
        assert status == 200 and raw.endswith(b"data: [DONE]\n\n")
        assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0
        assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
        deltas = [c["choices"][0]["delta"] for c in chunks[:-2]]
        assert {"reasoning_content": "plan"} in deltas and {"content": "Writing."} in deltas
        (call,) = next(d["tool_calls"] for d in deltas if "tool_calls" in d)
        assert call["id"] == use["id"]  # the same conversation gets the same tool-call id in both dialects
        reply = {"role": "assistant", "content": "Writing.", "reasoning_content": "plan",
                 "tool_calls": [{k: call[k] for k in ("id", "type", "function")}]}
        post(openai, chat_body(*start_chat, reply, {"role": "tool", "tool_call_id": call["id"], "content": "ok"},
                               {"role": "user", "content": [{"type": "text", "text": "go on"}]}, tools=[CHAT_TOOL]))
    finally:
        anthropic.stop()
        openai.stop()
    (via_messages,) = normalize(load_raw(anthropic.log_path))
    (via_chat,) = normalize(load_raw(openai.log_path))
    assert via_chat.messages == via_messages.messages and via_chat.tools == via_messages.tools
    assert [m.role for m in via_chat.messages] == ["system", "user", "assistant", "tool", "user", "assistant"]
    assert via_chat.assistant_turns()[0].reasoning_content == "plan" and via_chat.final_text() == "Done."


def test_errors_and_routing_speak_the_dialect(chat, stub_env):
    status, headers, raw = post(chat, chat_body({"role": "robot", "content": "x"}))
    error = json.loads(raw)["error"]
    assert status == 400 and error["type"] == "invalid_request_error" and "role" in error["message"]
    assert headers["x-should-retry"] == "false" and len(chat.untranslatable) == 1 and stub_env.calls == 0
    recorded = json.loads(chat.log_path.read_text().splitlines()[-1])
    # an untranslatable request is a refused request: an event in the log, never a call (agents/proxy.py)
    assert recorded["request_body"] is None and recorded["response_body"] is None
    assert recorded["refused"]["kind"] == "untranslatable" and recorded["refused"]["status"] == 400
    assert "'robot'" in recorded["refused"]["reason"]
    status, _, raw = post(chat, chat_body({"role": "user", "content": "x"}), path="/v1/messages")
    assert status == 404 and json.loads(raw)["error"]["type"] == "not_found_error"
    assert "unknown endpoint asked for: POST /v1/messages" in chat.notes
    stub_env.add_rule("", Reply(content="hi"))
    status, _, raw = post(chat, chat_body({"role": "user", "content": "x"}), path="/chat/completions")
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == "hi"


def test_two_wire_formats_cannot_claim_one_path(stub_env, tmp_path):
    client = ModelClient(model="openai/stub", api_base=stub_env.url)
    with pytest.raises(ValueError, match="both serve /v1/chat/completions"):
        RecordingProxy(client, log_path=tmp_path / "x.jsonl", tcp=True, wire_formats=(OPENAI_CHAT, OPENAI_CHAT))
