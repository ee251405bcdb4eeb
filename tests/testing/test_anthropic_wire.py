"""The stub's Anthropic Messages dialect: bodies, event streams, token counts, errors, real clients."""

from __future__ import annotations

import asyncio
import json

import pytest

from pytest_ifbench._types import GenerationParams
from pytest_ifbench.models.client import ModelCallError, ModelClient, RetryPolicy
from pytest_ifbench.testing import Fault, Reply
from pytest_ifbench.testing.anthropic_wire import reply_blocks
from tests.testing._http import chat, content, post

FAKE_ANTHROPIC_KEY = "sk-ant-ifbench-test-0123456789"
WRITE_CALL = {"id": "toolu_1", "function": {"name": "Write", "arguments": {"path": "a.txt", "text": "hi"}}}


def messages_body(text="hello", **extra) -> dict:
    return {"model": "claude-x", "max_tokens": 64, "messages": [{"role": "user", "content": text}], **extra}


def send(server, body, *, path="/messages", **kwargs):
    return post(server.url, body, path=path, headers={"anthropic-version": "2023-06-01"}, **kwargs)


def events(raw: bytes) -> list[tuple[str, dict]]:
    """(event name, data) of each SSE event; the name must equal the data's ``type``."""
    out = []
    for part in raw.decode().split("\n\n"):
        if not part.strip():
            continue
        lines = dict(line.split(": ", 1) for line in part.splitlines())
        data = json.loads(lines["data"])
        assert lines["event"] == data["type"]
        out.append((lines["event"], data))
    return out


def assemble(stream: list[tuple[str, dict]]) -> dict:
    """The message a client rebuilds from a stream (what the SDKs do)."""
    message = None
    for kind, data in stream:
        if kind == "message_start":
            message = {**data["message"], "content": []}
        elif kind == "content_block_start":
            message["content"].append(dict(data["content_block"], _json=""))
        elif kind == "content_block_delta":
            block, delta = message["content"][data["index"]], data["delta"]
            key = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature",
                   "input_json_delta": "_json"}[delta["type"]]
            block[key] = block.get(key, "") + delta[{"_json": "partial_json"}.get(key, key)]
        elif kind == "message_delta":
            message.update(data["delta"])
            message["usage"].update(data["usage"])
    for block in message["content"]:
        raw = block.pop("_json")
        if block["type"] == "tool_use":
            block["input"] = json.loads(raw)
    return message


# --------------------------------------------------------------------------- messages


def test_default_reply_is_a_message(stub_server):
    status, headers, raw = send(stub_server, messages_body("What is two plus two?"))
    assert status == 200 and headers["Content-Type"] == "application/json"
    message = json.loads(raw)
    assert message["type"] == "message" and message["role"] == "assistant" and message["id"].startswith("msg_")
    assert message["model"] == "claude-x"
    assert message["content"] == [{"type": "text", "text": "stub reply to: What is two plus two?"}]
    assert message["stop_reason"] == "end_turn" and message["stop_sequence"] is None
    assert message["usage"] == {"input_tokens": 5, "output_tokens": 8}
    assert stub_server.calls == 1 and stub_server.requests[0].path == "/v1/messages"


def test_beta_query_blocks_system_and_the_shared_script(stub_server):
    stub_server.add_rule("capital", Reply(content="Paris"))
    body = messages_body(system=[{"type": "text", "text": "be brief"}])
    body["messages"] = [{"role": "user", "content": [{"type": "text", "text": "the capital?",
                                                       "cache_control": {"type": "ephemeral"}}]}]
    status, _, raw = send(stub_server, body, path="/messages?beta=true")
    assert status == 200 and json.loads(raw)["content"][0]["text"] == "Paris"
    assert content(chat(stub_server.url, "the capital of France")) == "Paris"  # the OpenAI dialect shares rules


def test_tool_calls_and_reasoning_become_blocks(stub_server):
    stub_server.add_rule("", Reply(content="<think>plan it</think>Writing.", tool_calls=[WRITE_CALL, {
        "function": {"name": "Read", "arguments": '{"path": "a.txt"}'}}]))
    message = json.loads(send(stub_server, messages_body())[2])
    assert message["content"] == [
        {"type": "thinking", "thinking": "plan it", "signature": ""},
        {"type": "text", "text": "Writing."},
        {"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {"path": "a.txt", "text": "hi"}},
        {"type": "tool_use", "id": message["content"][3]["id"], "name": "Read", "input": {"path": "a.txt"}},
    ]
    assert message["content"][3]["id"].startswith("toolu_stub_")
    assert message["stop_reason"] == "tool_use"


@pytest.mark.parametrize(("finish", "stop"), [("length", "max_tokens"), ("stop", "end_turn"),
                                              ("end_turn", "end_turn"), ("stop_sequence", "stop_sequence")])
def test_stop_reasons(stub_server, finish, stop):
    stub_server.add_rule("", Reply(content="x", finish_reason=finish))
    assert json.loads(send(stub_server, messages_body())[2])["stop_reason"] == stop


def test_stream_events_rebuild_the_same_message(stub_server):
    stub_server.add_rule("", Reply(content="<think>plan</think>Two words.", tool_calls=[WRITE_CALL]))
    plain = json.loads(send(stub_server, messages_body())[2])
    status, headers, raw = send(stub_server, messages_body(stream=True))
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    stream = events(raw)
    kinds = [kind for kind, _ in stream]
    assert kinds[:2] == ["message_start", "ping"] and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_start") == kinds.count("content_block_stop") == 3
    deltas = {data["delta"]["type"] for kind, data in stream if kind == "content_block_delta"}
    assert deltas == {"thinking_delta", "signature_delta", "text_delta", "input_json_delta"}
    rebuilt = assemble(stream)
    assert rebuilt["content"] == plain["content"] and rebuilt["stop_reason"] == "tool_use"
    assert rebuilt["usage"]["output_tokens"] == plain["usage"]["output_tokens"]


def test_count_tokens(stub_server):
    body = messages_body("one two three", system="four five")
    status, _, raw = send(stub_server, body, path="/messages/count_tokens")
    assert status == 200 and json.loads(raw) == {"input_tokens": 5}
    assert stub_server.calls == 0 and stub_server.requests[-1].path == "/v1/messages/count_tokens"
    status, _, raw = send(stub_server, b"{not json", path="/messages/count_tokens")
    assert status == 400 and json.loads(raw)["error"]["type"] == "invalid_request_error"


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("status", "kind"), [(400, "invalid_request_error"), (401, "authentication_error"),
                                              (429, "rate_limit_error"), (500, "api_error"),
                                              (529, "overloaded_error"), (502, "api_error")])
