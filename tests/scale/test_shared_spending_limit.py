"""``--ifbench-max-cost-ledger redis://host:port/db/NAME``: one spending limit for every shard of a run.

A real redis-server (``redis_server``, tests/scale/conftest.py) and the real stub; shards run at once, as
separate processes. The stub answers ``openai/gpt-4o-mini``, a model litellm's price table prices, and
its usage counts words, so a call costs millionths of a dollar and the limits here are as small.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import astuple

import pytest

from pytest_ifbench.cli.main import main as ifbench
from pytest_ifbench.models.client import ModelCallError, SpendingLedgerUnavailable
from pytest_ifbench.models.providers import make_client
from pytest_ifbench.models.spending import WAIT, SpendingLimit, usd
from pytest_ifbench.scale import shared_ledger
from pytest_ifbench.scale.shared_ledger import RedisLedger, parse
from tests.test_spending_limit import (
    JUDGE,
    MODEL,
    _args,
    _call_prices,
    _complete,
    _write_suite,
    each_model_reserves_its_own_costliest_call,
    four_processes_make_exactly_the_calls_the_limit_allows,
)


def _url(redis_url: str, name: str = "run-1") -> str:
    return f"{redis_url}/{name}"


# --------------------------------------------------------------------------- the ledger


def test_the_shared_ledger_decides_every_call_as_the_run_s_own_file_does(redis_url, tmp_path):
    """The same 400 random starts, settlements and cached prices of three models (a cheap one, a judge
    ten times its price, one first seen late) on both ledgers: the same decisions and the same figures
    after each (the Lua script and the file's Python are one rule)."""
    shared = RedisLedger(_url(redis_url), 0.05)
    local = SpendingLimit.create(tmp_path / "ledger", 0.05)
    chance = random.Random(7)
    prices = {MODEL: 0.0004, JUDGE: 0.004, "openai/late": 0.002}
    on_their_way: list[tuple[str, float, float]] = []
    for step in range(400):
        roll = chance.random()
        model = chance.choice(list(prices)[:2] if step < 200 else list(prices))
        if roll < 0.5:
            wait = chance.random() < 0.7
            decided = shared.start(model, wait=wait), local.start(model, wait=wait)
            assert decided[0] == decided[1], step
            if decided[0] not in (None, WAIT):
                on_their_way.append((model, *decided))
        elif roll < 0.9 and on_their_way:
            model, *reserved = on_their_way.pop(chance.randrange(len(on_their_way)))
            cost = chance.choice([None, round(chance.uniform(0, prices[model]), 7)])
            paid = chance.random() < 0.85
            given_up = not paid and chance.random() < 0.5  # (sent, not waited for: a call without a price)
            shared.end(model, reserved[0], cost, paid=paid, given_up=given_up)
            local.end(model, reserved[1], cost, paid=paid, given_up=given_up)
            assert shared.flush()
        else:
            cost = round(chance.uniform(0, prices[model] * 0.75), 7)
            shared.saw(model, cost)
            local.saw(model, cost)
        assert astuple(shared.status()) == pytest.approx(astuple(local.status())), step
    assert shared.status().refused > 20 and shared.status().calls > 30
    shared.close()


def test_each_model_s_calls_reserve_that_model_s_costliest_call(redis_url):
    """A cheap model's calls came back first: the judge's reserved their price, and a run at concurrency 8
    started eight judge calls at once, paying 30% past its limit. Each model reserves its own costliest
    call, and until it has one, its calls go one at a time (what the run's first call did)."""
    ledger = RedisLedger(_url(redis_url), 1.0)
    other = RedisLedger(_url(redis_url), 1.0)  # another shard's process
    # (a settlement is sent by the ledger's thread)
    now = each_model_reserves_its_own_costliest_call(ledger, other, settled=ledger.flush)
    assert now.largest == pytest.approx(0.5)
    other.close()
    ledger.close()


def test_a_killed_shard_s_first_call_of_a_model_holds_no_other_call_back_after_the_lease(redis_url, monkeypatch):
    """A model's first call on its way holds its other calls back until it is paid; its process killed, the
    lease gives that back as it gives back what the call reserved."""
    url = _url(redis_url)
    gone = RedisLedger(url, 1.0)
    assert gone.start(JUDGE) == 0.0
    gone._closed.set()  # its renewal thread ends at once, as a killed process's does: silent from now on
    gone._wake.set()
    ledger = RedisLedger(url, 1.0)
    assert ledger.start(JUDGE) == WAIT
    # the lease shortened only now: asked with it, a start more than a second after the other's (a loaded
    # machine) already found the owner silent
    monkeypatch.setattr(shared_ledger, "LEASE", 1.0)
    time.sleep(1.5)
    assert ledger.start(JUDGE) == 0.0, "the silent owner's first call no longer holds the judge's calls back"
    assert ledger.start(JUDGE) == WAIT, "... and this one's does"
    assert ledger.status().in_flight == 1
    ledger.close()
    gone._client.close()


def test_processes_of_different_shards_never_pass_the_shared_limit_between_them(redis_url):
    """(One Lua script per decision: Redis runs each alone, whichever machine asks.)"""
    RedisLedger(_url(redis_url), 100.0).close()
    four_processes_make_exactly_the_calls_the_limit_allows(_url(redis_url))


def _start_and_hang(url: str, ready, lease: float) -> None:
    shared_ledger.LEASE = lease
    ledger = RedisLedger(url, 1.0)
    ledger.saw(MODEL, 0.1)
    for _ in range(3):
        ledger.start(MODEL)
    ready.put(True)
    time.sleep(600)


def _shard_with_calls_on_their_way(url: str, lease: float) -> multiprocessing.Process:
    """Another process (as another shard is) with three calls of $0.10 on their way, hanging."""
    context = multiprocessing.get_context("spawn")
    ready = context.Queue()
    child = context.Process(target=_start_and_hang, args=(url, ready, lease))
    child.start()
    assert ready.get(timeout=60)
    return child


def test_what_a_killed_shard_s_calls_held_is_given_back_after_the_lease(redis_url, monkeypatch):
    """A shard killed with three calls on their way (by its CI job's time limit) held $0.30 of a $1 limit;
    once it has been silent for the lease, what it held is free again."""
    url = _url(redis_url)
    child = _shard_with_calls_on_their_way(url, shared_ledger.LEASE)
    try:
        os.kill(child.pid, signal.SIGKILL)
        child.join(10)
        ledger = RedisLedger(url, 1.0)
        assert (ledger.status().in_flight, ledger.status().reserved) == (3, pytest.approx(0.3))
        # the lease shortened only now: asked with it, a ledger opened more than a second after the child's
        # last word (a loaded machine) already gave back what it held
        monkeypatch.setattr(shared_ledger, "LEASE", 1.0)
        time.sleep(1.2)
        now = ledger.status()
        assert (now.in_flight, now.reserved) == (0, 0.0)
        ledger.close()
    finally:
        child.kill()


def test_a_live_shard_keeps_what_its_slow_calls_hold(redis_url, monkeypatch):
    """Calls on their way for longer than the lease keep their reservations: their process renews its word."""
    url = _url(redis_url)
    child = _shard_with_calls_on_their_way(url, 0.4)  # it renews its word every 0.1 s
    try:
        # a lease of 1 s here: with 0.4, a renewal 0.3 s late (a loaded machine) gave back what the child held
        monkeypatch.setattr(shared_ledger, "LEASE", 1.0)
        ledger = RedisLedger(url, 1.0)
        time.sleep(1.5)
        now = ledger.status()
        assert (now.in_flight, now.reserved) == (3, pytest.approx(0.3))
        ledger.close()
    finally:
        child.kill()


def test_a_settlement_redis_did_not_take_is_sent_when_it_answers_again_and_counts_once(redis_server, monkeypatch):
    """Redis stops answering while a call is on its way: the call's end neither waits nor fails, a call
    that cannot be asked about is refused, and once Redis answers again the settlement reaches it --
    once, even when it is sent twice."""
    monkeypatch.setattr(shared_ledger, "QUIET", 0.2)
    ledger = RedisLedger(_url(redis_server.url), 1.0, timeout=1.0)
    first = ledger.start(MODEL)
    os.kill(redis_server.process.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        ledger.end(MODEL, first, 0.25)
        # half the socket's timeout, which an end that asked Redis would take (0.05 s failed on a loaded machine)
        assert time.monotonic() - started < 0.5, "a call's end only queues its settlement"
        with pytest.raises(shared_ledger.LedgerUnavailable, match="Timeout"):
            ledger.start(MODEL)
    finally:
        os.kill(redis_server.process.pid, signal.SIGCONT)
    time.sleep(0.3)  # (the quiet time after Redis did not answer)
    deadline = time.monotonic() + 10
    while ledger.status().calls == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    now = ledger.status()
    assert (now.calls, now.spent, now.in_flight, now.reserved) == (1, 0.25, 0, 0.0)
    ledger._scripts["end"](keys=ledger._keys, args=ledger._args(repr(first), "0.25", 1, 1, MODEL))  # sent again
    assert ledger.status().calls == 1 and ledger.status().spent == 0.25
    ledger.close()


def test_once_redis_does_not_answer_calls_are_refused_at_once_until_one_asks_again(redis_server, monkeypatch):
    """Without it, every call of a run whose store went away (a partition) waited the socket's timeout
    before its error: 2,000 instances at concurrency 16 would take 20 minutes to error."""
    monkeypatch.setattr(shared_ledger, "QUIET", 1.0)
    ledger = RedisLedger(_url(redis_server.url), 1.0, timeout=0.5)
    os.kill(redis_server.process.pid, signal.SIGSTOP)
    try:
        with pytest.raises(shared_ledger.LedgerUnavailable, match="Timeout"):
            ledger.start(MODEL)
        started = time.monotonic()
        for _ in range(20):
            with pytest.raises(shared_ledger.LedgerUnavailable, match="not asked again for a few seconds"):
                ledger.start(MODEL)
            with pytest.raises(shared_ledger.LedgerUnavailable, match="not asked again"):
                ledger.status()  # (the live status line reads it every second)
        # one call that asked would take the socket's timeout; the quiet time outlasts a loaded machine's pauses
        assert time.monotonic() - started < 0.5, "refused without asking"
    finally:
        os.kill(redis_server.process.pid, signal.SIGCONT)
    time.sleep(1.1)
    assert ledger.start(MODEL) == 0.0, "once the quiet time is over, a call asks again"
    ledger.close()


def test_a_ledger_url_names_the_run_and_never_shows_its_password():
    assert parse("redis://:secret@cache:6379/2/nightly-42") == (
        "redis://:secret@cache:6379/2", "nightly-42", "redis://cache:6379/2/nightly-42")
    for wrong in ("redis://cache:6379/2", "redis://cache/nightly", "redis://cache/0/a b"):
        with pytest.raises(ValueError, match="name the run's ledger after the database"):
            parse(wrong)
    with pytest.raises(ValueError, match="lives in Redis") as raised:
        parse("s3://user:secret@bucket/prefix/run")
    assert "secret" not in str(raised.value)


# --------------------------------------------------------------------------- calls against the stub


def test_a_call_whose_limit_cannot_be_checked_is_not_made(stub_env, redis_server):
    ledger = RedisLedger(_url(redis_server.url), 1.0, timeout=0.5)
    client = make_client(MODEL, api_base=stub_env.url, spending=ledger)
    redis_server.kill()
    (done,) = _complete(client, ["hello there"])
    assert isinstance(done, SpendingLedgerUnavailable) and isinstance(done, ModelCallError)
    assert "not called: the run's spending limit cannot be checked" in str(done)
    assert stub_env.calls == 0


# --------------------------------------------------------------------------- whole runs


def _shard(pytester, server, limit: float, ledger: str, index: int, *extra: str) -> subprocess.Popen:
    args = _args(server, limit, f"--ifbench-max-cost-ledger={ledger}", f"--ifbench-shard={index}/2",
                 f"--ifbench-results=shard-{index}.json", f"--ifbench-summary=shard-{index}.md", "-q", *extra)
    return subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=pytester.path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def test_shards_at_once_share_one_limit_and_the_merge_says_the_run_reached_it(pytester, stub_env, redis_url,
                                                                               capsys):
    """Two shards (one of them with two xdist workers) run at once against one ledger: together they pay
    no more than the limit, where each alone would have paid it; a run with a new ledger pays the rest."""
    _write_suite(pytester)
    full = 20 + 2 + 3
    cheapest, costliest = _call_prices(pytester, stub_env)
    stub_env.latency = 0.05
    limit = costliest * 6.5
    ledger = _url(redis_url)
    shards = [_shard(pytester, stub_env, limit, ledger, 1), _shard(pytester, stub_env, limit, ledger, 2, "-n", "2")]
    outputs = [shard.communicate(timeout=300)[0] for shard in shards]
    assert [shard.returncode for shard in shards] == [1, 1], outputs
    files = [json.loads((pytester.path / f"shard-{i}.json").read_text()) for i in (1, 2)]
    entries = [data["spending_limit"] for data in files]
    shown = ledger  # (no password in it)
    assert {entry["ledger"] for entry in entries} == {shown}
    now = RedisLedger(ledger, limit).status()
    paid = sum(record["cost"] or 0 for data in files for record in data["instances"])
    assert paid == pytest.approx(now.spent) and now.calls == stub_env.calls
    assert now.spent <= limit + costliest - cheapest, "past the limit only by a call's difference in price"
    assert now.refused and now.in_flight == 0
    assert max(entry["calls"] for entry in entries) == now.calls
    for output in outputs:
        assert f"every shard's calls in {shown}" in output

    capsys.readouterr()
    assert ifbench(["merge", str(pytester.path / "shard-1.json"), str(pytester.path / "shard-2.json"),
                    "--out", str(pytester.path / "merged.json")]) == 0
    printed = capsys.readouterr().out
    assert (f"spending limit shared by 2 file(s) in {shown}: {usd(now.spent)} of {usd(limit)} paid by "
            f"{now.calls} call(s)") in printed
    assert f"the run reached its shared spending limit ({usd(now.spent)} of {usd(limit)}): {now.refused}" in printed
    assert "**the run reached its shared spending limit**" in (pytester.path / "merged-summary.md").read_text()
    merged = str(pytester.path / "merged.json")
    assert ifbench(["compare", merged, merged]) == 0
    assert f"merged.json reached its spending limit ({now.refused} call(s) not made)" in capsys.readouterr().out, \
        "each shard's entry is the whole run's: counted once"

    again = [_shard(pytester, stub_env, 1.0, _url(redis_url, "run-2"), index) for index in (1, 2)]
    assert [shard.communicate(timeout=300) and shard.returncode for shard in again] == [1, 1]
    assert stub_env.calls == full, "what the first run paid for came from the cache"


def test_the_ledger_s_password_reaches_no_file_and_no_line_the_run_writes(pytester, stub_env, redis_server):
    import redis

    redis.Redis(port=redis_server.port).config_set("requirepass", "s3cret-pw")
    _write_suite(pytester, 4)
    ledger = f"redis://:s3cret-pw@127.0.0.1:{redis_server.port}/0/run-1"
    result = pytester.runpytest(*_args(stub_env, 0.00001, f"--ifbench-max-cost-ledger={ledger}"))
    assert result.ret == 1
    shown = f"redis://127.0.0.1:{redis_server.port}/0/run-1"
    assert json.loads((pytester.path / "ifbench-results.json").read_text())["spending_limit"]["ledger"] == shown
    written = [result.stdout.str(), result.stderr.str(),
               *(path.read_text(errors="replace") for path in pytester.path.rglob("*") if path.is_file())]
    assert not [text for text in written if "s3cret-pw" in text]


def test_a_shared_ledger_the_run_cannot_use_stops_it_at_start_up(pytester, stub_env, redis_url):
    _write_suite(pytester, 2)
    ledger = _url(redis_url)
    assert pytester.runpytest(*_args(stub_env, 0.01, f"--ifbench-max-cost-ledger={ledger}")).ret in (0, 1)
    cases = [
        ((0.02, f"--ifbench-max-cost-ledger={ledger}"),
         "*--ifbench-max-cost=0.02, but the shared ledger * keeps a limit of 0.01: give every shard*"),
        ((None, f"--ifbench-max-cost-ledger={ledger}"), "*--ifbench-max-cost-ledger keeps *give the limit too*"),
        ((0.01, "--ifbench-max-cost-ledger=redis://127.0.0.1:9/0/run-1"),
         "*--ifbench-max-cost-ledger: cannot be reached (*ConnectionError*); the run does not start*"),
        ((0.01, "--ifbench-max-cost-ledger=s3://bucket/run-1"), "*a shared ledger lives in Redis*"),
    ]
    calls = stub_env.calls
    for (limit, *extra), expected in cases:
        result = pytester.runpytest(*_args(stub_env, limit, *extra))
        assert result.ret == pytest.ExitCode.USAGE_ERROR, expected
        result.stderr.fnmatch_lines([expected])
    assert stub_env.calls == calls


def test_redis_gone_before_the_workers_start_errors_their_calls_and_crashes_no_worker(pytester, stub_env,
                                                                                       redis_server):
    """Redis dies after the controller opened the ledger and before the xdist workers do: the workers start
    (each raised a usage error, xdist restarted them until it gave up and the run wrote no results file);
    their calls are not made and their instances error saying why."""
    _write_suite(pytester, 4)
    pytester.makeconftest(f"""
        import os, signal

        def pytest_configure_node(node):
            try:
                os.kill({redis_server.process.pid}, signal.SIGKILL)  # after the controller's configure
            except ProcessLookupError:
                pass
        """)
    ledger = _url(redis_server.url)
    result = pytester.runpytest_subprocess(*_args(stub_env, 1.0, f"--ifbench-max-cost-ledger={ledger}", "-n", "2",
                                                  "-q"), timeout=240)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output
    assert "crashed" not in output and "INTERNALERROR" not in output
    records = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
    assert len(records) == 4 + 2 and {record["status"] for record in records} == {"error"}  # (+ a dialogue, a sampled)
    assert all("the run's spending limit cannot be checked" in record["error"] for record in records)
    assert stub_env.calls == 0


def test_a_shard_that_cannot_read_the_ledger_at_its_end_is_still_counted_by_the_merge(pytester, stub_env,
                                                                                      redis_server, capsys):
    """Redis gone as shard 2 finishes: its results file still names the ledger (``unread``, no figures), so
    the merge counts it among the ledger's files and says it could not read it; it wrote no entry, and the
    merge said "shared by 1 file(s)"."""
    _write_suite(pytester, 4)
    ledger = _url(redis_server.url)
    first = pytester.runpytest(*_args(stub_env, 1.0, f"--ifbench-max-cost-ledger={ledger}", "--ifbench-shard=1/2",
                                      "--ifbench-results=shard-1.json", "--ifbench-summary="))
    assert first.ret == 1
    pytester.makeconftest(f"""
        import os, signal, pytest

        @pytest.hookimpl(tryfirst=True)
        def pytest_sessionfinish(session):
            os.kill({redis_server.process.pid}, signal.SIGKILL)
        """)
    second = pytester.runpytest_subprocess(*_args(stub_env, 1.0, f"--ifbench-max-cost-ledger={ledger}",
                                                  "--ifbench-shard=2/2", "--ifbench-results=shard-2.json",
                                                  "--ifbench-summary="), timeout=120)
    assert second.ret == 1
    second.stdout.fnmatch_lines(["*warning: the shared spending ledger could not be read*"])
    entry = json.loads((pytester.path / "shard-2.json").read_text())["spending_limit"]
    assert entry["ledger"] == ledger and entry["limit"] == 1.0 and "ConnectionError" in entry["unread"]
    capsys.readouterr()
    assert ifbench(["merge", str(pytester.path / "shard-1.json"), str(pytester.path / "shard-2.json"),
                    "--out", str(pytester.path / "merged.json")]) == 0
    printed = capsys.readouterr().out
    assert f"spending limit shared by 2 file(s) in {ledger}: " in printed
    (line,) = [line for line in printed.splitlines() if "could not read the shared spending ledger" in line]
    assert "shard-2.json (shard 2/2) could not read the shared spending ledger at its end" in line
