"""A request claims its cache key (the ``.inflight`` mark other processes wait on) only once it holds a slot
of the concurrency limit: a process marks what it is sending, not the jobs queued behind its limit.

The generation loop starts hundreds of jobs ahead of the items so the limiter stays full; when each one
marked its key on starting, a process at concurrency 2 held a mark on every queued request, and another
process sharing the cache directory waited on all of them, throttled to the first one's rate. Two
clients with their own generation loops sharing one directory stand for two xdist workers here (a mark
of this live process is another client's as much as another worker's is); the stub is the real model
server.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from pytest_ifbench._owner import started
from pytest_ifbench._types import GenerationParams
from pytest_ifbench.models.background import BackgroundGenerator
from pytest_ifbench.models.cache import ResponseCache
from pytest_ifbench.models.call_errors import ModelCallError
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.models.openai_compat import close_sessions
from pytest_ifbench.testing import Fault

FAST = RetryPolicy(max_attempts=3, base_delay=0.05, max_delay=0.1, max_total_wait=10, timeout=10)
PARAMS = GenerationParams(max_tokens=20)


def _messages(n: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"request {n}"}]


class Process:
    """A client with its own generation loop and concurrency limit, as one xdist worker has."""

    def __init__(self, stub, root: Path, concurrency: int, retry: RetryPolicy = FAST) -> None:
        self.generator = BackgroundGenerator(concurrency)
        self.client = ModelClient(model="openai/stub", api_base=stub.url, retry=retry, cache=ResponseCache(root))
        self.client.limiter = self.generator.limiter
        self.concurrency = concurrency

    def submit(self, requests, tag: str = ""):
        return [self.generator.submit(f"{tag}{n}", n, lambda n=n: self.client.complete(_messages(n), PARAMS))
                for n in requests]

    def idle(self) -> bool:
        """No slot of the limit is left taken (every one handed out was given back)."""
        limiter = self.generator.limiter
        return limiter._in_use == 0 and limiter._value == self.concurrency

    def close(self) -> None:
        self.generator.shutdown(before_stop=close_sessions)


class MarkCounter:
    """Counts the ``.inflight`` marks under a cache directory every few milliseconds; ``most``: the peak."""

    def __init__(self, root: Path) -> None:
        self.root, self.most, self.seen = root, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._count, daemon=True)
        self._thread.start()

    def _count(self) -> None:
        while not self._stop.wait(0.005):
            marks = len(list(self.root.glob("*/*.inflight")))
            self.most = max(self.most, marks)
            self.seen += marks > 0

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.most


def test_a_process_marks_only_the_requests_it_is_sending(stub_env, tmp_path):
    """Concurrency 2, twelve distinct requests queued at once: at most two marks at any moment (before:
    twelve at once, for the whole run)."""
    stub_env.latency = 0.3
    root = tmp_path / "cache"
    process = Process(stub_env, root, concurrency=2)
    counter = MarkCounter(root)
    try:
        replies = [job.result(timeout=60) for job in process.submit(range(12))]
    finally:
        most = counter.stop()
        process.close()
    assert [r.text for r in replies] == [f"stub reply to: request {n}" for n in range(12)]
    assert stub_env.calls == 12 and stub_env.peak_concurrency == 2
    assert counter.seen and most <= 2, f"{most} marks held at once at concurrency 2"
    assert not list(root.glob("*/*.inflight")) and process.idle()


def race(slow, fast, stub_env) -> tuple[list, list]:
    """The same sixteen requests: ``slow`` (concurrency 2) starts and is sending two, then ``fast`` asks them
    all; both ``close()``. Their replies: (slow's, fast's). ``slow`` and ``fast`` have ``submit(requests,
    tag)`` -> jobs (processes sharing a cache directory here, machines sharing a store in tests/scale)."""
    try:
        slow_jobs = slow.submit(range(16), "slow")
        assert stub_env.wait_in_flight(2)
        fast_replies = [job.result(timeout=60) for job in fast.submit(range(16), "fast")]
        return [job.result(timeout=60) for job in slow_jobs], fast_replies
    finally:
        slow.close()
        fast.close()


def test_a_second_process_is_not_throttled_by_the_firsts_queue(stub_env, tmp_path):
    """The same sixteen requests in two processes sharing the cache directory, the first at concurrency 2
    and sending, the second at 16: the second sends what the first is not sending yet, waits only for the
    two it is, and is done in about two calls' time; every request is paid once. Before, the first had
    marked all sixteen and the second waited for them at the first's rate (~4 s)."""
    stub_env.latency = 1.0
    root = tmp_path / "cache"
    slow, fast = Process(stub_env, root, concurrency=2), Process(stub_env, root, concurrency=16)
    slow_replies, fast_replies = race(slow, fast, stub_env)
    assert stub_env.calls == 16, "each request paid once"
    # (no clock: what it waited on is counted) the two the first was sending, or a few more had the first
    # sent its next ones before the second claimed them; not all sixteen, as before
    waited = sum(r.cached for r in fast_replies)
    assert 2 <= waited <= 4 and sum(not r.cached for r in slow_replies) == waited
    assert [r.text for r in slow_replies] == [r.text for r in fast_replies]
    assert not list(root.glob("*/*.inflight")) and slow.idle() and fast.idle()


