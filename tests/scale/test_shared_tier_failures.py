"""A shared store that refuses writes, refuses reads, or fails for a moment: only the part it refuses stops, and
a passing failure stops nothing.

Real servers only: a redis-server with an ACL user that may only read (or may not GET), a moto S3 server with a
bucket policy denying PutObject (or GetObject) -- moto enforces a policy's Deny on object requests, answering
403 as S3 does --, and servers killed with ``kill -9`` and started again on the same port (what they held is
written again by the test: a restarted store that kept its data). Before, the tier stood aside for everything
at the first failed request: a read-only key, or one 503 on one GET, cost every entry the store held.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from urllib.parse import urlsplit

import pytest

from pytest_ifbench.scale import tier as tier_module
from pytest_ifbench.scale.stores import open_store
from pytest_ifbench.scale.stores.redis import NAMESPACE
from pytest_ifbench.scale.tier import StoreTier
from tests.scale import _suite

A, B, C, D = ("a" * 64, "b" * 64, "c" * 64, "d" * 64)


def _reply(text: str) -> str:
    return json.dumps({"model": "openai/stub", "response": {"raw_text": text}})


def _fill(url: str, *keys: str) -> None:
    store = open_store(url)
    for key in keys:
        store.put_once(key, _reply(key[0]).encode())
    store.close()


def _tier(url: str, warnings: list[str]) -> StoreTier:
    tier = StoreTier(open_store(url), warn=warnings.append)
    assert tier.ping()
    tier.start()
    tier.wait_ready()
    return tier


def _text(entry: str | None) -> str | None:
    return None if entry is None else json.loads(entry)["response"]["raw_text"]


def _redis_user(url: str, name: str, *rules: str) -> str:
    """An ACL user of the server at ``url`` with ``rules``; the URL that logs in as it."""
    import redis

    admin = redis.Redis.from_url(url)
    admin.execute_command("ACL", "SETUSER", name, "reset", "on", ">pw", "~*", *rules)
    admin.close()
    parts = urlsplit(url)
    return f"redis://{name}:pw@{parts.netloc}{parts.path}"


def _s3_deny(url: str, *actions: str) -> None:
    """A bucket policy denying ``actions`` on the bucket's objects to everyone (moto enforces it: 403)."""
    import boto3

    bucket = urlsplit(url).netloc
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Deny", "Principal": "*", "Action": list(actions),
                                                      "Resource": f"arn:aws:s3:::{bucket}/*"}]}
    boto3.session.Session().client("s3").put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))


