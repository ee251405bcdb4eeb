"""The recording proxy against the stub server: translation both ways, streams, errors, the raw log."""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from pytest_ifbench._types import GenerationParams
from pytest_ifbench.agents.normalize import load_raw, normalize
from pytest_ifbench.agents.proxy import LoopThread, RecordingProxy
from pytest_ifbench.agents.wire.documents import Accepts
from pytest_ifbench.models.cache import ResponseCache
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.testing import Fault, Reply
from tests._support import FAKE_KEY

ONE_TRY = RetryPolicy(max_attempts=1, timeout=10)
CLI_KEY = "sk-ant-cli-secret-0123456789"
WRITE_TOOL = {"name": "Write", "description": "Write a file",
              "input_schema": {"type": "object", "properties": {"path": {"type": "string"}},
                               "required": ["path"], "additionalProperties": False}}
WRITE_CALL = {"id": "call_w", "function": {"name": "Write", "arguments": {"path": "hello.txt"}}}


def openai_client(server, **kwargs) -> ModelClient:
    return ModelClient(model="openai/stub", api_base=server.url, retry=ONE_TRY, **kwargs)


@pytest.fixture
def proxy(stub_env, tmp_path):
    # The stub stands for a model that takes images (and PDFs) as they are: they pass through.
    with RecordingProxy(openai_client(stub_env), log_path=tmp_path / "raw.jsonl", session_id="s1", tcp=True,
                        socket_path=tmp_path / "proxy.sock", accepts=Accepts(pdf=True, images=True)) as running:
        yield running


def body(*messages, **extra) -> dict:
    return {"model": "claude-sonnet-4-5", "max_tokens": 200, "messages": list(messages) or [
        {"role": "user", "content": "hello"}], **extra}