def _mark_of_another_process(cache: ResponseCache, key: str) -> tuple[Path, subprocess.Popen]:
    holder = subprocess.Popen(["sleep", "60"])
    mark = cache._path(key).with_suffix(".inflight")
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text(f"{socket.gethostname()} {holder.pid} {started(holder.pid)}")
    return mark, holder


def test_a_request_waiting_on_another_process_gives_its_slot_back(stub_env, tmp_path):
    """Concurrency 1: the first request's key is being asked by another process; the second request is
    sent meanwhile (the slot is not held through the wait), and the first takes the other's reply."""
    stub_env.latency = 0.1
    root = tmp_path / "cache"
    process = Process(stub_env, root, concurrency=1)
    cache = ResponseCache(root)
    key = process.client.key(_messages(0), PARAMS, sample=0, tools=(), response_format=None)
    mark, holder = _mark_of_another_process(cache, key)
    try:
        waiting, other = process.submit(range(2))
        assert other.result(timeout=30).text == "stub reply to: request 1"
        assert not waiting.done(), "still waiting for the other process's reply"
        cache.put(key, {"response": {"raw_text": "from the other process"}})
        mark.unlink()
        reply = waiting.result(timeout=30)
    finally:
        holder.kill()
        holder.wait()
        process.close()
    assert reply.cached and reply.text == "from the other process" and stub_env.calls == 1
    assert process.idle()


def test_a_wait_that_runs_out_sends_without_the_others_mark(stub_env, tmp_path):
    """Patience as before: past it the request is sent (with a slot) and the mark stays the other's."""
    root = tmp_path / "cache"
    quick = RetryPolicy(max_attempts=1, base_delay=0.01, max_delay=0.01, max_total_wait=0.1, timeout=0.2)
    process = Process(stub_env, root, concurrency=1, retry=quick)
    key = process.client.key(_messages(0), PARAMS, sample=0, tools=(), response_format=None)
    mark, holder = _mark_of_another_process(ResponseCache(root), key)
    try:
        (job,) = process.submit([0])
        reply = job.result(timeout=30)
        assert not reply.cached and stub_env.calls == 1 and stub_env.peak_concurrency == 1
        assert mark.read_text().split()[1] == str(holder.pid), "the mark is still the other process's"
    finally:
        holder.kill()
        holder.wait()
        process.close()
    assert process.idle()


def test_a_claim_is_kept_across_retries_and_released_with_the_slots(stub_env, tmp_path):
    """A retried request keeps its mark through the wait between attempts, holding no slot then (each
    attempt waits for one of its own); a failed one leaves neither a mark nor a slot taken."""
    root = tmp_path / "cache"
    between: list[tuple[int, int]] = []  # (marks, slots taken) during each wait between attempts

    async def sleep(seconds: float) -> None:
        between.append((len(list(root.glob("*/*.inflight"))), process.generator.limiter._in_use))
        await asyncio.sleep(seconds)

    retry = RetryPolicy(max_attempts=3, base_delay=0.05, max_delay=0.1, max_total_wait=10, timeout=10, sleep=sleep)
    process = Process(stub_env, root, concurrency=1, retry=retry)
    stub_env.inject_faults(Fault(kind="status", status=503, message="busy"))
    try:
        (retried,) = process.submit([0])
        reply = retried.result(timeout=30)
        assert not reply.cached and reply.attempts == 2 and between == [(1, 0)]
        stub_env.inject_faults(Fault(kind="status", status=400, message="no"))
        (failed,) = process.submit([1])
        with pytest.raises(ModelCallError):
            failed.result(timeout=30)
    finally:
        process.close()
    assert stub_env.calls == 3
    assert not list(root.glob("*/*.inflight")) and process.idle()
