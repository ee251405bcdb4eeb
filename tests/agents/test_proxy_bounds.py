"""The recording proxy's bounds and who it serves: bodies over the size cap (413), nesting over the depth
cap (400, no traceback), connections over the cap (503, a bounded number of threads), refused requests
recorded as events and never as calls, successful answers redacted on their way back into the sandbox,
and only the sandbox relay's CLI connections served when ``relay_only``."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from pytest_ifbench.agents import proxy_handler
from pytest_ifbench.agents.normalize import load_raw, normalize
from pytest_ifbench.agents.proxy import RecordingProxy
from pytest_ifbench.agents.proxy_bounds import MAX_CONNECTIONS, MAX_RECORDED_REFUSALS
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.testing import Reply
from pytest_ifbench.verifiers.trajectory import no_relay_abuse
from tests._support import FAKE_KEY

ONE_TRY = RetryPolicy(max_attempts=1, timeout=10)
HELLO = {"model": "claude-sonnet-4-5", "max_tokens": 50, "messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture
def proxy(stub_env, tmp_path):
    client = ModelClient(model="openai/stub", api_base=stub_env.url, retry=ONE_TRY)
    with RecordingProxy(client, log_path=tmp_path / "raw.jsonl", session_id="s1", tcp=True) as running:
        yield running


def post(url: str, data: bytes, timeout: float = 20) -> tuple[int, bytes]:
    request = urllib.request.Request(url + "/v1/messages", data=data, method="POST",
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def raw_exchange(url: str, head: bytes, body: bytes = b"", timeout: float = 10) -> bytes:
    """Send ``head`` + ``body`` on one connection and read the answer until the proxy closes it."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as conn:
        conn.sendall(head + body)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    return data


def refusals(proxy: RecordingProxy) -> list[dict]:
    return [json.loads(line)["refused"] for line in proxy.log_path.read_text().splitlines() if '"refused"' in line]


def test_a_body_over_the_cap_is_refused_unread_with_413(proxy, stub_env):
    head = b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    answer = raw_exchange(proxy.url, head % (1 << 30), b'{"messages": [')  # 1 GiB announced, 14 bytes sent
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"request_too_large" in answer and stub_env.calls == 0 and proxy.calls == 0
    (event,) = refusals(proxy)
    assert event["kind"] == "too_large" and event["status"] == 413 and event["bytes"] == 1 << 30
    assert post(proxy.url, json.dumps(HELLO).encode())[0] == 200  # the proxy goes on serving


def test_a_chunked_body_over_the_cap_is_refused(proxy, monkeypatch):
    monkeypatch.setattr(proxy_handler, "MAX_BODY_BYTES", 1000)
    chunk = b"x" * 600
    head = b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    answer = raw_exchange(proxy.url, head, (b"258\r\n" + chunk + b"\r\n") * 2 + b"0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413") and refusals(proxy)[0]["kind"] == "too_large"


@pytest.mark.parametrize("depth", [200, 200_000])
def test_deep_json_is_a_clean_400(proxy, stub_env, capfd, depth):
    status, raw = post(proxy.url, b'{"messages": ' + b"[" * depth + b"]" * depth + b"}")
    assert status == 400 and b"nests deeper than 128 levels" in raw and stub_env.calls == 0
    assert "Traceback" not in capfd.readouterr().err
    assert refusals(proxy)[0]["kind"] == "too_deep"


def test_malformed_json_is_recorded_and_the_log_still_normalizes(proxy, stub_env):
    assert post(proxy.url, b'{"messages": 5}')[0] == 400  # untranslatable: an event, not a call
    assert post(proxy.url, b"not json")[0] == 400
    assert post(proxy.url, json.dumps(HELLO).encode())[0] == 200
    proxy.stop()
    (main,) = normalize(load_raw(proxy.log_path))
    kinds = [e["kind"] for e in main.meta["refused_requests"]]
    assert kinds == ["untranslatable", "not_json"] and main.final_text() and proxy.calls == 1


