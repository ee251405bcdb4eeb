"""Leases in the shared store: a request being asked of the model on one machine is not paid again on another.

Real stores (a redis-server, a moto S3 server) and the real stub model; two runs are two processes
with separate local caches, as on two machines.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from pytest_ifbench import GenerationParams, ModelClient, ResponseCache
from pytest_ifbench._owner import this_process
from pytest_ifbench.models.client import RetryPolicy
from pytest_ifbench.scale import tier as tier_module
from pytest_ifbench.scale.stores import open_store
from pytest_ifbench.scale.tier import StoreTier
from pytest_ifbench.testing import StubServer
from tests._support import closing_sessions
from tests.scale import _suite

STORES = ["redis", "s3"]
MESSAGES = [{"role": "user", "content": "one request, two machines"}]
FAST = RetryPolicy(max_attempts=2, base_delay=0.05, max_delay=0.2, max_total_wait=10, timeout=10)


@pytest.fixture(params=STORES)
def store_url(request) -> str:
    return request.getfixturevalue("redis_url" if request.param == "redis" else "s3_url")


def test_a_lease_is_one_owners_until_it_ends_or_runs_out(store_url):
    store, key = open_store(store_url), "a" * 64
    assert store.claim(key, "A", 30)
    assert not store.claim(key, "B", 30), "taken"
    assert not store.renew(key, "B", 30), "only its owner renews it"
    store.unclaim(key, "B")
    assert not store.claim(key, "B", 30), "only its owner ends it"
    assert store.renew(key, "A", 30)
    store.unclaim(key, "A")
    assert store.claim(key, "B", 30), "ended: free"
    assert list(store.keys()) == [], "leases are not entries"

    other = "b" * 64
    assert store.claim(other, "A", 1)
    time.sleep(2.2)  # S3 dates have whole seconds
    assert store.claim(other, "B", 30), "run out: taken over"
    assert not store.renew(other, "A", 1), "the first owner's lease is gone"
    store.unclaim(other, "A")
    assert not store.claim(other, "C", 30), "and ending it leaves the new owner's"
    store.close()


def test_a_lease_of_a_process_of_this_host_that_ended_is_taken_over_at_once(store_url):
    """A shard killed and run again on the same machine does not wait for its old leases to run out."""
    ended = subprocess.run([sys.executable, "-c", "from pytest_ifbench._owner import this_process; "
                            "print(this_process())"], capture_output=True, text=True, check=True).stdout.strip()
    store, stale = open_store(store_url), tier_module._gone
    assert store.claim("c" * 64, f"{ended} token", 30)
    assert store.claim("c" * 64, "B", 30, stale), "its owner ended: taken over"
    assert not store.claim("c" * 64, "C", 30, stale), "B runs (not an owner of this host)"
    assert store.claim("d" * 64, f"{this_process()} token", 30)
    assert not store.claim("d" * 64, "B", 30, stale), "its owner runs"
    for garbage in ("", "x", f"{this_process().split()[0]} not-a-pid 1 token"):  # a damaged lease runs out instead
        assert store.claim("f" * 64, garbage or "-", 30)
        assert not store.claim("f" * 64, "B", 30, stale), garbage
        store.unclaim("f" * 64, garbage or "-")
    store.close()


def test_a_lease_that_cannot_be_ended_runs_out_and_the_tier_goes_on(redis_url):
    class Refusing:  # the real store, but ending a lease fails (as on a store refusing conditional deletes)
        def __init__(self, store):
            self.store = store

        def __getattr__(self, name):
            return getattr(self.store, name)

        def unclaim(self, key, owner):
            raise RuntimeError("501 NotImplemented")

    tier = StoreTier(Refusing(open_store(redis_url)), warn=pytest.fail)
    tier.start()
    tier.wait_ready()
    assert tier.claim("e" * 64)
    tier.offer("e" * 64, '{"response": {"raw_text": "x"}}')
    tier.release("e" * 64)
    tier.close()
    assert tier.problem is None and tier.stats.uploaded == 1



def test_closing_the_tier_during_a_renewal_is_not_a_failure_of_the_store(redis_url, monkeypatch):
    """The run ends while the renewing thread is inside a renewal: the client is closed only after it, so no
    "failed during the run" warning (seen once in CI: the client was closed under a renewal's socket, "Bad
    file descriptor"). That race itself cannot be timed from here; what prevents it can: no renewal outlives
    the close."""
    monkeypatch.setattr(tier_module, "LEASE_SECONDS", 0.3)
    renewing = threading.Event()

    class Slow:  # the real store, its renewals taking half a second
        def __init__(self, store):
            self.store = store

        def __getattr__(self, name):
            return getattr(self.store, name)

        def renew(self, key, owner, seconds):
            renewing.set()
            time.sleep(0.5)
            return self.store.renew(key, owner, seconds)

    warned: list[str] = []
    tier = StoreTier(Slow(open_store(redis_url)), warn=warned.append)
    tier.start()
    tier.wait_ready()
    assert tier.claim("f" * 64)
    assert renewing.wait(5)
    tier.close()  # while that renewal sleeps
    renewers = [t for t in threading.enumerate() if t.name == "ifbench-shared-leases" and t.is_alive()]
    assert not renewers, "no renewal outlives the client's close"
    assert tier.problem is None and not warned, warned

def _client(stub: StubServer, root, url: str) -> tuple[ModelClient, StoreTier]:
    tier = StoreTier(open_store(url), warn=pytest.fail)
    tier.start()
    tier.wait_ready()
    return ModelClient(model="openai/stub", api_base=stub.url, retry=FAST, cache=ResponseCache(root, tier)), tier


def _ask(client: ModelClient):
    return asyncio.run(closing_sessions(client.complete(MESSAGES, GenerationParams(max_tokens=20))))


def test_a_killed_owners_lease_runs_out_and_the_request_is_asked_once(store_url, tmp_path, monkeypatch, stub_env):
    monkeypatch.setattr(tier_module, "LEASE_SECONDS", 1.0)
    client, tier = _client(stub_env, tmp_path / "cache", store_url)
    key = client.key(MESSAGES, GenerationParams(max_tokens=20), sample=0, tools=(), response_format=None)
    assert open_store(store_url).claim(key, "a process killed while asking", 1.0)
    start = time.monotonic()
    reply = _ask(client)
    assert time.monotonic() - start >= 0.9, "it waited for the lease to run out"
    assert not reply.cached and stub_env.calls == 1 and tier.stats.waited == 1
    tier.close()
    assert open_store(store_url).get(key) is not None, "the entry is shared"
    assert open_store(store_url).claim(key, "next", 30), "and the lease ended"


def test_a_lease_is_renewed_while_the_call_runs(store_url, tmp_path, monkeypatch, stub_env):
    # renewed every 2/3 s: a renewal late by more than a second (a loaded machine) still keeps it
    monkeypatch.setattr(tier_module, "LEASE_SECONDS", 2.0)
    stub_env.latency = 6.0
    client, tier = _client(stub_env, tmp_path / "cache", store_url)
    key = client.key(MESSAGES, GenerationParams(max_tokens=20), sample=0, tools=(), response_format=None)
    asking = threading.Thread(target=_ask, args=(client,))
    asking.start()
    try:
        assert stub_env.wait_in_flight(1)
        time.sleep(4.4)  # twice the lease's length into the call
        assert not open_store(store_url).claim(key, "another machine", 30), "still this one's"
    finally:
        asking.join()
    tier.close()
    assert stub_env.calls == 1


def _run(pytester, stub_url: str, shared: str, cache: str, results: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "IFBENCH_SHARD"))}
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "suites", "--model=openai/stub", f"--api-base={stub_url}",
         "-p", "no:cacheprovider", "-p", "no:randomly", "--ifbench-summary=", "--ifbench-concurrency=4",
         f"--ifbench-cache={cache}", f"--ifbench-shared-cache={shared}", f"--ifbench-results={results}"],
        cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_two_machines_running_the_same_suite_at_once_pay_once(pytester, store_url, stub_env):
    """Two runs of one suite, started together with empty local caches: every request is paid once.
    Without leases each run paid for every request the store's listing at its start lacked: all of them."""
    _suite.write(pytester.path)
    stub_env.latency = 2.0  # each run generates for ~8 s: the second starts well within the first one's calls
    runs = [_run(pytester, stub_env.url, store_url, f"machine-{n}", f"run-{n}.json") for n in (1, 2)]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    for run, output in zip(runs, outputs, strict=True):
        assert run.returncode in (0, 1), output[-3000:]
    assert stub_env.calls == _suite.CALLS, (stub_env.calls, [o[-1500:] for o in outputs])
    assert _suite.verdicts_of(pytester.path / "run-1.json") == _suite.verdicts_of(pytester.path / "run-2.json")
    for n in (1, 2):
        records = json.loads((pytester.path / f"run-{n}.json").read_text())["instances"]
        assert not [r for r in records if r["status"] == "error"]
    assert any("waited for" in line for output in outputs for line in output.splitlines()
               if line.startswith("shared cache")), outputs
