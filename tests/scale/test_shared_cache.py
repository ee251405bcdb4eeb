"""The shared response cache on a real Redis and a real S3-compatible server (moto), with shards."""

from __future__ import annotations

import json

import pytest
import redis

from pytest_ifbench.cli.main import main as ifbench
from pytest_ifbench.scale.stores import open_store
from pytest_ifbench.testing import StubServer
from tests._support import FAKE_KEY, free_port, stub_args
from tests.scale import _suite
from tests.scale.conftest import _bucket


def _shards(pytester, stub_url: str, shared: str, cache: str, count: int = 3, tag: str = "run", *extra: str):
    results = []
    for index in range(1, count + 1):
        name = f"{tag}-{index}.json"
        results.append(pytester.runpytest(
            "suites", "--model=openai/stub", f"--api-base={stub_url}", "-p", "no:cacheprovider",
            "--ifbench-max-wait=1", "--ifbench-timeout=3", "--ifbench-max-attempts=1", "--ifbench-summary=",
            f"--ifbench-shard={index}/{count}", f"--ifbench-results={name}", f"--ifbench-cache={cache}",
            f"--ifbench-shared-cache={shared}", *extra))
    return results


@pytest.mark.parametrize("store", ["redis", "s3"])
def test_second_machine_replays_every_shard_from_the_shared_cache(pytester, stub_env, store, request):
    url = request.getfixturevalue("redis_url" if store == "redis" else "s3_url")
    _suite.write(pytester.path)
    first = _shards(pytester, stub_env.url, url, "machine-1")
    assert stub_env.calls == _suite.CALLS
    assert any("shared cache" in line and "written" in line for line in first[0].outlines)
    stored = open_store(url)
    keys = set(stored.keys())
    assert len(keys) == _suite.CALLS, "write-through: every paid reply is in the store"
    assert not any(FAKE_KEY.encode() in (stored.get(key) or b"") for key in keys), "no API key in the store"
    gone = stub_env.url
    stub_env.stop()  # the second machine: an empty local cache, and no model to call

    second = _shards(pytester, gone, url, "machine-2", 3, "replay")
    for result in second:
        assert result.ret in (0, 1)
        result.stdout.fnmatch_lines(["*shared cache*entries fetched*"])
    for index in range(1, 4):
        assert _suite.verdicts_of(pytester.path / f"replay-{index}.json") == \
            _suite.verdicts_of(pytester.path / f"run-{index}.json")
        for record in json.loads((pytester.path / f"replay-{index}.json").read_text())["instances"]:
            assert record["status"] != "error", record["error"]
            assert record["tokens"]["prompt"] == 0 and record["tokens"]["cached_prompt"] > 0, "nothing repaid"
    assert len(list((pytester.path / "machine-2").glob("*/*.json"))) == _suite.CALLS, "backfilled locally"


def test_write_once_first_writer_wins(redis_url, s3_url):
    for url in (redis_url, s3_url):
        store = open_store(url)
        store.put_once("k" * 64, b'{"first": 1}')
        store.put_once("k" * 64, b'{"second": 2}')
        assert store.get("k" * 64) == b'{"first": 1}'
        assert store.get("0" * 64) is None


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "n2"])
def test_a_store_that_does_not_answer_at_start_stops_the_run_before_it_pays(pytester, stub_env, xdist):
    """A wrong port (or host, or a store down): every shard would pay for what the store holds, said only in a
    warning at its end. The run stops at start-up instead, asking the store three times first."""
    _suite.write(pytester.path)
    dead = f"redis://127.0.0.1:{free_port()}/0"
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env, f"--ifbench-shared-cache={dead}", *xdist))
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    said = result.stderr.str()
    assert f"the shared cache {dead} does not answer (ConnectionError: " in said, said
    assert "nothing was paid for" in said and "--ifbench-shared-cache-optional" in said
    assert stub_env.calls == 0 and not (pytester.path / "ifbench-results.json").exists()


