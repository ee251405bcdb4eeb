"""Tests for pytest_ifbench.stub_server, through plain urllib / http.client."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from pytest_ifbench.stub_server import Fault, RecordedRequest, Reply, StubServer

# --------------------------------------------------------------------------- helpers


def _post(
    url: str,
    body,
    *,
    path: str = "/chat/completions",
    headers=None,
    timeout: float = 5.0,
):
    """POST JSON (or raw bytes); return (status, headers, body bytes) — errors included."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(
        url + path,
        data=data,
        method="POST",
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def _chat(url: str, text="hello", *, model="stub", timeout: float = 5.0, **extra):
    body = {"model": model, "messages": [{"role": "user", "content": text}], **extra}
    status, _headers, raw = _post(url, body, timeout=timeout)
    assert status == 200, raw
    return json.loads(raw)


def _content(resp: dict) -> str | None:
    return resp["choices"][0]["message"]["content"]


@pytest.fixture
def server():
    with StubServer() as srv:
        yield srv


# --------------------------------------------------------------------------- basics


def test_default_reply_shape(server):
    resp = _chat(server.url, "What is two plus two?", model="my-model")
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
    assert usage["completion_tokens"] == len(
        ["stub", "reply", "to:", "What", "is", "two", "plus", "two?"]
    )
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_default_reply_truncates_and_uses_last_user_message(server):
    long = "x" * 500
    body = {
        "model": "stub",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": long},
        ],
    }
    status, _, raw = _post(server.url, body)
    assert status == 200
    assert _content(json.loads(raw)) == "stub reply to: " + "x" * 200


def test_url_and_both_paths(server):
    assert server.url == f"http://127.0.0.1:{server.port}/v1"
    base = server.url[: -len("/v1")]
    status, _, raw = _post(
        base, {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    )
    assert status == 200 and _content(json.loads(raw)) == "stub reply to: hi"
    assert [r.path for r in server.requests] == ["/chat/completions"]


def test_url_requires_running_server():
    srv = StubServer()
    with pytest.raises(RuntimeError):
        _ = srv.url


def test_custom_default_reply_and_callable():
    with StubServer(default=Reply(content="fixed")) as srv:
        assert _content(_chat(srv.url, "anything")) == "fixed"
    seen = []

    def dyn(body: dict) -> Reply:
        seen.append(body["model"])
        return Reply(content=body["messages"][-1]["content"].upper())

    with StubServer(default=dyn) as srv:
        assert _content(_chat(srv.url, "shout", model="m1")) == "SHOUT"
    assert seen == ["m1"]


def test_callable_that_raises_gives_500(server):
    def boom(body):
        raise KeyError("nope")

    server.add_rule("", boom)
    status, _, raw = _post(
        server.url, {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    )
    assert status == 500
    assert "KeyError" in json.loads(raw)["error"]["message"]


# --------------------------------------------------------------------------- rules


def test_rules_times_and_order(server):
    server.add_rule(r"capital of \w+", Reply(content="Paris"), times=2)
    server.add_rule(r"capital", Reply(content="fallback capital"))
    server.add_rule(r"^exact$", Reply(content="exact"))
    assert _content(_chat(server.url, "the capital of France?")) == "Paris"
    assert _content(_chat(server.url, "the capital of Spain?")) == "Paris"
    # first rule exhausted -> second rule
    assert _content(_chat(server.url, "the capital of Italy?")) == "fallback capital"
    assert _content(_chat(server.url, "exact")) == "exact"
    assert _content(_chat(server.url, "not exact")) == "stub reply to: not exact"


def test_rule_regex_is_dotall(server):
    server.add_rule(r"start.*end", Reply(content="spans lines"))
    assert _content(_chat(server.url, "start\nmiddle\nend")) == "spans lines"


def test_rules_model_filter(server):
    server.add_rule("", Reply(content="from A"), model="model-a")
    server.add_rule("", Reply(content="anyone"))
    assert _content(_chat(server.url, "q", model="model-a")) == "from A"
    assert _content(_chat(server.url, "q", model="model-b")) == "anyone"


def test_list_content_messages(server):
    server.add_rule(r"describe the image", Reply(content="a cat"))
    body = {
        "model": "stub",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Please"},
                    {
                        "type": "image_url",
                        "image_url": {"url": "data:image/png;base64,AAAA"},
                    },
                    {"type": "text", "text": "describe the image"},
                ],
            }
        ],
    }
    status, _, raw = _post(server.url, body)
    assert status == 200 and _content(json.loads(raw)) == "a cat"
    server.reset()
    status, _, raw = _post(server.url, body)
    assert _content(json.loads(raw)) == "stub reply to: Please\ndescribe the image"