def call(proxy: RecordingProxy, payload, path="/v1/messages"):
    """POST to the proxy's TCP listener with a CLI's headers; (status, headers, raw body)."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    request = urllib.request.Request(proxy.url + path, data=data, method="POST", headers={
        "content-type": "application/json", "x-api-key": CLI_KEY, "anthropic-version": "2023-06-01"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def events(raw: bytes) -> list[dict]:
    return [json.loads(part.split("data: ", 1)[1]) for part in raw.decode().split("\n\n") if "data: " in part]


def log_lines(proxy: RecordingProxy) -> list[dict]:
    return [json.loads(line) for line in proxy.log_path.read_text().splitlines()]


# --------------------------------------------------------------------------- translation


def test_text_reply_and_the_raw_record(proxy, stub_env):
    stub_env.add_rule("hello", Reply(content="Hi there"))
    status, headers, raw = call(proxy, body(system=[{"type": "text", "text": "Be kind.",
                                                      "cache_control": {"type": "ephemeral"}}]))
    assert status == 200 and headers["Content-Type"] == "application/json"
    message = json.loads(raw)
    assert message["type"] == "message" and message["role"] == "assistant" and message["model"] == "claude-sonnet-4-5"
    assert message["content"] == [{"type": "text", "text": "Hi there"}] and message["stop_reason"] == "end_turn"
    assert message["usage"]["input_tokens"] > 0 and message["usage"]["output_tokens"] > 0
    sent = stub_env.requests[-1].body
    assert sent["messages"] == [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "hello"}]
    assert sent["max_tokens"] == 200 and sent["temperature"] == 0.0
    (record,) = log_lines(proxy)
    assert set(record) == {"session_id", "biz_id", "request_time", "request_body", "response_body"}
    assert record["session_id"] == "s1" and isinstance(record["request_time"], int)
    assert record["request_body"]["system"][0]["cache_control"] == {"type": "ephemeral"}  # unchanged
    assert record["response_body"] == message
    text = proxy.log_path.read_text()
    assert CLI_KEY not in text and FAKE_KEY not in text and "x-api-key" not in text
    assert proxy.calls == 1 and proxy.failures == []


def test_tool_use_and_tool_result_round_trip(proxy, stub_env):
    stub_env.add_rule("make the file", Reply(content="<think>I will write</think>Writing.", tool_calls=[WRITE_CALL]))
    status, _, raw = call(proxy, body({"role": "user", "content": "make the file"}, tools=[WRITE_TOOL]))
    first = json.loads(raw)
    assert status == 200 and first["stop_reason"] == "tool_use"
    thinking, text, use = first["content"]
    assert thinking == {"type": "thinking", "thinking": "I will write", "signature": ""}
    assert text == {"type": "text", "text": "Writing."}
    assert use["type"] == "tool_use" and use["name"] == "Write" and use["input"] == {"path": "hello.txt"}
    assert use["id"].startswith("toolu_")
    sent = stub_env.requests[-1].body
    assert sent["tools"] == [{"type": "function", "function": {
        "name": "Write", "description": "Write a file", "parameters": WRITE_TOOL["input_schema"]}}]

    stub_env.add_rule("", Reply(content="Done."))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    follow = body({"role": "user", "content": "make the file"},
                  {"role": "assistant", "content": first["content"]},
                  {"role": "user", "content": [
                      {"type": "tool_result", "tool_use_id": use["id"], "content": [
                          {"type": "text", "text": "File created"}, image]},
                      {"type": "text", "text": "thanks"}]},
                  tools=[WRITE_TOOL], temperature=0.3, stop_sequences=["STOP"], top_k=5)
    status, _, raw = call(proxy, follow)
    assert status == 200 and json.loads(raw)["content"] == [{"type": "text", "text": "Done."}]
    sent = stub_env.requests[-1].body
    assert sent["messages"][1:] == [
        {"role": "assistant", "content": "Writing.", "tool_calls": [{"id": use["id"], "type": "function", "function": {
            "name": "Write", "arguments": '{"path": "hello.txt"}'}}]},
        {"role": "tool", "tool_call_id": use["id"],
         "content": "File created\n\n[an image: it follows in the next user message]"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                                     {"type": "text", "text": "thanks"}]},
    ]
    assert sent["temperature"] == 0.3 and sent["stop"] == ["STOP"] and "top_k" not in sent
    assert "thinking blocks of earlier replies are not sent back to the model" in proxy.notes
    assert "request field 'top_k' is not passed to the model" in proxy.notes

    (traj,) = normalize(load_raw(proxy.log_path))
    (tool_call,) = traj.tool_calls()
    assert tool_call.name == "Write" and tool_call.arguments == {"path": "hello.txt"}
    assert tool_call.result is not None and tool_call.result.content == "File created"
    assert traj.final_text() == "Done." and traj.assistant_turns()[0].reasoning_content == "I will write"


def test_tool_use_ids_are_stable_for_the_same_request(proxy, stub_env):
    stub_env.add_rule("", Reply(tool_calls=[WRITE_CALL, {"function": {"name": "Write", "arguments": "oops"}}]))
    payload = body(tools=[WRITE_TOOL])
    first, second = (json.loads(call(proxy, payload)[2])["content"] for _ in range(2))
    assert first == second and first[0]["id"] != first[1]["id"]
    assert first[1]["input"] == {}  # arguments that are not a JSON object reach the CLI as {}


def test_streaming_answers_the_same_message_as_events(proxy, stub_env):
    stub_env.add_rule("", Reply(content="<think>hm</think>Two words.", tool_calls=[WRITE_CALL]))
    plain = json.loads(call(proxy, body(tools=[WRITE_TOOL]))[2])
    status, headers, raw = call(proxy, body(tools=[WRITE_TOOL], stream=True))
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    stream = events(raw)
    assert [e["type"] for e in stream] == [
        "message_start",
        *["content_block_start", "content_block_delta", "content_block_delta", "content_block_stop"],
        *["content_block_start", "content_block_delta", "content_block_stop"] * 2,
        "message_delta", "message_stop"]
    assert stream[0]["message"]["id"] == plain["id"] and stream[0]["message"]["content"] == []
    deltas = [e["delta"] for e in stream if e["type"] == "content_block_delta"]
    assert deltas[0] == {"type": "thinking_delta", "thinking": "hm"}
    assert deltas[2] == {"type": "text_delta", "text": "Two words."}
    assert json.loads(deltas[3]["partial_json"]) == {"path": "hello.txt"}
    assert stream[-2]["delta"]["stop_reason"] == "tool_use"
    assert log_lines(proxy)[-1]["response_body"] == plain  # recorded as the assembled message


def test_max_tokens_cap_defaults_and_cache(stub_env, tmp_path):
    client = openai_client(stub_env, cache=ResponseCache(tmp_path / "cache"))
    with RecordingProxy(client, log_path=tmp_path / "raw.jsonl", tcp=True, max_tokens_cap=64,
                        defaults=GenerationParams(temperature=0.7, seed=3)) as proxy:
        stub_env.add_rule("", Reply(content="ok", finish_reason="length"))
        for _ in range(2):
            status, _, raw = call(proxy, body())
            assert status == 200 and json.loads(raw)["stop_reason"] == "max_tokens"
        assert "max_tokens is capped at 64" in proxy.notes
    sent = stub_env.requests[-1].body
    assert (sent["max_tokens"], sent["temperature"], sent["seed"]) == (64, 0.7, 3)
    assert stub_env.calls == 1 and client.stats.cache_hits == 1  # the repeat came from the cache
    assert len(load_raw(tmp_path / "raw.jsonl")) == 2  # ...and is recorded all the same


# --------------------------------------------------------------------------- other endpoints and errors


def test_count_tokens_head_and_unknown_paths(proxy, stub_env):
    status, _, raw = call(proxy, body(system="x" * 400), path="/v1/messages/count_tokens?beta=true")
    assert status == 200 and json.loads(raw)["input_tokens"] > 100
    head = urllib.request.Request(proxy.url + "/", method="HEAD")
    with urllib.request.urlopen(head, timeout=5) as response:
        assert response.status == 200 and response.read() == b""
    status, _, raw = call(proxy, body(), path="/v1/complete")
    assert status == 404 and json.loads(raw)["error"]["type"] == "not_found_error"
    assert "unknown endpoint asked for: POST /v1/complete" in proxy.notes
    assert stub_env.calls == 0 and proxy.calls == 0 and not proxy.log_path.read_text()


def test_bad_requests_are_refused_and_listed_as_untranslatable(proxy, stub_env):
    """Not failures of a model call: the runner reports them only if the CLI then ends without an answer
    (the agent can make its CLI send anything on the way, an MCP server at the relay's address)."""
    status, _, raw = call(proxy, b"not json")
    assert status == 400 and json.loads(raw)["type"] == "error"
    status, _, raw = call(proxy, body({"role": "tool", "content": "x"}))
    assert status == 400 and "role" in json.loads(raw)["error"]["message"]
    assert len(proxy.untranslatable) == 1 and proxy.failures == [] and stub_env.calls == 0


def test_a_failed_model_call_is_a_clear_error_and_a_recorded_failure(proxy, stub_env, monkeypatch):
    monkeypatch.setenv("UPSTREAM_TOKEN", "tok-very-secret-value")
    stub_env.inject_faults(Fault(kind="status", status=503, message="upstream down tok-very-secret-value"))
    status, headers, raw = call(proxy, body(stream=True))
    error = json.loads(raw)
    assert status == 400 and headers["x-should-retry"] == "false"
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    message = error["error"]["message"]
    assert message.startswith("model call failed:") and "upstream down" in message and "503" in message
    assert "tok-very-secret-value" not in message and "[REDACTED]" in message
    assert proxy.failures == [message]
    (record,) = log_lines(proxy)
    assert record["response_body"] == error and "tok-very-secret-value" not in proxy.log_path.read_text()
    stub_env.inject_faults(Fault(kind="status", status=413, message="too big"))
    assert call(proxy, body())[0] == 413


def test_requests_are_served_concurrently(proxy, stub_env):
    barrier = threading.Barrier(2, timeout=10)

    def together(request_body: dict) -> Reply:
        barrier.wait()  # a proxy that serialised calls would break the barrier
        return Reply(content="together")

    stub_env.default = together
    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(call(proxy, body())[0])) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert results == [200, 200] and proxy.calls == 2


