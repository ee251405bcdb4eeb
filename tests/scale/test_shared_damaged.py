"""A damaged entry in the shared store (cut short, not JSON) is replaced by the next reply paid for its key,
never a good one; and "entries fetched" counts entries, not reads.

Real stores (a redis-server, a moto S3 server) and the real stub model; separate local caches are separate
machines. The entries are damaged with the store's own client, as a broken write or a hand edit would.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest

from pytest_ifbench.scale.stores import open_store
from pytest_ifbench.scale.stores.redis import NAMESPACE
from pytest_ifbench.scale.tier import StoreTier
from tests.scale import _suite

CUT = b'{"model": "openai/stub", "respo'


@pytest.fixture(params=["redis", "s3"])
def store_url(request) -> str:
    return request.getfixturevalue("redis_url" if request.param == "redis" else "s3_url")


def _damage(url: str, key: str, data: bytes = CUT) -> None:
    """Overwrite the entry of ``key`` with ``data``, past the store's write-once put."""
    parts = urlsplit(url)
    if parts.scheme == "redis":
        import redis

        client = redis.Redis.from_url(url)
        client.set(NAMESPACE + key, data)
        client.close()
    else:
        import boto3

        prefix = parts.path.strip("/")
        boto3.session.Session().client("s3").put_object(Bucket=parts.netloc, Key=f"{prefix}/{key}.json", Body=data)


def _reply(text: str) -> str:
    return json.dumps({"model": "openai/stub", "response": {"raw_text": text}})


def _tier(url: str) -> StoreTier:
    tier = StoreTier(open_store(url), warn=pytest.fail)
    tier.start()
    tier.wait_ready()
    return tier


def _machine(pytester, stub_url: str, shared: str, name: str):
    return pytester.runpytest(
        "suites", "--model=openai/stub", f"--api-base={stub_url}", "-p", "no:cacheprovider", "--ifbench-summary=",
        "--ifbench-max-wait=1", "--ifbench-timeout=5", f"--ifbench-results={name}.json", f"--ifbench-cache={name}",
        f"--ifbench-shared-cache={shared}")


def _counts_line(result) -> str:
    return next(line for line in result.outlines if line.startswith("shared cache "))


def test_a_damaged_entry_is_replaced_by_the_next_machine_s_reply_and_a_third_pays_nothing(pytester, stub_env,
                                                                                           store_url):
    """Machine A fills the store; one entry is cut short. Machine B (an empty local cache) pays that one call,
    and its reply replaces the damaged entry; machine C then pays nothing. Before, B and C each paid it, and
    the store kept the damaged text."""
    _suite.write(pytester.path)
    assert _machine(pytester, stub_env.url, store_url, "machine-a").ret in (0, 1)
    assert stub_env.calls == _suite.CALLS
    store = open_store(store_url)
    key = sorted(store.keys())[0]
    _damage(store_url, key)

    second = _machine(pytester, stub_env.url, store_url, "machine-b")
    assert second.ret in (0, 1)
    assert stub_env.calls == _suite.CALLS + 1, "the damaged entry's call, once"
    kept = store.get(key)
    assert kept == (pytester.path / "machine-b" / key[:2] / f"{key}.json").read_bytes(), "B's reply replaced it"
    assert isinstance(json.loads(kept)["response"]["raw_text"], str)
    assert _counts_line(second).endswith(f": {_suite.CALLS - 1} entries fetched, 1 written, "
                                         "1 damaged entry replaced"), second.outlines

    third = _machine(pytester, stub_env.url, store_url, "machine-c")
    assert third.ret in (0, 1)
    assert stub_env.calls == _suite.CALLS + 1, "machine C paid nothing"
    assert _counts_line(third).endswith(f": {_suite.CALLS} entries fetched, 0 written"), third.outlines
    assert _suite.verdicts_of(pytester.path / "machine-c.json") == _suite.verdicts_of(pytester.path / "machine-a.json")
    shared = json.loads((pytester.path / "machine-b.json").read_text())["shared_cache"]
    assert (shared["fetched"], shared["damaged"], shared["replaced"]) == (_suite.CALLS - 1, 1, 1)
    store.close()


def test_a_good_entry_is_never_overwritten(store_url):
    """Only the damaged text read is replaced: an entry another process wrote since (a reply to the same request,
    as good) stays, in the store's own replace and through the tier."""
    store = open_store(store_url)
    store.put_once("a" * 64, b'{"first": 1}')
    assert not store.replace("a" * 64, b'{"second": 2}', CUT), "not the damaged text: it stays"
    assert store.get("a" * 64) == b'{"first": 1}'
    _damage(store_url, "b" * 64)
    assert store.replace("b" * 64, b'{"second": 2}', CUT)
    assert store.get("b" * 64) == b'{"second": 2}'
    assert store.replace("c" * 64, b'{"third": 3}', CUT), "gone since: written as a first entry"
    assert store.get("c" * 64) == b'{"third": 3}'

    raced, repaired = "d" * 64, "e" * 64
    for key in (raced, repaired):
        _damage(store_url, key)
    tier = _tier(store_url)
    assert tier.fetch(raced) is None and tier.fetch(repaired) is None, "damaged: a miss"
    assert store.replace(raced, _reply("another machine's").encode(), CUT), "another machine repaired it first"
    tier.offer(raced, _reply("this machine's"))
    tier.offer(repaired, _reply("this machine's"))
    tier.close()
    assert tier.problem is None
    assert json.loads(store.get(raced))["response"]["raw_text"] == "another machine's", "a good entry stays"
    assert json.loads(store.get(repaired))["response"]["raw_text"] == "this machine's", "a damaged one is replaced"
    assert (tier.stats.damaged, tier.stats.replaced) == (2, 1)
    store.close()


def test_entries_fetched_counts_entries_not_reads(store_url):
    """Identical requests of concurrent instances each read the key: one entry fetched. A damaged entry, or one
    without a reply, is none."""
    first = _tier(store_url)
    for key in ("a" * 64, "b" * 64, "c" * 64):
        first.offer(key, _reply(key[0]))
    first.close()
    _damage(store_url, "b" * 64)
    _damage(store_url, "c" * 64, b'{"model": "openai/stub"}')  # JSON, but no reply in it

    tier = _tier(store_url)
    for _ in range(3):
        assert json.loads(tier.fetch("a" * 64))["response"]["raw_text"] == "a"
        assert tier.fetch("a" * 64, fresh=True) is not None
    assert tier.stats.fetched == 1, "six reads of one entry"
    assert tier.fetch("b" * 64) is None and tier.fetch("b" * 64, fresh=True) is None
    assert tier.fetch("c" * 64) is None
    assert (tier.stats.fetched, tier.stats.damaged) == (1, 2)
    tier.close()
