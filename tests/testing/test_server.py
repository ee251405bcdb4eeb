"""StubServer itself: lifecycle, keep-alive, concurrency, latency, recording.

No test here measures elapsed wall-clock time: concurrency is shown by
requests held in flight together (a barrier, the server's in-flight count),
latency by the server's own ``received_at``/``answered_at`` record.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from pytest_ifbench.testing import Fault, RecordedRequest, Reply, StubServer
from tests.testing._http import chat, connect, content, held, post, user


def test_url_requires_running_server():
    srv = StubServer()
    with pytest.raises(RuntimeError):
        _ = srv.url
    assert not srv.running and "stopped" in repr(srv)


def test_restart_and_validation():
    srv = StubServer()
    with srv:
        assert srv.start() is srv and srv.running  # start() on a running server is a no-op
        assert content(chat(srv.url, "one")) == "stub reply to: one"
    assert not srv.running
    with srv:
        assert content(chat(srv.url, "two")) == "stub reply to: two"
    with pytest.raises(ValueError):
        StubServer(latency=-1)
    with pytest.raises(ValueError):
        srv.latency = -1


# --------------------------------------------------------------------------- keep-alive


def test_keep_alive_on_one_connection(stub_server):
    conn = connect(stub_server.url)
    try:
        for i in range(3):
            conn.request("POST", "/v1/chat/completions", json.dumps(user(f"n{i}")),
                         {"Content-Type": "application/json"})
            resp = conn.getresponse()
            assert resp.status == 200
            assert resp.version == 11
            assert content(json.loads(resp.read())) == f"stub reply to: n{i}"
        sock_before = conn.sock
        conn.request("GET", "/v1/models")
        conn.getresponse().read()
        assert conn.sock is sock_before  # the same socket was reused
    finally:
        conn.close()


def test_keep_alive_connections_disable_nagle(stub_server):
    # Nagle + delayed ACK would stall every keep-alive answer by ~40 ms; instead of
    # timing 50 requests, check that the server's end of the connection has
    # TCP_NODELAY set while it serves them.
    conn = connect(stub_server.url)
    body = json.dumps(user("x"))
    try:
        for _ in range(50):
            conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            assert conn.getresponse().read()
        (server_end,) = stub_server._connections  # the handler keeps it open for the next request
        assert server_end.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        conn.close()
    assert stub_server.calls == 50


# --------------------------------------------------------------------------- concurrency, latency


def test_concurrent_requests_with_latency():
    n, latency = 40, 0.2
    together = threading.Barrier(n, timeout=60)

    def answer(body: dict) -> Reply:
        together.wait()  # passes only once all n requests are being handled at once
        return Reply(content="stub reply to: " + body["messages"][-1]["content"])

    with StubServer(latency=latency, default=answer) as srv:
        results: list[str] = []
        errors: list[BaseException] = []

        def worker(i: int) -> None:
            try:
                results.append(content(chat(srv.url, f"q{i}", timeout=120)))
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads)
        assert not errors, errors
        assert sorted(results) == sorted(f"stub reply to: q{i}" for i in range(n))
        assert srv.peak_concurrency == n
        assert srv.calls == n
        assert srv.in_flight == 0
        recs = srv.requests
        assert all(held(r) >= latency * 0.9 for r in recs)  # each waited out its latency
        assert max(r.received_at for r in recs) < min(r.answered_at for r in recs)  # ...while all were held


def test_per_reply_latency_overrides_server_latency():
    with StubServer(latency=300) as srv:
        srv.add_rule("fast", Reply(content="quick", latency=0.0))
        # Answered at all within the client's timeout: the server-wide 300 s did not apply.
        assert content(chat(srv.url, "fast please", timeout=60)) == "quick"
    with StubServer() as srv:
        srv.add_rule("", Reply(content="slow", latency=0.25))
        chat(srv.url, timeout=60)
        (rec,) = srv.requests
        assert held(rec) >= 0.25 * 0.9  # the server's own clock; the latency is the feature


def test_stop_wakes_sleeping_handlers():
    srv = StubServer(latency=300).start()
    outcome: list[object] = []

    def fire() -> None:
        try:
            outcome.append(post(srv.url, user("x"), timeout=120))
        except OSError as exc:  # the server drops the connection on stop
            outcome.append(exc)

    t = threading.Thread(target=fire, daemon=True)
    t.start()
    assert srv.wait_in_flight(1, timeout=30)
    srv.stop()
    assert not srv.running
    # The handler sleeping on its 300 s latency was woken and dropped the connection.
    assert srv.wait_idle(timeout=60)
    t.join(timeout=60)
    assert not t.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], OSError)
    (rec,) = srv.requests
    assert rec.answered_at is not None
    srv.stop()  # idempotent


def test_requests_held_by_a_callable_are_in_flight(stub_server):
    entered, release = threading.Event(), threading.Event()

    def hold(body: dict) -> Reply:
        entered.set()
        release.wait(60)
        return Reply(content="released")

    stub_server.add_rule("hold", hold)
    answers: list[str | None] = []
    t = threading.Thread(target=lambda: answers.append(content(chat(stub_server.url, "hold", timeout=120))))
    t.start()
    try:
        assert entered.wait(30)
        assert stub_server.in_flight == 1 and stub_server.wait_in_flight(1, timeout=0)
        (rec,) = stub_server.requests
        assert rec.answered_at is None
        assert content(chat(stub_server.url, "meanwhile")) == "stub reply to: meanwhile"
        assert stub_server.peak_concurrency == 2
    finally:
        release.set()
        t.join(timeout=60)
    assert answers == ["released"]
    assert stub_server.wait_idle(timeout=30)
    assert all(r.answered_at is not None for r in stub_server.requests)


# --------------------------------------------------------------------------- recording, reset


def test_recorded_requests(stub_server):
    post(stub_server.url, user("rec"), headers={"Authorization": "Bearer sk-test-123", "X-Custom": "v"})
    (rec,) = stub_server.requests
    assert isinstance(rec, RecordedRequest)
    assert rec.path == "/v1/chat/completions" and rec.method == "POST"
    assert rec.headers["authorization"] == "Bearer sk-test-123"
    assert rec.headers["x-custom"] == "v"
    assert rec.body == user("rec")
    assert json.loads(rec.raw) == rec.body
    assert abs(rec.received_at - time.time()) < 3600  # a time.time() timestamp, not a monotonic one
    assert rec.received_at <= rec.answered_at
    assert rec.fault is None
    assert rec.last_user_text == "rec"
    snapshot = stub_server.requests
    snapshot.clear()
    assert len(stub_server.requests) == 1  # a copy was returned


def test_reset(stub_server):
    stub_server.add_rule("", Reply(content="ruled"))
    stub_server.inject_faults(Fault(kind="status", status=500), match="never-sent")
    chat(stub_server.url)
    assert stub_server.calls == 1 and stub_server.requests and stub_server.peak_concurrency >= 1
    stub_server.reset()
    assert stub_server.calls == 0 and stub_server.requests == [] and stub_server.peak_concurrency == 0
    assert stub_server.pending_faults == 0
    assert content(chat(stub_server.url, "after")) == "stub reply to: after"