# --------------------------------------------------------------------------- transports and loops


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=30)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        directory = os.open(os.path.dirname(self.path), os.O_PATH)  # a long path, like the proxy binds it
        try:
            self.sock.connect(f"/proc/self/fd/{directory}/{os.path.basename(self.path)}")
        finally:
            os.close(directory)


def unix_call(path: Path, payload: dict) -> tuple[int, dict]:
    conn = UnixConnection(str(path))
    try:
        conn.request("POST", "/v1/messages", json.dumps(payload), {"content-type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_unix_socket_long_paths_and_an_outside_loop(stub_env, tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    sock = deep / "proxy.sock"
    assert len(str(sock)) > 108  # longer than sun_path: bound through /proc/self/fd
    loop = LoopThread()
    try:
        with RecordingProxy(openai_client(stub_env), log_path=tmp_path / "raw.jsonl", socket_path=sock,
                            submit=loop.submit) as proxy:
            stub_env.add_rule("", Reply(content="over unix"))
            for _ in range(2):
                status, message = unix_call(sock, body())
                assert status == 200 and message["content"][0]["text"] == "over unix"
            with pytest.raises(RuntimeError, match="tcp=True"):
                _ = proxy.url
        assert not sock.exists() and loop.loop.is_running()  # the caller's loop is left alone
    finally:
        loop.close()
    with pytest.raises(ValueError):
        RecordingProxy(openai_client(stub_env), log_path=tmp_path / "x.jsonl")


def test_the_anthropic_wire_behind_litellm(stub_env, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-0123456789")
    client = ModelClient(model="anthropic/claude-upstream", api_base=stub_env.url.removesuffix("/v1"), retry=ONE_TRY)
    stub_env.add_rule("make", Reply(content="<think>go</think>Sure.", tool_calls=[WRITE_CALL]))
    stub_env.add_rule("", Reply(content="All done."))
    with RecordingProxy(client, log_path=tmp_path / "raw.jsonl", tcp=True) as proxy:
        first = json.loads(call(proxy, body({"role": "user", "content": "make it"}, tools=[WRITE_TOOL],
                                            system="sys", stream=True))[2].split(b"\n\n")[0].split(b"data: ")[1])
        assert first["type"] == "message_start"
        reply = log_lines(proxy)[-1]["response_body"]
        assert [b["type"] for b in reply["content"]] == ["thinking", "text", "tool_use"]
        assert reply["content"][0]["thinking"] == "go" and reply["content"][2]["input"] == {"path": "hello.txt"}
        upstream = stub_env.requests[-1]
        assert upstream.path == "/v1/messages" and upstream.body["model"] == "claude-upstream"
        assert upstream.body["tools"][0]["name"] == "Write" and upstream.body["system"]
        use = reply["content"][2]
        status, _, raw = call(proxy, body({"role": "user", "content": "make it"},
                                          {"role": "assistant", "content": reply["content"]},
                                          {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"],
                                                                        "content": "ok"}]}, tools=[WRITE_TOOL]))
        assert status == 200 and json.loads(raw)["content"][0]["text"] == "All done."
        upstream = stub_env.requests[-1].body["messages"]
        result = upstream[-1]["content"][0]
        assert result["type"] == "tool_result" and result["tool_use_id"] == use["id"]
        assert upstream[-2]["content"][-1]["type"] == "tool_use"
    (traj,) = normalize(load_raw(tmp_path / "raw.jsonl"))
    assert [c.name for c in traj.tool_calls()] == ["Write"] and traj.final_text() == "All done."
