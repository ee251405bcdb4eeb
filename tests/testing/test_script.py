"""Scripted replies, rules and injected faults, through plain HTTP."""

from __future__ import annotations

import http.client
import json
import socket
import urllib.error

import pytest

from pytest_ifbench.testing import Fault, Reply, StubServer
from pytest_ifbench.testing.openai_wire import MALFORMED_BODY
from pytest_ifbench.testing.script import Script
from pytest_ifbench.testing.wire import ChatRequest
from tests.testing._http import chat, connect, content, held, post, user

# --------------------------------------------------------------------------- replies and rules


def test_custom_default_reply_and_callable():
    with StubServer(default=Reply(content="fixed")) as srv:
        assert content(chat(srv.url, "anything")) == "fixed"
    seen = []

    def dyn(body: dict) -> Reply:
        seen.append(body["model"])
        return Reply(content=body["messages"][-1]["content"].upper())

    with StubServer(default=dyn) as srv:
        assert content(chat(srv.url, "shout", model="m1")) == "SHOUT"
    assert seen == ["m1"]


def test_default_is_settable_and_str_is_a_reply(stub_server):
    stub_server.default = lambda body: "plain string"
    assert content(chat(stub_server.url)) == "plain string"
    assert stub_server.default is stub_server.script.default


def test_callable_that_raises_gives_500(stub_server):
    def boom(body):
        raise KeyError("nope")

    stub_server.add_rule("", boom)
    status, _, raw = post(stub_server.url, user("x"))
    assert status == 500
    assert "KeyError" in json.loads(raw)["error"]["message"]


def test_rules_times_and_order(stub_server):
    stub_server.add_rule(r"capital of \w+", Reply(content="Paris"), times=2)
    stub_server.add_rule(r"capital", Reply(content="fallback capital"))
    stub_server.add_rule(r"^exact$", Reply(content="exact"))
    assert content(chat(stub_server.url, "the capital of France?")) == "Paris"
    assert content(chat(stub_server.url, "the capital of Spain?")) == "Paris"
    # first rule exhausted -> second rule
    assert content(chat(stub_server.url, "the capital of Italy?")) == "fallback capital"
    assert content(chat(stub_server.url, "exact")) == "exact"
    assert content(chat(stub_server.url, "not exact")) == "stub reply to: not exact"


def test_rule_regex_is_dotall(stub_server):
    stub_server.add_rule(r"start.*end", Reply(content="spans lines"))
    assert content(chat(stub_server.url, "start\nmiddle\nend")) == "spans lines"


def test_rules_model_filter(stub_server):
    stub_server.add_rule("", Reply(content="from A"), model="model-a")
    stub_server.add_rule("", Reply(content="anyone"))
    assert content(chat(stub_server.url, "q", model="model-a")) == "from A"
    assert content(chat(stub_server.url, "q", model="model-b")) == "anyone"


def test_script_without_a_server():
    script = Script()
    script.add_rule("^a$", Reply(content="A"), times=1)
    script.inject_faults(Fault(kind="disconnect"), match="^b$")
    req_a = ChatRequest(body={}, text="a", model=None, stream=False)
    req_b = ChatRequest(body={}, text="b", model=None, stream=False)
    assert script.take_fault(req_a) is None and script.pending_faults == 1
    assert script.resolve(req_a).content == "A"
    assert script.resolve(req_a).content == "stub reply to: a"
    assert script.take_fault(req_b).kind == "disconnect" and script.pending_faults == 0
    with pytest.raises(ValueError):
        script.add_rule("", Reply(), times=-1)
    with pytest.raises(TypeError):
        script.add_rule("", "not a Reply")
    with pytest.raises(TypeError):
        script.inject_faults("status")


def test_reply_validation():
    with pytest.raises(TypeError):
        Reply(content=3)
    with pytest.raises(TypeError):
        Reply(tool_calls={"not": "a list"})
    with pytest.raises(ValueError):
        Reply(latency=-1)
    assert Reply(tool_calls=[{}]).effective_finish_reason == "tool_calls"


# --------------------------------------------------------------------------- faults