def _restart(server) -> None:
    """``server`` (killed) started again on its port."""
    server.process = subprocess.Popen([shutil.which(server.binary), *server.arguments()],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + server.seconds
    while True:
        try:
            if server.ready():
                return
        except OSError:
            pass
        assert time.monotonic() < deadline and server.process.poll() is None, f"{server.binary} did not start again"
        time.sleep(0.05)


@pytest.fixture(params=["redis", "s3"])
def read_only(request) -> tuple[str, str]:
    """(a URL that may write, one to the same store that may only read)."""
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        return url, _redis_user(url, "reader", "+@read", "+@connection", "+scan", "+evalsha", "+eval", "+script")
    url = request.getfixturevalue("s3_url")
    return url, url  # the same key, the bucket's policy refusing writes (set by the test, after filling it)


def _refuse_writes(urls: tuple[str, str]) -> None:
    writer, reader = urls
    if writer == reader:
        _s3_deny(writer, "s3:PutObject", "s3:DeleteObject")


def test_a_store_refusing_writes_is_still_read(read_only):
    """A read-only credential: the first refused lease stops writes and leases (the caller asks, as alone, and
    its reply is not offered); every entry the store holds is still read. Before, ``fetch(B)`` was None: paid."""
    _fill(read_only[0], A, B)
    _refuse_writes(read_only)
    warnings: list[str] = []
    tier = _tier(read_only[1], warnings)
    assert _text(tier.fetch(A)) == "a"
    assert tier.claim(C) is True, "a refused lease: this process asks, as it would alone (never waits)"
    assert tier.stopped == "writes" and len(warnings) == 1
    assert "stopped taking writes and leases during the run" in warnings[0] and "reads went on" in warnings[0]
    assert _text(tier.fetch(B)) == "b", "the store's entry is still read"
    tier.offer(C, _reply("c"))
    tier.close()
    assert (tier.stats.fetched, tier.stats.uploaded, len(warnings)) == (2, 0, 1), "one warning, no write tried"
    assert open_store(read_only[0]).get(C) is None


def test_a_store_refusing_a_write_keeps_reading_too(read_only):
    """The refusal comes from the writer thread (an entry, no lease first): the same."""
    _fill(read_only[0], A, B)
    _refuse_writes(read_only)
    warnings: list[str] = []
    tier = _tier(read_only[1], warnings)
    tier.offer(C, _reply("c"))
    deadline = time.monotonic() + 10
    while tier.stopped is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert tier.stopped == "writes", warnings
    assert _text(tier.fetch(A)) == "a" and _text(tier.fetch(B)) == "b"
    tier.close()
    assert tier.stats.fetched == 2 and len(warnings) == 1


@pytest.mark.parametrize("store", ["redis", "s3"])
def test_a_store_refusing_reads_still_takes_writes(store, request):
    """A refused GET stops reads, not writes: what the run pays for still reaches the store for the others."""
    if store == "redis":
        url = request.getfixturevalue("redis_url")
        _fill(url, A)
        tier_url = _redis_user(url, "no-get", "+@all", "-get")
    else:
        url = tier_url = request.getfixturevalue("s3_url")
        _fill(url, A)
        _s3_deny(url, "s3:GetObject")
    warnings: list[str] = []
    tier = _tier(tier_url, warnings)
    assert tier.fetch(A) is None
    assert tier.stopped == "reads" and len(warnings) == 1
    assert "stopped answering reads during the run" in warnings[0] and "writes and leases went on" in warnings[0]
    assert tier.claim(B) is True
    tier.offer(B, _reply("b"))
    tier.release(B)
    tier.close()
    assert tier.stopped == "reads" and tier.stats.uploaded == 1 and len(warnings) == 1
    if store == "s3":
        import boto3

        boto3.session.Session().client("s3").delete_bucket_policy(Bucket=urlsplit(url).netloc)
    assert _text(open_store(url).get(B).decode()) == "b", "written"


def _server(store: str, request):
    if store == "redis":
        server = request.getfixturevalue("redis_server")
        return server.url, server
    return request.getfixturevalue("s3_server")


def _bring_back(store: str, url: str, server) -> None:
    """The killed store started again, holding what it held (its bucket made again on moto, which keeps nothing)."""
    _restart(server)
    if store == "s3":
        import boto3

        boto3.session.Session().client("s3").create_bucket(Bucket=urlsplit(url).netloc)
    _fill(url, A, B, C)


@pytest.mark.parametrize("store", ["redis", "s3"])
def test_a_store_failing_for_a_moment_is_used_again(store, request):
    """The store goes away (kill -9) and comes back on the same port: the reads and the lease asked meanwhile
    fail as a miss and a lease not taken (the caller looks again); afterwards everything is read and written,
    with no warning. Before, the first failed GET stood the tier aside for the rest of the run."""
    url, server = _server(store, request)
    _fill(url, A, B, C)
    warnings: list[str] = []
    tier = _tier(url, warnings)
    server.kill()
    assert tier.fetch(A) is None, "one failed read: a miss"
    assert tier.claim(D) is False, "one failed lease: not taken (the caller looks again, within its patience)"
    assert tier.stopped is None and not warnings
    _bring_back(store, url, server)
    time.sleep(tier_module.REST_SECONDS)
    assert _text(tier.fetch(B)) == "b" and _text(tier.fetch(C)) == "c", "read again"
    assert tier.claim(D) is True, "leased again"
    tier.offer(D, _reply("d"))
    tier.release(D)
    tier.close()
    assert tier.problem is None and tier.stopped is None and not warnings
    assert (tier.stats.fetched, tier.stats.uploaded, tier.stats.unread) == (2, 1, 1), "A was missed"
    assert _text(open_store(url).get(D).decode()) == "d"


def test_a_write_that_fails_for_a_moment_is_sent_again(redis_server, monkeypatch):
    """A queued write meets the store down: it is sent again once the store is back, before the run ends."""
    monkeypatch.setattr(tier_module, "REST_SECONDS", 0.1)
    url = redis_server.url
    warnings: list[str] = []
    tier = _tier(url, warnings)
    redis_server.kill()
    tier.offer(D, _reply("d"))
    time.sleep(0.5)  # failing, resting, failing...
    _restart(redis_server)
    tier.close(timeout=30)
    assert tier.stopped is None and not warnings and tier.stats.uploaded == 1
    assert _text(open_store(url).get(D).decode()) == "d"


@pytest.mark.parametrize("store", ["redis", "s3"])
def test_a_store_that_stays_down_is_given_up_part_by_part_and_never_waited_on_forever(store, request, monkeypatch):
    """Failing on, a part stops once its requests have failed for FAILING_SECONDS (shortened here), not at the
    first failure; a write queued for a dead store is given up then, so the end of the run does not wait for
    FLUSH_SECONDS. The warnings say what stopped: reads, then everything."""
    monkeypatch.setattr(tier_module, "FAILING_SECONDS", 1.0)
    monkeypatch.setattr(tier_module, "REST_SECONDS", 0.05)
    monkeypatch.setattr(tier_module, "REST_MAX_SECONDS", 0.2)
    url, server = _server(store, request)
    _fill(url, A, B)
    warnings: list[str] = []
    tier = _tier(url, warnings)
    server.kill()
    assert tier.fetch(A) is None and tier.stopped is None, "one failure stops nothing"
    start = time.monotonic()
    while tier.stopped is None and time.monotonic() - start < 20:
        tier.fetch(B)
        time.sleep(0.02)
    assert tier.stopped == "reads" and 1.0 <= time.monotonic() - start < 15, warnings
    assert "stopped answering reads during the run" in warnings[0]
    tier.offer(C, _reply("c"))
    start = time.monotonic()
    tier.close(timeout=60)
    assert time.monotonic() - start < 15, "the queued write was given up once writes stopped"
    assert tier.stopped == "everything" and len(warnings) == 2
    assert "failed during the run" in warnings[1] and "paid for again" in warnings[1]
    assert "not in the store" in warnings[1]


def test_a_store_down_for_reads_and_leases_alike_is_one_warning(redis_server, monkeypatch):
    """Both parts failing (the store killed): when one is given up, the other -- its last request failed too --
    stops with it, in one "failed during the run" warning."""
    monkeypatch.setattr(tier_module, "FAILING_SECONDS", 1.0)
    monkeypatch.setattr(tier_module, "REST_SECONDS", 0.05)
    monkeypatch.setattr(tier_module, "REST_MAX_SECONDS", 0.2)
    _fill(redis_server.url, A)
    warnings: list[str] = []
    tier = _tier(redis_server.url, warnings)
    redis_server.kill()
    start = time.monotonic()
    while tier.stopped is None and time.monotonic() - start < 20:
        assert tier.claim(D) is False or tier.stopped is not None, "a lease not taken while the store fails"
        tier.fetch(A)
        time.sleep(0.02)
    assert tier.stopped == "everything" and len(warnings) == 1, warnings
    assert "failed during the run" in warnings[0] and "paid for again" in warnings[0]
    assert tier.claim(D) is True, "stopped: this process asks, as it would alone"
    tier.close()


@pytest.mark.parametrize("store", ["redis", "s3"])
def test_a_lease_this_process_holds_already_is_its_own(store, request):
    """A lease request whose reply was lost (a timeout) is asked again and finds its own lease: taken, not
    waited on until it runs out."""
    url = request.getfixturevalue("redis_url" if store == "redis" else "s3_url")
    held = open_store(url)
    assert held.claim(D, "me token", 30)
    assert held.claim(D, "me token", 30), "its own"
    assert not held.claim(D, "another token", 30)
    assert held.renew(D, "me token", 30)
    held.unclaim(D, "me token")
    assert held.claim(D, "another token", 30), "ended"
    held.close()


def test_what_each_store_counts_as_a_refusal(redis_server, _moto_endpoint, monkeypatch):
    """Refusals as the real servers word them, and what passes (S3's 5xx and throttling as botocore raises them)."""
    import redis
    from botocore.exceptions import ClientError

    from tests.scale.conftest import _bucket

    reader = open_store(_redis_user(redis_server.url, "reader", "+@read", "+@connection", "+evalsha", "+eval",
                                    "+script"))
    for refused in (lambda: reader.put_once(A, b"x"), lambda: reader.claim(A, "me", 30),
                    lambda: reader.replace(A, b"x", b"y")):
        with pytest.raises(redis.RedisError) as error:
            refused()
        assert reader.refused(error.value), error.value
    with pytest.raises(redis.RedisError) as error:
        open_store(redis_server.url.replace("redis://", "redis://reader:wrong@")).ping()
    assert reader.refused(error.value), error.value
    assert not reader.refused(redis.exceptions.TimeoutError("Timeout reading from socket"))
    assert not reader.refused(redis.exceptions.BusyLoadingError("Redis is loading the dataset in memory"))
    redis_server.kill()
    with pytest.raises(redis.RedisError) as error:
        reader.get(A)
    assert not reader.refused(error.value), error.value

    url = _bucket(_moto_endpoint, monkeypatch)
    _s3_deny(url, "s3:PutObject")
    store = open_store(url)
    with pytest.raises(ClientError) as denied:
        store.put_once(A, b"x")
    assert store.refused(denied.value)
    for code, status in (("SlowDown", 503), ("InternalError", 500), ("RequestTimeout", 400), ("Throttling", 400)):
        raised = ClientError({"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "GetObject")
        assert not store.refused(raised), code
    store.close()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{_free_port()}")
    dead = open_store(url)
    with pytest.raises(Exception) as error:
        dead.get(A)
    assert not dead.refused(error.value), error.value


def _free_port() -> int:
    from tests._support import free_port

    return free_port()


def _machine(pytester, stub_url: str, shared: str, name: str, *extra: str, subprocess_run: bool = False):
    run = pytester.runpytest_subprocess if subprocess_run else pytester.runpytest
    return run("suites", "--model=openai/stub", f"--api-base={stub_url}", "-p", "no:cacheprovider",
               "--ifbench-max-wait=1", "--ifbench-timeout=5", "--ifbench-summary=summary.md",
               f"--ifbench-results={name}.json", f"--ifbench-cache={name}", f"--ifbench-shared-cache={shared}", *extra)


def _delete(url: str, keys: list[str]) -> None:
    parts = urlsplit(url)
    if parts.scheme == "redis":
        import redis

        client = redis.Redis.from_url(url)
        client.delete(*(NAMESPACE + key for key in keys))
        client.close()
    else:
        import boto3

        client = boto3.session.Session().client("s3")
        for key in keys:
            client.delete_object(Bucket=parts.netloc, Key=f"{parts.path.strip('/')}/{key}.json")


@pytest.mark.parametrize(("store", "xdist"), [("redis", []), ("redis", ["-n", "2"]), ("s3", [])],
                         ids=["redis-one-process", "redis-n2", "s3-one-process"])
def test_a_run_with_a_read_only_credential_pays_only_what_the_store_lacks(pytester, stub_env, store, xdist, request):
    """Machine A fills the store; three entries go. Machine B (an empty local cache) may only read: it pays the
    three, reads the rest, and says that writes and leases stopped and reads went on -- in the terminal, the
    summary file and the results file."""
    url = request.getfixturevalue("redis_url" if store == "redis" else "s3_url")
    _suite.write(pytester.path)
    assert _machine(pytester, stub_env.url, url, "machine-a").ret in (0, 1)
    assert stub_env.calls == _suite.CALLS
    gone = sorted(open_store(url).keys())[::4][:3]
    _delete(url, gone)
    if store == "redis":
        reader = _redis_user(url, "reader", "+@read", "+@connection", "+scan", "+evalsha", "+eval", "+script")
    else:
        reader = url
        _s3_deny(url, "s3:PutObject", "s3:DeleteObject")

    second = _machine(pytester, stub_env.url, reader, "machine-b", *xdist, subprocess_run=bool(xdist))
    assert second.ret in (0, 1)
    assert stub_env.calls == _suite.CALLS + len(gone), "only what the store lacked was paid for"
    warnings = [line for line in second.outlines if line.startswith("warning: shared cache")]
    assert len(warnings) == 1, second.outlines
    assert "stopped taking writes and leases during the run" in warnings[0] and "reads went on" in warnings[0]
    assert (" on gw" in warnings[0]) == bool(xdist)
    counts = next(line for line in second.outlines if line.startswith(f"shared cache {url}: "))
    assert counts.endswith(f": {_suite.CALLS - len(gone)} entries fetched, 0 written"), counts
    data = json.loads((pytester.path / "machine-b.json").read_text())
    said = warnings[0].removeprefix("warning: ")
    assert data["shared_cache"]["warnings"] == [said]
    assert (data["shared_cache"]["fetched"], data["shared_cache"]["written"]) == (_suite.CALLS - len(gone), 0)
    assert f"**warning: {said}**" in (pytester.path / "summary.md").read_text()
    assert _suite.verdicts_of(pytester.path / "machine-b.json") == _suite.verdicts_of(pytester.path / "machine-a.json")