def test_injected_status_faults_have_anthropic_error_bodies(stub_server, status, kind):
    stub_server.inject_faults(Fault(kind="status", status=status, message="nope", retry_after=2))
    got, headers, raw = send(stub_server, messages_body())
    assert got == status and headers["Retry-After"] == "2"
    assert json.loads(raw) == {"type": "error", "error": {"type": kind, "message": "nope"}}


def test_bad_bodies_malformed_faults_and_bad_scripts(stub_server):
    status, _, raw = send(stub_server, b"[1, 2]")
    assert status == 400 and json.loads(raw)["type"] == "error"
    stub_server.inject_faults(Fault(kind="malformed"), Fault(kind="malformed"))
    with pytest.raises(ValueError):
        json.loads(send(stub_server, messages_body())[2])
    assert b"event: message_start" in send(stub_server, messages_body(stream=True))[2]
    stub_server.add_rule("", Reply(tool_calls=[{"function": {"name": "Write", "arguments": "[1]"}}]))
    status, _, raw = send(stub_server, messages_body())
    assert status == 500 and json.loads(raw)["error"]["type"] == "api_error"
    with pytest.raises(ValueError):
        reply_blocks(Reply(tool_calls=[{"function": {"name": "x", "arguments": "not json"}}]))


def test_unknown_paths_still_get_openai_404s(stub_server):
    status, _, raw = send(stub_server, messages_body(), path="/messages/batches")
    assert status == 404 and json.loads(raw)["error"]["code"] == "not_found"


# --------------------------------------------------------------------------- real clients


def anthropic_client(server, **kwargs) -> ModelClient:
    return ModelClient(model="anthropic/claude-x", api_base=server.url.removesuffix("/v1"),
                       retry=RetryPolicy(max_attempts=1, timeout=10), **kwargs)


def test_litellm_anthropic_provider_round_trip(stub_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_ANTHROPIC_KEY)
    stub_server.add_rule("write", Reply(content="<think>plan</think>On it.", tool_calls=[WRITE_CALL]))
    tools = [{"type": "function", "function": {"name": "Write", "description": "write a file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}}}}]
    result = asyncio.run(anthropic_client(stub_server).complete(
        [{"role": "system", "content": "sys"}, {"role": "user", "content": "write a.txt"}],
        GenerationParams(max_tokens=50), tools=tools))
    assert (result.text, result.reasoning, result.finish_reason) == ("On it.", "plan", "tool_calls")
    assert [dict(c) for c in result.tool_calls] == [{"id": "toolu_1", "type": "function", "function": {
        "name": "Write", "arguments": json.dumps({"path": "a.txt", "text": "hi"})}}]
    request = stub_server.requests[-1]
    assert request.headers["x-api-key"] == FAKE_ANTHROPIC_KEY and request.headers["anthropic-version"]
    assert request.body["system"] and request.body["tools"][0]["input_schema"]["properties"]["path"]


def test_litellm_anthropic_streaming_and_errors(stub_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_ANTHROPIC_KEY)
    from pytest_ifbench.models.client import import_litellm

    litellm = import_litellm()
    stub_server.add_rule("", Reply(content="streamed reply here"))

    async def stream() -> str:
        response = await litellm.acompletion(model="anthropic/claude-x", api_base=stub_server.url[:-3],
                                             messages=[{"role": "user", "content": "hi"}], max_tokens=20,
                                             stream=True)
        return "".join([chunk.choices[0].delta.content or "" async for chunk in response])

    assert asyncio.run(stream()) == "streamed reply here"
    stub_server.inject_faults(Fault(kind="status", status=400, message="prompt is too long"))
    with pytest.raises(ModelCallError, match="prompt is too long") as info:
        asyncio.run(anthropic_client(stub_server).complete([{"role": "user", "content": "x"}]))
    assert info.value.status == 400


def test_the_anthropic_sdk_if_installed(stub_server):
    anthropic = pytest.importorskip("anthropic")
    stub_server.add_rule("", Reply(content="sdk ok", tool_calls=[WRITE_CALL]))
    sdk = anthropic.Anthropic(api_key=FAKE_ANTHROPIC_KEY, base_url=stub_server.url[:-3], max_retries=0)
    message = sdk.messages.create(model="claude-x", max_tokens=20, messages=[{"role": "user", "content": "hi"}])
    assert message.content[0].text == "sdk ok" and message.content[1].input == {"path": "a.txt", "text": "hi"}
    with sdk.messages.stream(model="claude-x", max_tokens=20, messages=[{"role": "user", "content": "hi"}]) as s:
        final = s.get_final_message()
    assert final.stop_reason == "tool_use" and final.content[1].name == "Write"