def test_fault_status_with_retry_after(stub_server):
    stub_server.inject_faults(
        Fault(kind="status", status=429, retry_after=2, message="slow down"),
        Fault(kind="status", status=503),
    )
    status, headers, raw = post(stub_server.url, user("a"))
    assert status == 429
    assert headers["Retry-After"] == "2"
    err = json.loads(raw)["error"]
    assert err["message"] == "slow down" and err["type"] and err["code"]
    status, headers, raw = post(stub_server.url, user("a"))
    assert status == 503 and headers.get("Retry-After") is None
    assert json.loads(raw)["error"]["message"] == "injected fault"
    # queue drained -> normal answers again
    assert content(chat(stub_server.url, "a")) == "stub reply to: a"
    assert [r.fault for r in stub_server.requests] == ["status", "status", None]
    assert stub_server.calls == 3


def test_faults_consumed_before_rules_and_match_filter(stub_server):
    stub_server.add_rule("", Reply(content="ruled"))
    stub_server.inject_faults(Fault(kind="status", status=401), match="secret")
    assert content(chat(stub_server.url, "public")) == "ruled"
    assert stub_server.pending_faults == 1
    status, _, _ = post(stub_server.url, user("the secret"))
    assert status == 401
    assert stub_server.pending_faults == 0
    assert content(chat(stub_server.url, "the secret")) == "ruled"


def test_fault_timeout_outlasts_the_client(stub_server):
    stub_server.inject_faults(Fault(kind="timeout", hang=120))
    with pytest.raises((TimeoutError, socket.timeout, urllib.error.URLError)):
        post(stub_server.url, user("a"), timeout=0.3)
    # The client gave up while the fault still holds its request: in flight, unanswered.
    (rec,) = stub_server.requests
    assert rec.fault == "timeout" and rec.answered_at is None
    assert stub_server.in_flight == 1
    # the next request is answered normally (stop() at teardown wakes the hanging handler)
    assert content(chat(stub_server.url, "b")) == "stub reply to: b"


def test_fault_timeout_answers_after_hang(stub_server):
    stub_server.inject_faults(Fault(kind="timeout", hang=0.2))
    assert content(chat(stub_server.url, "late", timeout=30)) == "stub reply to: late"
    (rec,) = stub_server.requests
    assert rec.fault == "timeout"
    assert held(rec) >= 0.2 * 0.9  # the server's own clock; the hang is the feature


def test_fault_malformed(stub_server):
    stub_server.inject_faults(Fault(kind="malformed"), Fault(kind="malformed"))
    status, headers, raw = post(stub_server.url, user("a"))
    assert status == 200
    assert int(headers["Content-Length"]) == len(raw)
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)
    status, headers, raw = post(stub_server.url, user("a", stream=True))
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    assert raw == b"data: " + MALFORMED_BODY + b"\n\n"


def test_fault_disconnect(stub_server):
    stub_server.inject_faults(Fault(kind="disconnect"))
    conn = connect(stub_server.url)
    conn.request("POST", "/v1/chat/completions", json.dumps(user("a")), {"Content-Type": "application/json"})
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        conn.getresponse()
    conn.close()
    assert stub_server.requests[0].fault == "disconnect"
    assert content(chat(stub_server.url, "again")) == "stub reply to: again"


def test_fault_validation():
    with pytest.raises(ValueError):
        Fault(kind="explode")
    with pytest.raises(ValueError):
        Fault(kind="status", status=99)
    with pytest.raises(ValueError):
        Fault(kind="timeout", hang=-1)
    with pytest.raises(TypeError):
        Fault("status")  # kw_only
    with pytest.raises(AttributeError):  # frozen (FrozenInstanceError)
        Fault(kind="status").status = 429


# --------------------------------------------------------------------------- scripts as JSON


def test_from_script():
    srv = StubServer.from_script({
        "latency": 0.0,
        "default": "from the script",
        "rules": [{"match": "hi", "reply": {"content": "hello!"}, "times": 1}],
        "faults": [{"kind": "status", "status": 429, "retry_after": 1}],
    })
    with srv:
        status, headers, _ = post(srv.url, user("hi"))
        assert status == 429 and headers["Retry-After"] == "1"
        assert content(chat(srv.url, "hi")) == "hello!"
        assert content(chat(srv.url, "hi")) == "from the script"
    with pytest.raises(ValueError):
        StubServer.from_script({"rulez": []})
    with pytest.raises(ValueError):
        StubServer.from_script({"rules": [{"match": "x", "reply": {"contents": "typo"}}]})
    with pytest.raises(ValueError):
        StubServer.from_script({"rules": [{"match": "x"}]})
    with pytest.raises(TypeError):
        StubServer.from_script({"faults": ["status"]})
    with pytest.raises(TypeError):
        StubServer.from_script([])