@pytest.mark.parametrize("store", ["redis-password", "s3-bucket"])
def test_a_store_refusing_the_run_at_start_stops_it_naming_the_store_not_its_password(pytester, stub_env, store,
                                                                                       request):
    _suite.write(pytester.path)
    if store == "redis-password":
        server = request.getfixturevalue("redis_server")
        redis.Redis.from_url(server.url).config_set("requirepass", "right-one")
        url = server.url.replace("redis://", "redis://:wrong-one@")
    else:  # the bucket's name mistyped
        url = request.getfixturevalue("s3_url").replace("ifbench-cache-", "ifbench-cahce-")
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env, f"--ifbench-shared-cache={url}"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    said = result.stderr.str()
    assert "does not answer" in said and "nothing was paid for" in said, said
    assert "wrong-one" not in said + result.stdout.str()
    assert stub_env.calls == 0


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "n2"])
def test_a_store_that_is_down_is_one_warning_and_the_run_goes_on_when_optional(pytester, stub_server, xdist):
    _suite.write(pytester.path)
    pytester.makeconftest('''
import pathlib, pytest

@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    journal = pathlib.Path("ifbench-results.partial.jsonl")
    lines = journal.read_text().splitlines() if journal.exists() else []  # created before its header is written
    if report.when == "teardown" and lines and not pathlib.Path("header.json").exists():
        pathlib.Path("header.json").write_text(lines[0])
''')
    dead = f"redis://127.0.0.1:{free_port()}/0"
    run = pytester.runpytest_subprocess if xdist else pytester.runpytest
    result = run("suites", *stub_args(stub_server, f"--ifbench-shared-cache={dead}", "--ifbench-shared-cache-optional",
                                      *xdist))
    assert result.ret == 1  # the suite's own failing instances; none errored
    warnings = [line for line in result.outlines if "shared cache" in line]
    assert len(warnings) == 1 and "unavailable" in warnings[0] and "local cache" in warnings[0]
    data = json.loads((pytester.path / "ifbench-results.json").read_text())
    assert len(data["instances"]) == _suite.INSTANCES and not [r for r in data["instances"] if r["status"] == "error"]
    said = warnings[0].removeprefix("warning: ")  # the results file says it too, with no counts
    assert data["shared_cache"] == {"store": dead, "fetched": None, "written": None, "waited": None,
                                    "warnings": [said]}
    assert "shared_cache" not in json.loads((pytester.path / "header.json").read_text()), "the run had only begun"



@pytest.mark.parametrize(("store", "xdist"), [("redis", []), ("redis", ["-n", "2"]), ("s3", ["-n", "2"])],
                         ids=["redis-one-process", "redis-n2", "s3-n2"])
def test_a_store_that_dies_during_the_run_is_one_warning_naming_it_and_the_run_goes_on(pytester, store, xdist,
                                                                                       request, capsys):
    """kill -9 of the store after the model's second call: the run ends with no errored instance, and says
    so once, naming what is missing from the store (under ``-n``, on which workers: they went silent before;
    one line for all of them, though an S3 error names a different object on each)."""
    import threading
    import time

    if store == "redis":
        server = request.getfixturevalue("redis_server")
        url = server.url
    else:
        url, server = request.getfixturevalue("s3_server")
    _suite.write(pytester.path)
    with StubServer(latency=0.3) as stub:
        def kill_after_two_calls() -> None:
            deadline = time.monotonic() + 60
            while stub.calls < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
            server.kill()

        killer = threading.Thread(target=kill_after_two_calls)
        killer.start()
        try:
            result = pytester.runpytest_subprocess(
                "suites", *stub_args(stub, f"--ifbench-shared-cache={url}", "--ifbench-concurrency=1",
                                     "--ifbench-cache=cache", "--ifbench-summary=summary.md", *xdist))
        finally:
            killer.join()
        assert stub.calls == _suite.CALLS, "each request asked once, with or without the store"
    assert result.ret == 1  # the suite's own failing instances; none errored
    warnings = [line for line in result.outlines if line.startswith("warning: shared cache")]
    assert len(warnings) == 1, result.outlines
    assert f"{url} failed during the run" in warnings[0] and "not in the store" in warnings[0]
    if xdist:
        assert " on gw" in warnings[0]
    assert any(line.startswith(f"shared cache {url}: ") and "written" in line for line in result.outlines)
    data = json.loads((pytester.path / "ifbench-results.json").read_text())
    assert len(data["instances"]) == _suite.INSTANCES and not [r for r in data["instances"] if r["status"] == "error"]
    # the results file and the summary say it too, and so does a merge of the file (a shard's, on CI)
    said = warnings[0].removeprefix("warning: ")
    assert data["shared_cache"]["warnings"] == [said] and data["shared_cache"]["store"] == url
    assert isinstance(data["shared_cache"]["written"], int)
    assert f"**warning: {said}**" in (pytester.path / "summary.md").read_text()
    out = pytester.path / "merged.json"
    assert ifbench(["merge", "--out", str(out), str(pytester.path / "ifbench-results.json")]) == 0
    assert f"ifbench merge: warning: ifbench-results.json: {said}" in capsys.readouterr().err
    assert said in (pytester.path / "merged-summary.md").read_text()

