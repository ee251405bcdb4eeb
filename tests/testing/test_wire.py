"""The wire formats: the OpenAI dialect's bodies and streams, and the seam a second format plugs into."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping

import pytest

from pytest_ifbench.testing import Reply, StubServer
from pytest_ifbench.testing.openai_wire import MODEL_IDS, OpenAIWire, error_body
from pytest_ifbench.testing.wire import CHAT, ChatRequest, Payload
from tests.testing._http import chat, content, post, user


def sse_events(raw: bytes) -> list[str]:
    return [part[len("data: "):] for part in raw.decode().split("\n\n") if part.startswith("data: ")]


# --------------------------------------------------------------------------- completions


def test_default_reply_shape(stub_server):
    resp = chat(stub_server.url, "What is two plus two?", model="my-model")
    assert resp["object"] == "chat.completion"
    assert resp["id"] and isinstance(resp["created"], int)
    assert resp["model"] == "my-model"
    choice = resp["choices"][0]
    assert choice["index"] == 0
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["content"] == "stub reply to: What is two plus two?"
    assert "tool_calls" not in choice["message"]
    assert choice["finish_reason"] == "stop"
    usage = resp["usage"]
    assert usage["prompt_tokens"] == 5
    assert usage["completion_tokens"] == len(["stub", "reply", "to:", "What", "is", "two", "plus", "two?"])
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_default_reply_truncates_and_uses_last_user_message(stub_server):
    body = {
        "model": "stub",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "x" * 500},
        ],
    }
    status, _, raw = post(stub_server.url, body)
    assert status == 200
    assert content(json.loads(raw)) == "stub reply to: " + "x" * 200


def test_url_and_both_paths(stub_server):
    assert stub_server.url == f"http://127.0.0.1:{stub_server.port}/v1"
    base = stub_server.url[: -len("/v1")]
    status, _, raw = post(base, user("hi"))
    assert status == 200 and content(json.loads(raw)) == "stub reply to: hi"
    assert [r.path for r in stub_server.requests] == ["/chat/completions"]


def test_list_content_messages(stub_server):
    stub_server.add_rule(r"describe the image", Reply(content="a cat"))
    parts = [
        {"type": "text", "text": "Please"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "text", "text": "describe the image"},
    ]
    body = {"model": "stub", "messages": [{"role": "user", "content": parts}]}
    status, _, raw = post(stub_server.url, body)
    assert status == 200 and content(json.loads(raw)) == "a cat"
    stub_server.reset()
    status, _, raw = post(stub_server.url, body)
    assert content(json.loads(raw)) == "stub reply to: Please\ndescribe the image"


def test_tool_calls_reply(stub_server):
    calls = [
        {"id": "call_abc", "type": "function",
         "function": {"name": "get_weather", "arguments": json.dumps({"city": "Oslo"})}},
        {"function": {"name": "noop", "arguments": {"x": 1}}},  # id/type filled, dict args encoded
    ]
    stub_server.add_rule("weather", Reply(tool_calls=calls))
    resp = chat(stub_server.url, "weather in Oslo?", tools=[{"type": "function", "function": {"name": "get_weather"}}])
    msg = resp["choices"][0]["message"]
    assert resp["choices"][0]["finish_reason"] == "tool_calls"
    assert msg["content"] is None
    assert msg["tool_calls"][0] == calls[0]
    second = msg["tool_calls"][1]
    assert second["id"] and second["type"] == "function"
    assert json.loads(second["function"]["arguments"]) == {"x": 1}


def test_bad_tool_calls_give_500(stub_server):
    stub_server.add_rule("", Reply(tool_calls=["not a dict"]))
    status, _, raw = post(stub_server.url, user("x"))
    assert status == 500 and "tool call #0 must be a dict" in json.loads(raw)["error"]["message"]


def test_finish_reason_override(stub_server):
    stub_server.add_rule("", Reply(content="cut", finish_reason="length"))
    assert chat(stub_server.url)["choices"][0]["finish_reason"] == "length"


# --------------------------------------------------------------------------- streaming


def test_streaming(stub_server):
    stub_server.add_rule("", Reply(content="one two three"))
    status, headers, raw = post(stub_server.url, user("count", stream=True))
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    assert headers["Cache-Control"] == "no-cache"
    events = sse_events(raw)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "m" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "one two three"
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"]["completion_tokens"] == 3
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])


def test_streaming_tool_calls(stub_server):
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    stub_server.add_rule("", Reply(tool_calls=[call]))
    _, _, raw = post(stub_server.url, user("x", stream=True))
    chunks = [json.loads(e) for e in sse_events(raw) if e.startswith("{")]
    deltas = [tc for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    assert deltas[0]["id"] == "c1" and deltas[0]["function"]["name"] == "f"
    assert "".join(d["function"].get("arguments", "") for d in deltas) == '{"a": 1}'
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


# --------------------------------------------------------------------------- other endpoints, errors


def test_404_and_models(stub_server):
    with urllib.request.urlopen(stub_server.url + "/models", timeout=10) as resp:
        data = json.loads(resp.read())
    assert data["object"] == "list" and [m["id"] for m in data["data"]] == list(MODEL_IDS)
    assert data["data"][0]["object"] == "model"
    with pytest.raises(urllib.error.HTTPError) as exc_info:
        urllib.request.urlopen(stub_server.url + "/nope", timeout=10)
    assert exc_info.value.code == 404
    assert "error" in json.loads(exc_info.value.read())
    status, _, raw = post(stub_server.url, {"x": 1}, path="/embeddings")
    assert status == 404 and json.loads(raw)["error"]["message"]
    assert stub_server.calls == 0
    assert [r.path for r in stub_server.requests] == ["/v1/models", "/v1/nope", "/v1/embeddings"]


def test_bad_json(stub_server):
    status, _, raw = post(stub_server.url, b"{not json")
    assert status == 400
    assert json.loads(raw)["error"]["type"] == "invalid_request_error"
    status, _, _ = post(stub_server.url, b"[1, 2]")
    assert status == 400
    assert stub_server.calls == 2
    assert stub_server.requests[0].body is None and stub_server.requests[0].raw == b"{not json"


@pytest.mark.parametrize(("status", "err_type", "code"), [
    (400, "invalid_request_error", "invalid_request"),
    (429, "rate_limit_error", "rate_limit_exceeded"),
    (500, "server_error", "500"),
    (418, "client_error", "418"),
])
def test_error_body_types(status, err_type, code):
    assert json.loads(error_body(status, "msg")) == {
        "error": {"message": "msg", "type": err_type, "param": None, "code": code}}


# --------------------------------------------------------------------------- the seam


class EchoWire:
    """A second, made-up dialect: ``POST /v1/echo`` answers the reply text as text/plain."""

    name = "echo"

    def endpoint(self, path: str, headers: Mapping[str, str]) -> str | None:
        return CHAT if path == "/v1/echo" and headers.get("x-echo") == "1" else None

    def chat_request(self, body: dict) -> ChatRequest:
        return ChatRequest(body=body, text=str(body.get("say", "")), model=None, stream=False)

    def chat_response(self, request: ChatRequest, reply: Reply, seq: int) -> Payload:
        return Payload(f"{seq}:{reply.content}".encode(), "text/plain", {"X-Echo": "1"})

    def models_response(self) -> Payload:  # pragma: no cover - no models endpoint
        raise AssertionError

    def error(self, status: int, message: str) -> Payload:
        return Payload(f"echo error {status}: {message}".encode(), "text/plain")

    def malformed(self, request: ChatRequest) -> Payload:  # pragma: no cover - not injected here
        raise AssertionError


class TwoFormatServer(StubServer):
    wire_formats = (OpenAIWire(), EchoWire())


def test_a_second_wire_format_shares_the_script_and_the_recording():
    with TwoFormatServer() as server:
        server.add_rule("^ping$", Reply(content="pong"))
        status, headers, raw = post(server.url, {"say": "ping"}, path="/echo", headers={"X-Echo": "1"})
        assert (status, headers["Content-Type"], headers["X-Echo"], raw) == (200, "text/plain", "1", b"1:pong")
        assert content(chat(server.url, "ping")) == "pong"  # the OpenAI dialect still answers its paths
        status, _, raw = post(server.url, b"[]", path="/echo", headers={"X-Echo": "1"})
        assert status == 400 and raw.startswith(b"echo error 400")
        status, _, raw = post(server.url, {"say": "ping"}, path="/echo")  # headers decide the route
        assert status == 404 and json.loads(raw)["error"]["code"] == "not_found"
        assert [r.path for r in server.requests] == ["/v1/echo", "/v1/chat/completions", "/v1/echo", "/v1/echo"]
        assert server.calls == 3