def test_connections_over_the_cap_get_503_and_threads_stay_bounded(proxy, stub_env):
    before = threading.active_count()
    host, port = proxy.url.removeprefix("http://").split(":")
    held = [socket.create_connection((host, int(port)), timeout=10) for _ in range(MAX_CONNECTIONS + 100)]
    try:
        time.sleep(1.0)
        assert threading.active_count() - before <= MAX_CONNECTIONS + 2
        turned_away = 0
        for conn in held[MAX_CONNECTIONS:]:
            conn.settimeout(5)
            turned_away += conn.recv(100).startswith(b"HTTP/1.1 503")
        assert turned_away == 100
    finally:
        for conn in held:
            conn.close()
    kinds = [e["kind"] for e in refusals(proxy)]
    assert kinds == ["over_capacity"] * 100 and stub_env.calls == 0
    deadline = time.monotonic() + 10
    while threading.active_count() > before + 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert post(proxy.url, json.dumps(HELLO).encode())[0] == 200


def test_a_flood_of_refusals_is_recorded_up_to_the_cap_then_counted(proxy):
    for _ in range(MAX_RECORDED_REFUSALS + 20):
        proxy.refuse("not_cli", "a test refusal", status=403)
    proxy.stop()
    events = [json.loads(line)["refused"] for line in proxy.log_path.read_text().splitlines()]
    assert len(events) == MAX_RECORDED_REFUSALS + 1 and events[-1] == {
        "kind": "omitted", "count": 20, "reason": "20 more refused requests, not recorded one by one"}
    assert proxy.refused == MAX_RECORDED_REFUSALS + 20 and proxy.calls == 0


@pytest.mark.parametrize("stream", [False, True])
def test_a_key_echoed_in_a_successful_reply_never_reaches_the_sandbox(proxy, stub_env, stream):
    stub_env.add_rule("hello", Reply(content=f"your key is {FAKE_KEY} -- and reversed {FAKE_KEY[::-1]}"))
    status, raw = post(proxy.url, json.dumps({**HELLO, "stream": stream}).encode())
    assert status == 200 and FAKE_KEY not in raw.decode() and FAKE_KEY[::-1] not in raw.decode()
    assert b"[REDACTED]" in raw
    assert FAKE_KEY not in proxy.log_path.read_text()


def test_relay_only_serves_nothing_that_is_not_the_relay(stub_env, tmp_path):
    client = ModelClient(model="openai/stub", api_base=stub_env.url, retry=ONE_TRY)
    sock = tmp_path / "proxy.sock"
    with RecordingProxy(client, log_path=tmp_path / "raw.jsonl", session_id="s1", tcp=True, socket_path=sock,
                        relay_only=True) as proxy:
        status, raw = post(proxy.url, json.dumps(HELLO).encode())
        assert status == 403 and b"only the agent CLI itself" in raw
        with socket.socket(socket.AF_UNIX) as conn:  # this process is no sandbox's pid 2
            conn.connect(str(sock))
            conn.sendall(b"IFBENCH-RELAY cli\n" + b"POST /v1/messages HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")
            assert conn.recv(100).startswith(b"HTTP/1.1 403")
    assert stub_env.calls == 0 and proxy.calls == 0
    events = refusals(proxy)
    assert [e["kind"] for e in events] == ["not_cli", "not_cli"]
    assert "TCP connection" in events[0]["reason"] and "direct connection to the proxy's socket" in events[1]["reason"]
    (main,) = normalize(load_raw(proxy.log_path))
    assert main.messages == () and len(main.meta["refused_requests"]) == 2
    verdict = no_relay_abuse("", {"kinds": ["not_cli"]}, type("Ctx", (), {"trajectory": main})())
    assert not verdict.passed and verdict.details["refused"] == 2


def test_the_ender_kills_the_sandbox_of_the_current_turn_not_the_first(monkeypatch):
    """Each user turn's CLI command is a sandbox of its own. The ender kept turn 1's (ended by then), so a
    limit reached in turn 2 signalled nothing: a CLI ignoring the refusal ran on to the command's timeout."""
    import os
    import subprocess

    from pytest_ifbench.agents import proxy_bounds

    turns = [subprocess.Popen(["sleep", "60"]) for _ in range(2)]
    monkeypatch.setattr(proxy_bounds, "sandbox_init", lambda connection: os.pidfd_open(current[0].pid))
    ender = proxy_bounds.SandboxEnder(grace=0.0)
    try:
        current = [turns[0]]
        ender.adopt(None)
        turns[0].kill()
        turns[0].wait()
        current[0] = turns[1]
        ender.adopt(None)  # turn 2's first connection
        ender.adopt(None)  # and its second: the same sandbox, kept
        ender.end()
        assert turns[1].wait(timeout=5) == -9 and ender.ended
    finally:
        ender.close()
        for process in turns:
            process.kill()
            process.wait()