def test_tool_calls_reply(server):
    calls = [
        {
            "id": "call_abc",
            "type": "function",
            "function": {
                "name": "get_weather",
                "arguments": json.dumps({"city": "Oslo"}),
            },
        },
        {
            "function": {"name": "noop", "arguments": {"x": 1}}
        },  # id/type filled, dict args encoded
    ]
    server.add_rule("weather", Reply(tool_calls=calls))
    resp = _chat(
        server.url,
        "weather in Oslo?",
        tools=[{"type": "function", "function": {"name": "get_weather"}}],
    )
    msg = resp["choices"][0]["message"]
    assert resp["choices"][0]["finish_reason"] == "tool_calls"
    assert msg["content"] is None
    assert msg["tool_calls"][0] == calls[0]
    second = msg["tool_calls"][1]
    assert second["id"] and second["type"] == "function"
    assert json.loads(second["function"]["arguments"]) == {"x": 1}


def test_finish_reason_override(server):
    server.add_rule("", Reply(content="cut", finish_reason="length"))
    assert _chat(server.url)["choices"][0]["finish_reason"] == "length"


# --------------------------------------------------------------------------- faults


def test_fault_status_with_retry_after(server):
    server.inject_faults(
        Fault(kind="status", status=429, retry_after=2, message="slow down"),
        Fault(kind="status", status=503),
    )
    status, headers, raw = _post(
        server.url, {"model": "m", "messages": [{"role": "user", "content": "a"}]}
    )
    assert status == 429
    assert headers["Retry-After"] == "2"
    err = json.loads(raw)["error"]
    assert err["message"] == "slow down" and err["type"] and err["code"]
    status, headers, raw = _post(
        server.url, {"model": "m", "messages": [{"role": "user", "content": "a"}]}
    )
    assert status == 503 and headers.get("Retry-After") is None
    assert json.loads(raw)["error"]["message"] == "injected fault"
    # queue drained -> normal answers again
    assert _content(_chat(server.url, "a")) == "stub reply to: a"
    assert [r.fault for r in server.requests] == ["status", "status", None]
    assert server.calls == 3


def test_faults_consumed_before_rules_and_match_filter(server):
    server.add_rule("", Reply(content="ruled"))
    server.inject_faults(Fault(kind="status", status=401), match="secret")
    assert _content(_chat(server.url, "public")) == "ruled"
    assert server.pending_faults == 1
    status, _, _ = _post(
        server.url,
        {"model": "m", "messages": [{"role": "user", "content": "the secret"}]},
    )
    assert status == 401
    assert server.pending_faults == 0
    assert _content(_chat(server.url, "the secret")) == "ruled"


def test_fault_timeout(server):
    server.inject_faults(Fault(kind="timeout", hang=1.0))
    t0 = time.monotonic()
    with pytest.raises((TimeoutError, socket.timeout, urllib.error.URLError)):
        _post(
            server.url,
            {"model": "m", "messages": [{"role": "user", "content": "a"}]},
            timeout=0.3,
        )
    assert time.monotonic() - t0 < 0.9
    # the next request is answered normally
    assert _content(_chat(server.url, "b")) == "stub reply to: b"
    assert server.requests[0].fault == "timeout"


def test_fault_timeout_answers_after_hang(server):
    server.inject_faults(Fault(kind="timeout", hang=0.2))
    t0 = time.monotonic()
    assert _content(_chat(server.url, "late")) == "stub reply to: late"
    assert time.monotonic() - t0 >= 0.2


def test_fault_malformed(server):
    server.inject_faults(Fault(kind="malformed"))
    status, headers, raw = _post(
        server.url, {"model": "m", "messages": [{"role": "user", "content": "a"}]}
    )
    assert status == 200
    assert int(headers["Content-Length"]) == len(raw)
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)


def test_fault_disconnect(server):
    server.inject_faults(Fault(kind="disconnect"))
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "a"}]})
    conn.request(
        "POST", "/v1/chat/completions", body, {"Content-Type": "application/json"}
    )
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        conn.getresponse()
    conn.close()
    assert server.requests[0].fault == "disconnect"
    assert _content(_chat(server.url, "again")) == "stub reply to: again"


def test_fault_validation():
    with pytest.raises(ValueError):
        Fault(kind="explode")
    with pytest.raises(TypeError):
        Fault("status")  # kw_only
    with pytest.raises(AttributeError):  # frozen (FrozenInstanceError)
        Fault(kind="status").status = 429


# --------------------------------------------------------------------------- protocol