def test_bad_shared_cache_urls_are_usage_errors(pytester, stub_server):
    _suite.write(pytester.path)
    result = pytester.runpytest("suites", *stub_args(stub_server, "--ifbench-shared-cache=ftp://x/y"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown store (known: redis://, rediss://, s3://)*"])
    result = pytester.runpytest("suites", *stub_args(stub_server, "--ifbench-shared-cache=redis://h:1/0",
                                                     "--ifbench-no-cache"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*drop --ifbench-no-cache*"])


@pytest.mark.parametrize("password", ["AUDITpw#x", "AUDIT/pw", "AUDITpw?x", "2024#AUDIT"])
def test_a_password_that_cuts_the_url_short_is_never_shown(pytester, stub_server, password):
    """A password's '#', '/' or '?' ends the credentials early: urllib took its start for a port and its
    error quoted it ("Port could not be cast to integer value as 'AUDITpw'"); all digits, it showed as one."""
    _suite.write(pytester.path)
    for option in (f"--ifbench-shared-cache=redis://:{password}@127.0.0.1:6379/0",
                   f"--ifbench-max-cost-ledger=redis://:{password}@127.0.0.1:6379/0/run1"):
        result = pytester.runpytest("suites", *stub_args(stub_server, option, "--ifbench-max-cost=1",
                                                         "--model=openai/gpt-4o-mini"))  # a priced model
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        said = result.stdout.str() + result.stderr.str()
        assert "percent-encode the characters '#', '/', '?' and '@' of a password" in said
        assert password.split("#")[0].split("/")[0].split("?")[0] not in said


@pytest.mark.slow
def test_a_killed_shard_reruns_alone_and_the_merge_is_complete(pytester, redis_url):
    """kill -9 of one shard mid-run (a subprocess: it must really die), re-run of that shard only, merge."""
    import signal
    import subprocess
    import sys
    import time

    _suite.write(pytester.path)
    with StubServer(latency=0.3) as stub:
        base = [sys.executable, "-m", "pytest", "suites", "--model=openai/stub", f"--api-base={stub.url}",
                "-p", "no:cacheprovider", "--ifbench-summary=", "--ifbench-concurrency=1",
                f"--ifbench-shared-cache={redis_url}", "--ifbench-cache=cache"]
        for index in (1, 3):
            subprocess.run([*base, f"--ifbench-shard={index}/3", f"--ifbench-results=s{index}.json"],
                           cwd=pytester.path, capture_output=True, check=False, env={**_env(), "OPENAI_API_KEY": "x"})
        killed = subprocess.Popen([*base, "--ifbench-shard=2/3", "--ifbench-results=s2.json"], cwd=pytester.path,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env={**_env(), "OPENAI_API_KEY": "x"})
        before = stub.calls
        deadline = time.monotonic() + 60
        while stub.calls < before + 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        assert not (pytester.path / "s2.json").exists()
        assert ifbench(["merge", "--out", str(pytester.path / "partial.json"), str(pytester.path / "s1.json"),
                        str(pytester.path / "s3.json"), "--expect", "3"]) == 1
        paid = stub.calls
        rerun = subprocess.run([*base, "--ifbench-shard=2/3", "--ifbench-results=s2.json"], cwd=pytester.path,
                               capture_output=True, text=True, check=False, env={**_env(), "OPENAI_API_KEY": "x"})
        assert rerun.returncode in (0, 1), rerun.stdout[-2000:]
        shard_two = json.loads((pytester.path / "s2.json").read_text())
        assert stub.calls - paid < sum(_calls(r) for r in shard_two["instances"]), "the killed run's replies were kept"
    files = [str(pytester.path / f"s{i}.json") for i in (1, 2, 3)]
    assert ifbench(["merge", "--out", str(pytester.path / "merged.json"), *files, "--expect", "3"]) == 0
    merged = json.loads((pytester.path / "merged.json").read_text())
    assert len(merged["instances"]) == _suite.INSTANCES and "not_run" not in merged


def _calls(record) -> int:
    return max(1, record.get("samples") or 1) * max(1, len(record.get("turns") or []))


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "IFBENCH_SHARD"))}


def test_a_store_s_refusal_says_what_to_do(_moto_endpoint, redis_server, monkeypatch):
    """What users met, in the client's words only: "404 when calling the HeadBucket operation" for a bucket
    nobody created, "HELLO must be called with the client already authenticated" for a URL without the
    password the server wants; each now ends with what to do."""
    import redis

    from pytest_ifbench.models.spending import LedgerUnavailable
    from pytest_ifbench.scale.shared_ledger import RedisLedger
    from pytest_ifbench.scale.stores import hint
    from pytest_ifbench.scale.tier import StoreTier

    absent = _bucket(_moto_endpoint, monkeypatch).replace("ifbench-cache-", "never-made-")
    redis.Redis(port=redis_server.port).config_set("requirepass", "s3cret-pw")
    cases = {absent: "the bucket does not exist: create it first",
             f"redis://127.0.0.1:{redis_server.port}/0": "the server wants a password: redis://:PASSWORD@",
             f"redis://:wrong-pw@127.0.0.1:{redis_server.port}/0": "the password (or user) in the URL is wrong"}
    for url, advice in cases.items():
        store = open_store(url)
        with pytest.raises(Exception) as refused:  # (the client's own error type)
            store.ping()
        assert (hint(refused.value) or "").startswith(advice), (url, refused.value)
        tier = StoreTier(store)
        tier.start()
        tier.wait_ready()
        assert tier.problem is not None and advice in tier.problem, (url, tier.problem)
        tier.close()
    with pytest.raises(LedgerUnavailable, match="the server wants a password"):  # the spending ledger's too
        RedisLedger(f"redis://127.0.0.1:{redis_server.port}/0/run-1", 1.0)
