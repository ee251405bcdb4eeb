"""ModelClient against the real stub server: retries, backoff, cache, accounting.

Every test runs twice: on the direct path for OpenAI-compatible endpoints (the stub is one) and
through litellm (``PYTEST_IFBENCH_LITELLM_ONLY=1``), which must behave the same.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import threading
import time

import pytest

from pytest_ifbench._types import GenerationParams
from pytest_ifbench.models.background import BackgroundGenerator
from pytest_ifbench.models.cache import ResponseCache
from pytest_ifbench.models.client import ModelCallError, ModelClient, RetryPolicy
from pytest_ifbench.models.openai_compat import LITELLM_ONLY_ENV, close_sessions, direct_route
from pytest_ifbench.testing import Fault, Reply
from tests._support import FAKE_KEY, closing_sessions

FAST = RetryPolicy(max_attempts=4, base_delay=0.05, max_delay=0.2, max_total_wait=10, timeout=2)
MESSAGES = [{"role": "user", "content": "hello"}]


@pytest.fixture(autouse=True, params=["direct", "litellm"])
def route(request, monkeypatch) -> str:
    if request.param == "litellm":
        monkeypatch.setenv(LITELLM_ONLY_ENV, "1")
    else:
        monkeypatch.delenv(LITELLM_ONLY_ENV, raising=False)
    return request.param


def test_route_choice(stub_env, route, monkeypatch):
    assert (client(stub_env).direct is not None) == (route == "direct")
    assert client(stub_env).uses_litellm == (route == "litellm")
    if route == "direct":  # litellm adds something for these, so they always go through it
        assert not direct_route("openai/stub", None, {})  # no endpoint: OpenAI itself, or OPENAI_API_BASE
        assert not direct_route("openai/gpt-4o-mini", stub_env.url, {})  # priced: litellm computes the cost
        assert not direct_route("openai/o3-mini-local", stub_env.url, {})  # o-series: litellm rewrites params
        assert not direct_route("anthropic/claude-x", stub_env.url, {})
        assert not direct_route("openai/stub", stub_env.url, {"api_key": "k", "extra_headers": {}})
        monkeypatch.delenv("OPENAI_API_KEY")
        assert not direct_route("openai/stub", stub_env.url, {})  # litellm reports the missing key
        assert direct_route("openai/stub", stub_env.url, {"api_key": "no-key"})


def client(server, **kwargs) -> ModelClient:
    return ModelClient(model="openai/stub", api_base=server.url, retry=kwargs.pop("retry", FAST), **kwargs)


def complete(c: ModelClient, messages=MESSAGES, **kwargs):
    return asyncio.run(closing_sessions(c.complete(messages, GenerationParams(max_tokens=20), **kwargs)))


def test_completion_accounting(stub_env):
    stub_env.add_rule("hello", Reply(content="<think>plan</think>Hi there friend"))
    result = complete(client(stub_env))
    assert result.text == "Hi there friend"
    assert result.reasoning == "plan" and result.raw_text.startswith("<think>")
    assert result.prompt_tokens >= 1 and result.completion_tokens >= 1
    assert result.latency > 0 and result.attempts == 1 and not result.cached
    assert stub_env.requests[0].headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_keep_think(stub_env):
    stub_env.add_rule("", Reply(content="<think>x</think>y"))
    assert complete(client(stub_env, strip_think=False)).text == "<think>x</think>y"


def recording_sleep(waits: list[float]):
    """A ``RetryPolicy.sleep`` that records each wait instead of spending it."""
    async def sleep(delay: float) -> None:
        waits.append(delay)

    return sleep


def test_429_honours_retry_after(stub_env):
    stub_env.inject_faults(Fault(kind="status", status=429, retry_after=1.0))
    waits: list[float] = []
    retry = RetryPolicy(max_attempts=4, base_delay=0.05, max_delay=0.2, max_total_wait=10, timeout=2,
                        sleep=recording_sleep(waits))
    result = complete(client(stub_env, retry=retry))
    assert waits == [1.0], "Retry-After: 1 must be waited out (the backoff alone is at most 0.05 s)"
    assert result.attempts == 2 and stub_env.calls == 2


def test_backoff_waits_go_through_the_policy_sleep(stub_env):
    stub_env.inject_faults(*[Fault(kind="status", status=500)] * 3)
    waits: list[float] = []
    retry = RetryPolicy(max_attempts=4, base_delay=0.05, max_delay=0.08, max_total_wait=10, timeout=2,
                        sleep=recording_sleep(waits))
    result = complete(client(stub_env, retry=retry))
    assert result.attempts == 4 and len(waits) == 3
    assert all(0 <= wait <= bound for wait, bound in zip(waits, (0.05, 0.08, 0.08), strict=True))


@pytest.mark.parametrize("fault", [
    Fault(kind="status", status=500),
    Fault(kind="status", status=503),
    Fault(kind="malformed"),
    Fault(kind="disconnect"),
    Fault(kind="timeout", hang=5),
])
def test_transient_failures_are_retried(stub_env, fault):
    result = complete(client(stub_env), messages=[{"role": "user", "content": f"hi {fault.kind}"}])
    assert result.attempts == 1  # no fault queued yet: sanity
    stub_env.inject_faults(fault, fault)
    result = complete(client(stub_env), messages=[{"role": "user", "content": f"again {fault.kind}"}])
    assert result.attempts == 3


def test_gives_up_after_max_attempts_with_clear_error(stub_env):
    stub_env.inject_faults(*[Fault(kind="status", status=500, message="backend down")] * 4)
    with pytest.raises(ModelCallError) as excinfo:
        complete(client(stub_env))
    assert excinfo.value.attempts == 4 and excinfo.value.status == 500
    assert "backend down" in str(excinfo.value) and "4 attempt(s)" in str(excinfo.value)
    assert stub_env.calls == 4


def test_client_errors_are_not_retried(stub_env):
    stub_env.inject_faults(Fault(kind="status", status=401, message="bad key"))
    with pytest.raises(ModelCallError) as excinfo:
        complete(client(stub_env))
    assert excinfo.value.attempts == 1 and excinfo.value.status == 401


def test_total_wait_cap(stub_env):
    stub_env.inject_faults(Fault(kind="status", status=429, retry_after=60))
    start = time.perf_counter()
    with pytest.raises(ModelCallError, match="retry wait budget"):
        complete(client(stub_env))
    assert time.perf_counter() - start < 5


def test_cache_hit_makes_no_call_and_stores_no_key(stub_env, tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    first = complete(client(stub_env, cache=cache))
    second = complete(client(stub_env, cache=cache))
    assert stub_env.calls == 1
    assert second.cached and second.text == first.text
    assert complete(client(stub_env, cache=cache), sample=1).cached is False
    assert stub_env.calls == 2
    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file():
            assert FAKE_KEY not in path.read_text()


def concurrently(*calls):
    async def run():
        try:
            return await asyncio.gather(*(call() for call in calls), return_exceptions=True)
        finally:
            await close_sessions()

    return asyncio.run(run())


def test_an_identical_request_in_flight_is_paid_once(stub_env, tmp_path):
    """Two identical requests at once (a dialogue opening with another instance's prompt): one call,
    the second gets its reply as a cache hit; another sample, or no cache, is a call of its own."""
    stub_env.latency = 0.3
    c = client(stub_env, cache=ResponseCache(tmp_path / "cache"))
    params = GenerationParams(max_tokens=20)
    first, second, other = concurrently(lambda: c.complete(MESSAGES, params), lambda: c.complete(MESSAGES, params),
                                        lambda: c.complete(MESSAGES, params, sample=1))
    assert stub_env.calls == 2  # the request and its other sample
    assert not first.cached and second.cached and second.text == first.text and not other.cached
    assert c.stats.cache_hits == 1 and not c._in_flight
    uncached = client(stub_env)
    concurrently(lambda: uncached.complete(MESSAGES, params), lambda: uncached.complete(MESSAGES, params))
    assert stub_env.calls == 4  # without the cache every request is sent, as asked


def test_a_request_waiting_on_a_failed_one_calls_for_itself(stub_env, tmp_path):
    stub_env.latency = 0.3
    stub_env.inject_faults(Fault(kind="status", status=400, message="nope"))
    c = client(stub_env, cache=ResponseCache(tmp_path / "cache"))
    params = GenerationParams(max_tokens=20)
    first, second = concurrently(lambda: c.complete(MESSAGES, params), lambda: c.complete(MESSAGES, params))
    assert isinstance(first, ModelCallError)
    assert not second.cached and second.text and stub_env.calls == 2


@pytest.mark.parametrize("other", ["keeps its reply", "dies without one"])
def test_a_request_another_process_is_fetching_waits_for_its_reply(stub_env, tmp_path, other):
    """Another process (an xdist worker sharing the cache directory) marked the key: this one waits and
    takes the reply it keeps, without a call; if that process dies without a reply, this one calls."""
    from pytest_ifbench._owner import started as _started

    cache = ResponseCache(tmp_path / "cache")
    c = client(stub_env, cache=cache)
    params = GenerationParams(max_tokens=20)
    key = c.key(MESSAGES, params, sample=0, tools=(), response_format=None)
    mark = cache._path(key).with_suffix(".inflight")
    mark.parent.mkdir(parents=True)
    holder = subprocess.Popen(["sleep", "30"])
    mark.write_text(f"{socket.gethostname()} {holder.pid} {_started(holder.pid)}")

    def the_other_process():
        time.sleep(0.4)
        if other == "keeps its reply":
            cache.put(key, {"response": {"raw_text": "from the other worker", "prompt_tokens": 3}})
            mark.unlink()
        holder.kill()
        holder.wait()

    other_process = threading.Thread(target=the_other_process)
    other_process.start()
    reply = complete(c)
    other_process.join()  # it may be between its put and its unlink when this one has the reply (seen under load)
    if other == "keeps its reply":
        assert reply.cached and reply.text == "from the other worker" and stub_env.calls == 0
    else:
        assert not reply.cached and stub_env.calls == 1
    assert not mark.exists()  # released by whoever called


@pytest.mark.parametrize("cancelled", ["waiting", "first"])
def test_a_cancelled_request_leaves_the_other_its_reply(stub_env, tmp_path, cancelled):
    """A waiting request cancelled leaves the first alone (one call); the first one cancelled lets
    the waiting one call for itself."""
    stub_env.latency = 0.5
    c = client(stub_env, cache=ResponseCache(tmp_path / "cache"))
    params = GenerationParams(max_tokens=20)

    def request(timeout: float | None, delay: float = 0.0):
        async def run():
            await asyncio.sleep(delay)
            call = c.complete(MESSAGES, params)
            return await (asyncio.wait_for(call, timeout) if timeout else call)

        return run

    first, second = concurrently(request(0.2 if cancelled == "first" else None),
                                 request(0.1 if cancelled == "waiting" else None, delay=0.05))
    if cancelled == "waiting":
        assert isinstance(second, asyncio.TimeoutError) and not first.cached and stub_env.calls == 1
    else:
        assert isinstance(first, asyncio.TimeoutError) and not second.cached and second.text
    assert not c._in_flight


def test_failed_calls_are_not_cached(stub_env, tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    stub_env.inject_faults(Fault(kind="status", status=400, message="nope"))
    with pytest.raises(ModelCallError):
        complete(client(stub_env, cache=cache))
    assert len(cache) == 0
    assert complete(client(stub_env, cache=cache)).text  # the retry of the run pays only for this


def test_background_generation_is_concurrent_and_bounded(stub_env):
    stub_env.latency = 0.2
    generator = BackgroundGenerator(concurrency=8)
    try:
        c = client(stub_env)
        c.limiter = generator.limiter
        jobs = [
            generator.submit(f"job{i}", i, lambda i=i: c.complete([{"role": "user", "content": f"n{i}"}]))
            for i in range(32)
        ]
        texts = [job.result(timeout=30).text for job in jobs]
    finally:
        generator.shutdown(before_stop=close_sessions)  # as the plugin does: its loop opened the sessions
    assert texts[5] == "stub reply to: n5"
    assert stub_env.calls == 32
    # Concurrent and bounded, as the server saw it (not by wall-clock time): exactly 8 in flight at the peak.
    assert stub_env.peak_concurrency == 8


def test_priority_order_under_contention(stub_env):
    # The blocker's reply is held until the four jobs wait for its slot. (With a fixed 0.05 s latency instead,
    # a main thread slowed down past it, on a loaded machine, had the blocker done before the last jobs were
    # submitted, and the slot went to whichever job was waiting then.)
    release = threading.Event()
    stub_env.add_rule("^first$", lambda body: (release.wait(30), Reply(content="first reply"))[1])
    generator = BackgroundGenerator(concurrency=1)
    try:
        c = client(stub_env)
        c.limiter = generator.limiter
        # Submit in reverse priority order; the single slot must still serve priority order.
        blocker = generator.submit("blocker", -1, lambda: c.complete([{"role": "user", "content": "first"}]))
        assert stub_env.wait_in_flight(1), "the blocker holds the slot"
        jobs = [generator.submit(f"j{p}", p, lambda p=p: c.complete([{"role": "user", "content": f"p{p}"}]))
                for p in (5, 3, 9, 1)]
        deadline = time.monotonic() + 30
        while len(generator.limiter._waiters) < len(jobs) and time.monotonic() < deadline:
            time.sleep(0.01)
        release.set()
        for job in [blocker, *jobs]:
            job.result(timeout=30)
    finally:
        release.set()
        generator.shutdown(before_stop=close_sessions)  # as the plugin does: its loop opened the sessions
    order = [r.last_user_text for r in stub_env.requests]
    assert order == ["first", "p1", "p3", "p5", "p9"]