def test_404_and_models(server):
    with urllib.request.urlopen(server.url + "/models", timeout=5) as resp:
        data = json.loads(resp.read())
    assert data["object"] == "list" and data["data"][0]["object"] == "model"
    with pytest.raises(urllib.error.HTTPError) as exc_info:
        urllib.request.urlopen(server.url + "/nope", timeout=5)
    assert exc_info.value.code == 404
    assert "error" in json.loads(exc_info.value.read())
    status, _, raw = _post(server.url, {"x": 1}, path="/embeddings")
    assert status == 404 and json.loads(raw)["error"]["message"]
    assert server.calls == 0
    assert [r.path for r in server.requests] == [
        "/v1/models",
        "/v1/nope",
        "/v1/embeddings",
    ]


def test_bad_json(server):
    status, _, raw = _post(server.url, b"{not json")
    assert status == 400
    assert json.loads(raw)["error"]["type"] == "invalid_request_error"
    status, _, _ = _post(server.url, b"[1, 2]")
    assert status == 400
    assert server.calls == 2
    assert server.requests[0].body is None and server.requests[0].raw == b"{not json"


def test_keep_alive_on_one_connection(server):
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
    try:
        for i in range(3):
            body = json.dumps(
                {"model": "m", "messages": [{"role": "user", "content": f"n{i}"}]}
            )
            conn.request(
                "POST",
                "/v1/chat/completions",
                body,
                {"Content-Type": "application/json"},
            )
            resp = conn.getresponse()
            assert resp.status == 200
            assert resp.version == 11
            assert _content(json.loads(resp.read())) == f"stub reply to: n{i}"
        sock_before = conn.sock
        conn.request("GET", "/v1/models")
        conn.getresponse().read()
        assert conn.sock is sock_before  # the same socket was reused
    finally:
        conn.close()


def test_sequential_keep_alive_requests_are_fast(server):
    # Guards against Nagle + delayed-ACK stalls (~40 ms per request).
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]})
    try:
        t0 = time.monotonic()
        for _ in range(50):
            conn.request(
                "POST",
                "/v1/chat/completions",
                body,
                {"Content-Type": "application/json"},
            )
            conn.getresponse().read()
        assert time.monotonic() - t0 < 1.0
    finally:
        conn.close()


def test_streaming(server):
    server.add_rule("", Reply(content="one two three"))
    status, headers, raw = _post(
        server.url,
        {
            "model": "m",
            "stream": True,
            "messages": [{"role": "user", "content": "count"}],
        },
    )
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    events = [
        line[len("data: ") :]
        for line in raw.decode().split("\n\n")
        if line.startswith("data: ")
    ]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(
        c["object"] == "chat.completion.chunk" and c["model"] == "m" for c in chunks
    )
    assert len({c["id"] for c in chunks}) == 1
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == "one two three"
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"]["completion_tokens"] == 3
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])


def test_streaming_tool_calls(server):
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "f", "arguments": '{"a": 1}'},
    }
    server.add_rule("", Reply(tool_calls=[call]))
    _, _, raw = _post(
        server.url,
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]},
    )
    chunks = [
        json.loads(part[6:]) for part in raw.decode().split("\n\n") if part.startswith("data: {")
    ]
    deltas = [
        tc for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert deltas[0]["id"] == "c1" and deltas[0]["function"]["name"] == "f"
    assert "".join(d["function"].get("arguments", "") for d in deltas) == '{"a": 1}'
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


# --------------------------------------------------------------------------- concurrency, latency


def test_concurrency_with_latency():
    n, latency = 40, 0.2
    with StubServer(latency=latency) as srv:
        results: list[str] = []
        errors: list[BaseException] = []

        def worker(i: int) -> None:
            try:
                results.append(_content(_chat(srv.url, f"q{i}", timeout=10)))
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=15)
        elapsed = time.monotonic() - t0
        assert not errors, errors
        assert sorted(results) == sorted(f"stub reply to: q{i}" for i in range(n))
        assert elapsed < n * latency / 4, elapsed
        assert srv.peak_concurrency >= 20
        assert srv.calls == n
        assert srv.in_flight == 0


def test_per_reply_latency_overrides_server_latency():
    with StubServer(latency=2.0) as srv:
        srv.add_rule("fast", Reply(content="quick", latency=0.0))
        t0 = time.monotonic()
        assert _content(_chat(srv.url, "fast please")) == "quick"
        assert time.monotonic() - t0 < 1.0
    with StubServer() as srv:
        srv.add_rule("", Reply(content="slow", latency=0.25))
        t0 = time.monotonic()
        _chat(srv.url)
        assert time.monotonic() - t0 >= 0.25


def test_stop_is_prompt_with_sleeping_handlers():
    srv = StubServer(latency=30).start()
    url = srv.url

    def fire():
        try:
            _post(
                url,
                {"model": "m", "messages": [{"role": "user", "content": "x"}]},
                timeout=10,
            )
        except OSError:  # the server drops the connection on stop
            pass

    t = threading.Thread(target=fire, daemon=True)
    t.start()
    deadline = time.monotonic() + 5
    while srv.in_flight == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    t0 = time.monotonic()
    srv.stop()
    assert time.monotonic() - t0 < 2.0
    t.join(timeout=5)
    assert not t.is_alive()
    srv.stop()  # idempotent


# --------------------------------------------------------------------------- recording, reset


def test_recorded_requests(server):
    _post(
        server.url,
        {"model": "m", "messages": [{"role": "user", "content": "rec"}]},
        headers={"Authorization": "Bearer sk-test-123", "X-Custom": "v"},
    )
    (rec,) = server.requests
    assert isinstance(rec, RecordedRequest)
    assert rec.path == "/v1/chat/completions"
    assert rec.headers["authorization"] == "Bearer sk-test-123"
    assert rec.headers["x-custom"] == "v"
    assert rec.body == {"model": "m", "messages": [{"role": "user", "content": "rec"}]}
    assert json.loads(rec.raw) == rec.body
    assert abs(rec.received_at - time.time()) < 10
    assert rec.fault is None
    assert rec.last_user_text == "rec"
    snapshot = server.requests
    snapshot.clear()
    assert len(server.requests) == 1  # a copy was returned


def test_reset(server):
    server.add_rule("", Reply(content="ruled"))
    server.inject_faults(Fault(kind="status", status=500), match="never-sent")
    _chat(server.url)
    assert server.calls == 1 and server.requests and server.peak_concurrency >= 1
    server.reset()
    assert server.calls == 0 and server.requests == [] and server.peak_concurrency == 0
    assert server.pending_faults == 0
    assert _content(_chat(server.url, "after")) == "stub reply to: after"


def test_from_script():
    srv = StubServer.from_script(
        {
            "latency": 0.0,
            "rules": [{"match": "hi", "reply": {"content": "hello!"}, "times": 1}],
            "faults": [{"kind": "status", "status": 429, "retry_after": 1}],
        }
    )
    with srv:
        status, headers, _ = _post(
            srv.url, {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        )
        assert status == 429 and headers["Retry-After"] == "1"
        assert _content(_chat(srv.url, "hi")) == "hello!"
        assert _content(_chat(srv.url, "hi")) == "stub reply to: hi"
    with pytest.raises(ValueError):
        StubServer.from_script({"rulez": []})
    with pytest.raises(ValueError):
        StubServer.from_script(
            {"rules": [{"match": "x", "reply": {"contents": "typo"}}]}
        )


# --------------------------------------------------------------------------- CLI


def test_cli(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "latency": 0.0,
                "rules": [
                    {"match": "ping", "reply": {"content": "pong"}, "times": None}
                ],
                "faults": [{"kind": "status", "status": 429, "retry_after": 1}],
            }
        )
    )
    url_file = tmp_path / "url.txt"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest_ifbench.stub_server",
            "--port",
            "0",
            "--latency",
            "0.01",
            "--script",
            str(script),
            "--url-file",
            str(url_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=str(tmp_path),
    )
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("http://127.0.0.1:") and line.endswith("/v1"), (
            line,
            proc.stderr.read() if proc.poll() is not None else "",
        )
        assert url_file.read_text().strip() == line
        status, headers, _ = _post(
            line, {"model": "m", "messages": [{"role": "user", "content": "ping"}]}
        )
        assert status == 429 and headers["Retry-After"] == "1"
        assert _content(_chat(line, "ping")) == "pong"
        assert _content(_chat(line, "other")) == "stub reply to: other"
    finally:
        proc.terminate()
        try:
            rc = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait()
            raise
        stderr = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    assert rc == 0, stderr
    assert stderr == ""  # no per-request logging


def test_import_is_light():
    # Measured after importing the package itself, so that whatever the package
    # __init__ pulls in is not blamed on this module.
    code = (
        "import sys, time; import pytest_ifbench; before = set(sys.modules); "
        "t = time.perf_counter(); import pytest_ifbench.stub_server; dt = time.perf_counter() - t; "
        "new = set(sys.modules) - before; "
        "print(dt, any(m.split('.')[0] == 'litellm' for m in new), 'http.server' in new)"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    elapsed, new_litellm, new_http_server = out.stdout.split()
    assert new_litellm == "False"
    assert new_http_server == "False"  # http.server is imported lazily, on start()
    assert float(elapsed) < 0.5  # generous for slow CI; typically ~15 ms
