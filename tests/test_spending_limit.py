"""``--ifbench-max-cost``: the run's ledger, its calls against the real stub, and whole runs (one process,
``-n 2``, shards and their merge).

The stub answers ``openai/gpt-4o-mini``, a model litellm's price table prices, through the OpenAI SDK
route; its usage counts words, so a call costs millionths of a dollar and the limits here are as small.
``openai/gpt-4o`` is the pricier judge beside it (the same words cost ~16 times as much).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from pytest_ifbench._types import GenerationParams
from pytest_ifbench.cli.main import main as ifbench
from pytest_ifbench.models.client import SpendingLimitReached
from pytest_ifbench.models.providers import make_client
from pytest_ifbench.models.spending import WAIT, Ledger, SpendingLimit, usd
from pytest_ifbench.testing import Fault, Reply, StubServer
from tests._support import closing_sessions
from tests.scale import _suite

MODEL = "openai/gpt-4o-mini"
#: A pricier model beside it, as a judge is.
JUDGE = "openai/gpt-4o"


def _ledger(tmp_path: Path, limit: float) -> SpendingLimit:
    return SpendingLimit.create(tmp_path / "ledger", limit)


# --------------------------------------------------------------------------- the ledger


def test_a_call_starts_while_what_is_paid_and_reserved_leaves_room_for_it(tmp_path):
    ledger = _ledger(tmp_path, 1.0)
    first = ledger.start(MODEL)
    assert first == 0.0, "no price known: the first call reserves nothing"
    assert ledger.start(MODEL) == WAIT, "until the first call comes back, it is the only one on its way"
    ledger.end(MODEL, first, 0.3)
    held = [ledger.start(MODEL), ledger.start(MODEL)]
    assert held == [0.3, 0.3]
    assert ledger.start(MODEL) == WAIT, "0.3 paid + 2 x 0.3 reserved + 0.3 for a third is past 1.0: it waits"
    assert ledger.start(MODEL, wait=False) is None, "... or is refused, once its caller has waited long enough"
    ledger.end(MODEL, held[0], 0.1)
    ledger.end(MODEL, held[1], 0.2)
    now = ledger.status()
    assert (now.spent, now.calls, now.refused, now.in_flight, now.reserved) == (pytest.approx(0.6), 3, 1, 0, 0)
    last = ledger.start(MODEL)
    assert last == 0.3, "the calls on their way cost less than they held: the waiting call goes"
    assert ledger.start(MODEL) == WAIT, "0.6 paid + 0.3 fits, but not beside the 0.3 the last one holds"
    ledger.end(MODEL, last, 0.3)
    assert ledger.start(MODEL) is None, "0.9 paid: no room for 0.3 even with nothing on its way, so no waiting"


def test_a_call_that_fits_only_once_the_calls_on_their_way_are_paid_waits_for_them(tmp_path):
    """Reservations are the costliest call so far, more than most calls cost: a call refused for them
    would leave the limit unspent (a run at concurrency 16 refused calls with a seventh of it paid)."""
    ledger = _ledger(tmp_path, 1.0)
    ledger.saw(MODEL, 0.2)
    held = [ledger.start(MODEL) for _ in range(5)]
    assert held == [0.2] * 5 and ledger.start(MODEL) == WAIT, "no room for 0.2 beside 1.0 held: after they are paid"
    for reserved in held:
        ledger.end(MODEL, reserved, 0.05)
    assert ledger.start(MODEL) == 0.2, "0.2 paid: room for it now"
    assert ledger.status().refused == 0


def test_a_call_that_came_back_with_no_reply_costs_nothing_and_a_reply_without_a_price_is_counted(tmp_path):
    ledger = _ledger(tmp_path, 1.0)
    ledger.end(MODEL, ledger.start(MODEL), None, paid=False)
    assert ledger.status().calls == 0
    assert ledger.start(MODEL) == 0.0, "the failed first call is no longer on its way: the next one goes"
    ledger.end(MODEL, 0.0, None)
    now = ledger.status()
    assert (now.calls, now.unpriced, now.spent) == (1, 1, 0.0)
    assert ledger.start(MODEL) == 0.0 and ledger.start(MODEL) == 0.0, "calls came back unpriced: no more waiting"


def test_a_cached_reply_s_cost_is_what_a_call_reserves_before_any_is_paid(tmp_path):
    ledger = _ledger(tmp_path, 1.0)
    ledger.saw(MODEL, 0.4)
    assert [ledger.start(MODEL), ledger.start(MODEL)] == [0.4, 0.4]
    assert ledger.start(MODEL) == WAIT and ledger.start(MODEL, wait=False) is None


def each_model_reserves_its_own_costliest_call(ledger, other, settled=lambda: True):
    """The per-model rule on a ledger with a limit of 1.0 (``other``: another process's view of it;
    ``settled()``: the settlements sent, where the ledger sends them from a thread). Returns its status."""
    first = ledger.start(MODEL)
    assert first == 0.0 and ledger.start(MODEL) == WAIT
    ledger.end(MODEL, first, 0.01)
    assert settled()
    cheap = [ledger.start(MODEL) for _ in range(3)]
    assert cheap == [0.01] * 3
    judged = ledger.start(JUDGE)
    assert judged == 0.0, "no price of the judge known: it reserves nothing, and goes alone"
    assert ledger.start(JUDGE) == WAIT, "not the cheap model's price: the judge's first call is on its way"
    assert ledger.start(MODEL) == 0.01, "the cheap model's calls are not held back by the judge's first"
    ledger.end(JUDGE, judged, 0.3)
    assert settled()
    assert [ledger.start(JUDGE), ledger.start(JUDGE)] == [0.3, 0.3]
    assert ledger.start(JUDGE) == WAIT, "0.31 paid + 0.64 held: no room for another 0.3 beside them"
    assert ledger.start(MODEL) == 0.01, "... where a cheap call still fits"
    other.saw("openai/other", 0.5)
    assert other.start("openai/other", wait=False) is None, "its cached price does not fit beside what is held"
    assert ledger.start("openai/other", wait=False) is None, "... and is the model's price for every process"
    now = ledger.status()
    assert (now.in_flight, now.refused) == (7, 2)
    assert now.reserved == pytest.approx(0.01 * 5 + 0.3 * 2)
    return now


def test_each_model_s_calls_reserve_that_model_s_costliest_call(tmp_path):
    """A cheap model's calls came back first: the judge's reserved their price, and a run at concurrency 8
    started eight judge calls at once, paying 30% past its limit. Each model reserves its own costliest
    call, and until it has one, its calls go one at a time (what the run's first call did)."""
    ledger = _ledger(tmp_path, 1.0)
    now = each_model_reserves_its_own_costliest_call(ledger, SpendingLimit(ledger.path))  # (an xdist worker's)
    assert now.largest == 0.5, "largest: the run's costliest of any model"
    assert now.to_json()["largest_call"] == 0.5


def test_every_process_finds_a_model_s_slot_and_models_past_the_table_share_its_last(tmp_path):
    from pytest_ifbench.models.spending import MODELS

    ledger = _ledger(tmp_path, 1000.0)
    for index in range(MODELS + 3):
        name = f"openai/model-{index}"
        ledger.end(name, ledger.start(name), index / 1000)
    other = SpendingLimit(ledger.path)  # (its own cache of where the slots are: none yet)
    assert [other.start(f"openai/model-{index}") for index in (0, 1, 40)] == [0.0, 0.001, 0.04]
    shared = [other.start(f"openai/model-{index}") for index in (MODELS - 1, MODELS, MODELS + 2)]
    assert shared == [(MODELS + 2) / 1000] * 3, "the models past the table reserve the costliest among them"
    assert (tmp_path / "ledger").stat().st_size == 2112


def test_a_caller_that_waited_long_enough_for_the_first_call_goes(tmp_path):
    """A first call whose process died would otherwise hold every other call back for good."""
    ledger = _ledger(tmp_path, 1.0)
    assert ledger.start(MODEL) == 0.0
    assert ledger.start(MODEL) == WAIT
    assert ledger.start(MODEL, wait=False) == 0.0


def test_the_record_is_written_in_place_at_one_width(tmp_path):
    """One pwrite of a fixed width: a process killed mid-write never leaves a shorter record's tail."""
    ledger = _ledger(tmp_path, 12345.678)
    sizes = set()
    for cost in (0.1, 123.456789, 0.0):
        ledger.end(MODEL, ledger.start(MODEL, wait=False), cost)
        sizes.add((tmp_path / "ledger").stat().st_size)
    assert sizes == {2112}, "the run's figures and the table of models' slots: within one page"
    now = SpendingLimit(tmp_path / "ledger").status()
    assert (now.calls, now.spent, now.limit) == (3, pytest.approx(123.556789), 12345.678)
    (tmp_path / "ledger").write_bytes(b"cut")
    with pytest.raises(RuntimeError, match="unreadable: 3 bytes"):
        ledger.status()


def test_a_limit_must_be_above_zero(tmp_path):
    with pytest.raises(ValueError, match="above 0"):
        _ledger(tmp_path, 0)


def _open(where: str) -> Ledger:
    """The ledger at ``where``: a file's path, or a shared ledger's Redis URL (tests/scale)."""
    if where.startswith("redis://"):
        from pytest_ifbench.scale.shared_ledger import RedisLedger

        return RedisLedger(where, 100.0)
    return SpendingLimit(Path(where))


def _spend(where: str, rounds: int, results) -> None:
    """``rounds`` calls of $1, each asked for as the client asks (models.client._admitted): while the ledger
    says wait, again a moment later, until it starts or refuses the call."""
    ledger = _open(where)
    started = 0
    for _ in range(rounds):
        deadline = time.monotonic() + 30
        while (reserved := ledger.start(MODEL, wait=time.monotonic() < deadline)) == WAIT:
            time.sleep(0.001)
        if reserved is not None:
            started += 1
            ledger.end(MODEL, reserved, 1.0)
    ledger.close()
    results.put(started)


def four_processes_make_exactly_the_calls_the_limit_allows(where: str) -> None:
    """Four processes at once on the $100 ledger at ``where``, each trying 300 calls of $1: exactly 100 are
    made, every refused one is counted and none is left on its way. (The calls wait as the client's do:
    one that stops waiting for the model's first price reserves nothing, and a shared ledger learns that
    price only when the first call's settlement lands, a moment after it ends. Asked never to wait, one
    process made 7 to 21 such calls before it landed, and a clean-clone CI run made 106 calls.)"""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    workers = [context.Process(target=_spend, args=(where, 300, results)) for _ in range(4)]
    for worker in workers:
        worker.start()
    started = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(30)
    ledger = _open(where)
    now = ledger.status()
    ledger.close()
    assert sum(started) == now.calls == 100
    assert now.spent == pytest.approx(100.0) and now.refused == 1200 - 100 and now.in_flight == 0


def test_processes_sharing_the_ledger_never_pass_the_limit_between_them(tmp_path):
    """(Without the file lock, read-modify-write races lose updates and let more through.)"""
    four_processes_make_exactly_the_calls_the_limit_allows(str(_ledger(tmp_path, 100.0).path))


def test_amounts_read_as_money():
    assert [usd(0), usd(12.3456), usd(4.98765), usd(0.0123), usd(0.0000234), usd(0.00042), usd(4.2e-9)] == [
        "$0", "$12.35", "$4.9877", "$0.0123", "$0.000023", "$0.00042", "$0.0000000042"]


# --------------------------------------------------------------------------- calls against the stub


def _complete(client, prompts: list[str]):
    async def everything():
        return await asyncio.gather(*(client.complete([{"role": "user", "content": p}], GenerationParams(max_tokens=9))
                                      for p in prompts), return_exceptions=True)

    return asyncio.run(closing_sessions(everything()))


def test_a_call_past_the_limit_is_never_sent(stub_env, tmp_path):
    ledger = _ledger(tmp_path, 1e-5)
    client = make_client(MODEL, api_base=stub_env.url, spending=ledger)
    done = _complete(client, [f"question number {i}" for i in range(12)])
    paid = [d for d in done if not isinstance(d, BaseException)]
    refused = [d for d in done if isinstance(d, SpendingLimitReached)]
    assert len(paid) + len(refused) == 12 and paid and refused
    assert stub_env.calls == len(paid) == ledger.status().calls
    assert sum(c.cost for c in paid) == pytest.approx(ledger.status().spent) and ledger.status().spent <= 1e-5
    assert refused[0].attempts == 0 and "spending limit is reached" in str(refused[0])
    assert ledger.status().refused == len(refused)


def test_concurrent_calls_stay_within_the_limit_from_the_first_one(stub_env, tmp_path):
    """16 calls at once, room for about 3: the first goes alone, then the others reserve what it cost.
    (Had all started together, all 16 would have been paid.)"""
    probe = make_client(MODEL, api_base=stub_env.url)
    one = _complete(probe, ["the same words every time"])[0].cost
    stub_env.latency = 0.2
    ledger = _ledger(tmp_path, one * 3.5)
    client = make_client(MODEL, api_base=stub_env.url, spending=ledger)
    _complete(client, ["the same words every time"] * 1 + [f"the same words every {i}" for i in range(15)])
    now = ledger.status()
    assert now.calls == 3 and now.spent <= one * 3.5 and now.refused == 13


def test_a_pricier_judge_s_calls_at_once_stay_within_the_limit_after_cheap_model_calls(stub_env, tmp_path):
    """The model's cheap calls come back first, then eight calls of a judge 16 times its price start at
    once. Each reserved the cheap call's price (the run's costliest so far), all eight started where the
    limit had room for two and a half, and the run paid far past its limit. Now the judge's first call
    goes alone and the others reserve its price: past the limit by at most one judge call."""
    prompts = [f"question number {i}" for i in range(12)]
    cheap = max(c.cost for c in _complete(make_client(MODEL, api_base=stub_env.url), prompts[:4]))
    dear = max(c.cost for c in _complete(make_client(JUDGE, api_base=stub_env.url), prompts[4:]))
    assert dear > cheap * 10
    stub_env.reset()
    stub_env.latency = 0.2
    limit = cheap * 4 + dear * 2.5
    ledger = _ledger(tmp_path, limit)
    model = make_client(MODEL, api_base=stub_env.url, spending=ledger)
    judge = make_client(JUDGE, api_base=stub_env.url, spending=ledger)
    paid = _complete(model, prompts[:4])
    judged = _complete(judge, prompts[4:])  # (at once: the run's concurrency is 8)
    now = ledger.status()
    assert sum(d.cost for d in paid + judged if not isinstance(d, BaseException)) == pytest.approx(now.spent)
    assert now.spent <= limit + dear, f"paid {usd(now.spent)} of {usd(limit)}: past it by more than a judge call"
    assert now.refused and now.in_flight == 0 and now.largest == pytest.approx(dear)


def test_a_call_waits_for_a_slow_first_call_longer_than_its_own_timeout(stub_env, tmp_path):
    """The run's first call may take its timeout and then some (it is cancelled 5 s past it); the calls
    waiting for its price wait that long. (They waited only their own timeout, then went unpriced, each
    reserving nothing: a loaded run's shards paid twice their shared limit.)"""
    from pytest_ifbench.models.client import RetryPolicy

    ledger = _ledger(tmp_path, 1.0)
    first = ledger.start(MODEL)  # the run's first call, elsewhere, on its way
    client = make_client(MODEL, api_base=stub_env.url, spending=ledger,
                         retry=RetryPolicy(max_attempts=1, timeout=0.5))

    async def later():
        waiting = asyncio.ensure_future(client.complete([{"role": "user", "content": "hi"}],
                                                        GenerationParams(max_tokens=9)))
        await asyncio.sleep(2.0)
        sent_while_waiting = stub_env.calls
        ledger.end(MODEL, first, 1e-6)  # the first call comes back with its price
        return sent_while_waiting, await waiting

    sent_while_waiting, done = asyncio.run(closing_sessions(later()))
    assert sent_while_waiting == 0, "the call went unpriced before the first one came back"
    assert done.cost and ledger.status().calls == 2


def test_a_failed_attempt_costs_nothing_and_its_retry_asks_again(stub_env, tmp_path):
    from pytest_ifbench.models.client import RetryPolicy

    stub_env.inject_faults(Fault(kind="status", status=500, message="backend down"))
    ledger = _ledger(tmp_path, 1.0)
    client = make_client(MODEL, api_base=stub_env.url, spending=ledger,
                         retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02))
    (done,) = _complete(client, ["hello there"])
    now = ledger.status()
    assert done.attempts == 2 and stub_env.calls == 2
    assert now.calls == 1 and now.spent == pytest.approx(done.cost) and now.in_flight == 0


def test_a_reply_refused_as_malformed_was_billed_and_counts_against_the_limit(stub_env, tmp_path):
    """A reply with null content and no tool calls is retried, but the provider billed it: the ledger counts
    its price and the call's cost includes it. (It settled as an unpriced call, so a model answering only
    such replies paid 8 times a $0.002 limit while the ledger said $0.)"""
    from pytest_ifbench.models.client import RetryPolicy

    (alone,) = _complete(make_client(MODEL, api_base=stub_env.url), ["hello there"])
    stub_env.reset()
    stub_env.add_rule("", Reply(content=None), times=1)
    ledger = _ledger(tmp_path, 1.0)
    client = make_client(MODEL, api_base=stub_env.url, spending=ledger,
                         retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02))
    (done,) = _complete(client, ["hello there"])
    now = ledger.status()
    assert done.attempts == 2 and stub_env.calls == 2 == now.calls and now.unpriced == 0
    assert alone.cost < done.cost == pytest.approx(now.spent), "the refused reply's price is in the call's cost"


def test_a_call_whose_every_reply_was_refused_carries_what_they_cost(stub_env, tmp_path):
    """The errored record counts the refused replies (``ModelCallError.paid``), and the limit stops them."""
    from pytest_ifbench.models.call_errors import ModelCallError
    from pytest_ifbench.models.client import RetryPolicy

    stub_env.default = Reply(content=None)
    ledger = _ledger(tmp_path, 1.0)
    client = make_client(MODEL, api_base=stub_env.url, spending=ledger,
                         retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02))
    (failed,) = _complete(client, ["hello there"])
    assert isinstance(failed, ModelCallError) and stub_env.calls == 3
    assert [c.attempts for c in failed.paid] == [1, 2, 3] and all(c.cost and not c.cached for c in failed.paid)
    now = ledger.status()
    assert (now.calls, now.unpriced) == (3, 0) and now.spent == pytest.approx(sum(c.cost for c in failed.paid))
    stub_env.reset()
    (tmp_path / "tight").mkdir()
    tight = _ledger(tmp_path / "tight", failed.paid[0].cost * 4.5)
    client = make_client(MODEL, api_base=stub_env.url, spending=tight,
                         retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02))
    _complete(client, [f"hello there {i}" for i in range(6)])
    assert tight.status().spent <= failed.paid[0].cost * 4.5 * 1.2 and tight.status().refused


def test_a_reply_without_usage_has_no_price_and_is_counted_as_unpriced(stub_env, tmp_path):
    """Not $0: a reply that reports no tokens cost what it cost; the summary warns of it."""
    stub_env.default = Reply(raw_body=json.dumps({"choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "an answer"}}]}))
    ledger = _ledger(tmp_path, 1.0)
    (done,) = _complete(make_client(MODEL, api_base=stub_env.url, spending=ledger), ["hello there"])
    now = ledger.status()
    assert done.text == "an answer" and done.cost is None
    assert (now.calls, now.unpriced, now.spent) == (1, 1, 0.0)


def test_a_call_given_up_at_its_timeout_after_it_was_sent_is_counted_as_one_without_a_price(stub_env, tmp_path):
    """A provider bills a request it received whatever the client waited: it was counted nowhere (7 replies
    served, the ledger said 0 calls). It counts among the calls without a price, and the model's next call
    still waits for a priced first one."""
    from pytest_ifbench.models.call_errors import ModelCallError
    from pytest_ifbench.models.client import RetryPolicy

    stub_env.latency = 2.0
    ledger = _ledger(tmp_path, 1.0)
    client = make_client(MODEL, api_base=stub_env.url, spending=ledger, retry=RetryPolicy(max_attempts=1, timeout=0.5))
    (failed,) = _complete(client, ["hello there"])
    assert isinstance(failed, ModelCallError) and stub_env.calls == 1
    now = ledger.status()
    assert (now.calls, now.unpriced, now.spent, now.in_flight) == (1, 1, 0.0, 0)
    assert ledger.start(MODEL) == 0.0 and ledger.start(MODEL) == WAIT, "no price known yet: one call at a time"


def test_a_call_that_never_reached_the_endpoint_is_not_counted(tmp_path):
    from pytest_ifbench.models.call_errors import ModelCallError
    from pytest_ifbench.models.client import RetryPolicy
    from tests._support import free_port

    ledger = _ledger(tmp_path, 1.0)
    client = make_client(MODEL, api_base=f"http://127.0.0.1:{free_port()}/v1", spending=ledger,
                         retry=RetryPolicy(max_attempts=1, timeout=0.5))
    (failed,) = _complete(client, ["hello there"])
    assert isinstance(failed, ModelCallError) and (ledger.status().calls, ledger.status().unpriced) == (0, 0)


# --------------------------------------------------------------------------- whole runs


def _write_suite(pytester, n: int = 20) -> None:
    (pytester.path / "suites").mkdir(exist_ok=True)
    (pytester.path / "suites" / "scaled.yaml").write_text(_suite.suite_text(n), encoding="utf-8")


def _args(server: StubServer, limit: float | None, *extra: str) -> list[str]:
    return ["suites", f"--model={MODEL}", f"--api-base={server.url}", "-p", "no:cacheprovider",
            "--ifbench-max-wait=5", "--ifbench-timeout=5", *([f"--ifbench-max-cost={limit:.10f}"] if limit else []),
            *extra]


def _call_prices(pytester, server: StubServer) -> tuple[float, float]:
    """The cheapest and the costliest call of this suite (the stub's usage counts words)."""
    result = pytester.runpytest(*_args(server, None, "--ifbench-no-cache", "--ifbench-results=probe.json",
                                       "--ifbench-summary="))
    assert result.ret == 1
    costs = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("cost"), float) and "raw_text" in node:
                costs.append(node["cost"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads((pytester.path / "probe.json").read_text())["instances"])
    assert len(costs) >= 21
    server.reset()
    return min(costs), max(costs)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "n2"])
def test_a_run_stops_paying_at_its_limit_and_a_later_run_pays_only_the_rest(pytester, stub_env, workers, capsys):
    _write_suite(pytester)
    full = 20 + 2 + 3  # the suite's calls: 20 single turns, a dialogue's 2 turns, 3 samples
    cheapest, costliest = _call_prices(pytester, stub_env)
    limit = costliest * 6.5
    run = pytester.runpytest_subprocess if workers else pytester.runpytest
    first = run(*_args(stub_env, limit, *workers))
    assert first.ret == 1
    data = json.loads((pytester.path / "ifbench-results.json").read_text())
    entry = data["spending_limit"]
    # past the limit only by what a call costs more than the costliest before it
    assert entry["spent"] <= limit + costliest - cheapest and 0 < entry["calls"] == stub_env.calls < full
    assert 0 < entry["refused"] <= full - entry["calls"]  # a dialogue refused at its first turn asks no second
    errored = [r for r in data["instances"] if r["status"] == "error"]
    assert errored and all("the run's spending limit is reached" in r["error"] for r in errored)
    paid = sum(r["cost"] or 0 for r in data["instances"])
    assert paid == pytest.approx(entry["spent"])
    text = first.stdout.str()
    assert f"spending limit: {usd(entry['spent'])} of {usd(limit)} paid by {entry['calls']} call(s)" in text
    assert f"spending limit reached: {entry['refused']} call(s) not made" in text
    assert f" tokens, {usd(entry['spent'])} of {usd(limit)} paid, " in text, "the live status line reads the ledger"
    summary = (pytester.path / "ifbench-summary.md").read_text()
    assert "spending limit reached" in summary
    shutil.copy(pytester.path / "ifbench-results.json", pytester.path / "limited.json")

    second = run(*_args(stub_env, 1.0, *workers))
    assert second.ret == 1  # the even instances fail their checks: no errors now
    again = json.loads((pytester.path / "ifbench-results.json").read_text())
    assert not [r for r in again["instances"] if r["status"] == "error"]
    assert stub_env.calls == full, "what the first run paid for came from the cache"
    assert again["spending_limit"]["calls"] == full - entry["calls"]

    # comparing the run that reached its limit with the one that did not says why instances are unpaired
    capsys.readouterr()
    assert ifbench(["compare", str(pytester.path / "limited.json"), str(pytester.path / "ifbench-results.json"),
                    "--out", str(pytester.path / "compare.md")]) == 0
    printed = capsys.readouterr().out
    assert (f"warning: {pytester.path / 'limited.json'} reached its spending limit ({entry['refused']} call(s) not "
            f"made): {len(errored)} instance(s) it errored for it are not paired") in printed
    assert "reached its spending limit" in (pytester.path / "compare.md").read_text()
    assert printed.count("reached its spending limit") == 1, "the run with a limit it did not reach has no warning"


def test_shards_each_keep_their_own_limit_and_the_merge_says_which_reached_it(pytester, stub_env, capsys):
    _write_suite(pytester)
    limit = _call_prices(pytester, stub_env)[1] * 4.5
    for index in (1, 2):
        pytester.runpytest(*_args(stub_env, limit if index == 1 else 1.0, f"--ifbench-shard={index}/2",
                                  f"--ifbench-results=shard-{index}.json"))
    capsys.readouterr()
    assert ifbench(["merge", str(pytester.path / "shard-1.json"), str(pytester.path / "shard-2.json"),
                    "--out", str(pytester.path / "merged.json")]) == 0
    printed = capsys.readouterr().out
    parts = json.loads((pytester.path / "merged.json").read_text())["merged_from"]
    assert [bool(p["spending_limit"]["refused"]) for p in parts] == [True, False]
    assert "shard-1.json (shard 1/2) reached its spending limit" in printed
    assert "shard-2.json (shard 2/2) reached" not in printed
    summary = (pytester.path / "merged-summary.md").read_text()
    assert "**shard-1.json (shard 1/2) reached its spending limit**" in summary


def test_a_limit_a_run_cannot_count_is_refused_at_start_up(pytester, stub_env):
    _write_suite(pytester, 2)
    result = pytester.runpytest("suites", "--model=openai/stub", f"--api-base={stub_env.url}", "--ifbench-max-cost=5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ifbench-max-cost counts what litellm's price table says*no price for "
                                 "'openai/stub'*"])
    result = pytester.runpytest(*_args(stub_env, None, "--ifbench-max-cost=0"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ifbench-max-cost must be above 0, not 0*"])
    result = pytester.runpytest(*_args(stub_env, None, "--ifbench-max-cost=1", "--judge-model=openai/stub"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert stub_env.calls == 0


def test_the_embedded_model_s_calls_are_free_beside_a_paid_model(pytester, stub_env, tmp_path):
    """A local judge beside a paid model: the limit accepts it, never counts its calls and never refuses
    them (it was refused at start-up as unpriced)."""
    _write_suite(pytester, 2)
    result = pytester.runpytest(*_args(stub_env, 1.0, "--judge-model=local/smollm2", "--collect-only"))
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    spent = _ledger(tmp_path, 1e-9)
    spent.end(MODEL, spent.start(MODEL), 1.0)  # the limit is paid
    client = make_client("local/smollm2", spending=spent)
    (done,) = _complete(client, ["Say hello."])
    assert not isinstance(done, BaseException) and done.raw_text
    assert (spent.status().calls, spent.status().refused) == (1, 0)
    assert make_client(MODEL, api_base=stub_env.url, spending=spent).spending is spent


# --------------------------------------------------------------------------- agent runs


def _loop_step(n: int):
    from pytest_ifbench.testing import Reply

    return Reply(tool_calls=[{"id": f"call_{n}", "type": "function",
                              "function": {"name": "bash", "arguments": json.dumps({"command": f"echo {n}"})}}])


def test_a_loop_run_stops_at_the_run_s_limit_with_its_paid_steps_kept(stub_env, tmp_path):
    """The built-in loop's steps are the run's calls: the step past the limit is not made, and the error
    carries the steps paid before it (the errored record counts them)."""
    from pytest_ifbench.agents.loop import run_loop
    from pytest_ifbench.agents.options import AgentOptions
    from pytest_ifbench.agents.profiles import ToolRegistry
    from pytest_ifbench.agents.workspace import Workspace, sandbox_problem

    if (problem := sandbox_problem()) is not None:
        pytest.skip(problem)
    stub_env.default = lambda body: _loop_step(sum(m["role"] == "assistant" for m in body["messages"]))
    one = _complete(make_client(MODEL, api_base=stub_env.url), ["echo"])[0].cost
    stub_env.reset()
    stub_env.default = lambda body: _loop_step(sum(m["role"] == "assistant" for m in body["messages"]))
    ledger = _ledger(tmp_path, one * 2.5)
    client = make_client(MODEL, api_base=stub_env.url, spending=ledger)
    with Workspace.create(None, parent=tmp_path) as workspace, pytest.raises(SpendingLimitReached) as raised:
        asyncio.run(closing_sessions(run_loop(
            client=client, messages=[{"role": "user", "content": "go"}], profile=ToolRegistry().profile("generic"),
            workspace=workspace, options=AgentOptions(max_steps=20), params=GenerationParams(max_tokens=50),
            trajectory_path=tmp_path / "t.json")))
    now = ledger.status()
    assert len(raised.value.paid) == now.calls == stub_env.calls >= 1 and now.refused == 1
    assert json.loads((tmp_path / "t.json").read_text())["meta"]["stop_reason"] == "model_error"


def test_a_cli_s_call_past_the_limit_is_answered_with_a_final_error_and_never_sent(stub_env, tmp_path):
    """Behind the relay (Claude Code, Kilo, Droid): the CLI is told not to retry, the proxy records the
    failure (the run is then an error of the harness, not the agent's failure), and the model is not called."""
    import urllib.error
    import urllib.request

    from pytest_ifbench.agents.proxy import RecordingProxy

    ledger = _ledger(tmp_path, 1e-12)
    ledger.end(MODEL, ledger.start(MODEL), 1e-12)  # the run has paid its limit
    client = make_client(MODEL, api_base=stub_env.url, spending=ledger)
    request = {"model": "claude-sonnet-4-5", "max_tokens": 50, "messages": [{"role": "user", "content": "hello"}]}
    with RecordingProxy(client, log_path=tmp_path / "raw.jsonl", session_id="s1", tcp=True,
                        socket_path=tmp_path / "proxy.sock") as proxy:
        sent = urllib.request.Request(proxy.url + "/v1/messages", data=json.dumps(request).encode(), method="POST",
                                      headers={"content-type": "application/json", "anthropic-version": "2023-06-01"})
        with pytest.raises(urllib.error.HTTPError) as answered:
            urllib.request.urlopen(sent, timeout=30)
    assert answered.value.code == 400 and answered.value.headers["x-should-retry"] == "false"
    assert "the run's spending limit is reached" in json.loads(answered.value.read())["error"]["message"]
    assert stub_env.calls == 0 and len(proxy.failures) == 1 and "spending limit" in proxy.failures[0]


def test_an_agent_command_can_neither_see_nor_write_the_run_s_ledger(tmp_path):
    """The ledger is the run's money: a tool command that reset it would lift the limit, one that filled it
    would turn the other instances into errors. It lives outside everything the sandbox shows."""
    from pytest_ifbench.agents.workspace import Workspace, sandbox_problem

    if (problem := sandbox_problem()) is not None:
        pytest.skip(problem)
    directory = Path(tempfile.mkdtemp(prefix="ifbench-spending-"))  # where the plugin makes it
    try:
        ledger = SpendingLimit.create(directory / "ledger", 5.0)
        with Workspace.create(None, parent=tmp_path) as workspace:
            done = asyncio.run(workspace.arun(["sh", "-c", f"cat {ledger.path}; printf x > {ledger.path}; "
                                                           f"printf x > /tmp/{directory.name}/ledger"]))
        assert done.returncode != 0 and "No such file or directory" in done.stderr + done.stdout
        assert ledger.status() == SpendingLimit(ledger.path).status() and ledger.status().limit == 5.0
        assert (directory / "ledger").stat().st_size == 2112
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_a_record_s_cost_is_what_the_run_paid_and_cached_replies_cost_apart(pytester, stub_env):
    """A re-run from the cache paid nothing: its records' ``cost`` is 0 and ``cached_cost`` what the first
    run paid, as the tokens are split (a user checking from the records whether a re-run paid twice saw
    the first run's price on replies it took from the cache)."""
    _write_suite(pytester, 4)
    first = pytester.runpytest(*_args(stub_env, None, "--ifbench-results=first.json", "--ifbench-summary=first.md"))
    again = pytester.runpytest(*_args(stub_env, None, "--ifbench-results=again.json", "--ifbench-summary=again.md"))
    assert first.ret == again.ret == 1
    runs = [json.loads((pytester.path / name).read_text())["instances"] for name in ("first.json", "again.json")]
    paid = sum(record["cost"] for record in runs[0])
    assert paid > 0 and all(record["cached_cost"] == 0 for record in runs[0])
    assert all(record["cost"] == 0 for record in runs[1])
    assert sum(record["cached_cost"] for record in runs[1]) == pytest.approx(paid)
    header, *rows = [line for line in (pytester.path / "again.md").read_text().splitlines()
                     if line.startswith("| ") and "instances" in line or line.startswith("| scaled")][:2]
    assert "| cost | judges' cost | cached cost |" in header and f"| $0.0000 | - | ${paid:.4f} |" in rows[0]


def test_the_records_and_the_totals_say_what_the_judges_cost(pytester, stub_env):
    """Judges can be most of a run's money (94% in the money audit's run), and no table said so."""
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "judged.yaml").write_text(JUDGED, encoding="utf-8")
    stub_env.add_rule("REQUIREMENTS", Reply(content=json.dumps({"checks": [{"id": "polite", "verdict": "pass",
                                                                            "reasoning": "r"}]})))
    pytester.runpytest(*_args(stub_env, None, f"--judge-model={JUDGE}", "--ifbench-summary=s.md", "-k", "q0 or q1"))
    records = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
    judges = [sum(c["cost"] for c in r["judge_calls"]) for r in records]
    assert [r["judge_cost"] for r in records] == pytest.approx(judges) and all(0 < j < r["cost"]
                                                                              for j, r in zip(judges, records))
    header, row = [line for line in (pytester.path / "s.md").read_text().splitlines()
                   if line.startswith("| ") and "instances" in line or line.startswith("| demo")][:2]
    assert "| cost | judges' cost |" in header and f"| ${sum(judges):.4f} |" in row


JUDGED = """
ifbench: 1
benchmark: demo
instances:
""" + "".join(f"""  - id: q{i}
    prompt: Question number {i}, answer in lowercase.
    checks:
      - {{id: lower, verifier: ifbench.case, params: {{mode: lower}}}}
      - {{id: polite, verifier: ifbench.judge, params: {{criterion: The answer is polite.}}}}
""" for i in range(8))


def test_a_judge_call_refused_at_the_limit_keeps_the_paid_reply_in_the_record(pytester, stub_env):
    """The limit refusing an instance's judge call made the instance a `model` error ("not called") with no
    turns and no cost, though its model call had been paid: the records added up to half what the ledger
    paid. It is a judge error keeping the reply, and the records add up to the ledger's figure."""
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "judged.yaml").write_text(JUDGED, encoding="utf-8")
    polite = Reply(content=json.dumps({"checks": [{"id": "polite", "verdict": "pass", "reasoning": "r"}]}))
    stub_env.add_rule("REQUIREMENTS", polite)
    probe = pytester.runpytest(*_args(stub_env, None, f"--judge-model={MODEL}", "--ifbench-no-cache",
                                      "--ifbench-results=probe.json", "--ifbench-summary=", "-k", "q0"))
    assert probe.ret in (0, 1)
    probed = json.loads((pytester.path / "probe.json").read_text())["instances"][0]
    one, judge = probed["cost"], probed["judge_calls"][0]["cost"]  # a reply and its judge; the judge's call
    # Three instances paid, then a fourth's reply admitted (a call reserves its model's costliest: the judge's)
    # and its judge call refused: the limit lies between 3 * one + judge and 3 * one + reply + judge.
    limit = 3 * one + judge + (one - judge) / 2
    stub_env.reset()
    stub_env.add_rule("REQUIREMENTS", polite)
    result = pytester.runpytest(*_args(stub_env, limit, f"--judge-model={MODEL}", "--ifbench-summary="))
    data = json.loads((pytester.path / "ifbench-results.json").read_text())
    entry = data["spending_limit"]
    assert entry["refused"] > 0 and entry["calls"] == stub_env.calls, entry
    judged_out = [r for r in data["instances"] if r.get("error_kind") == "judge"]
    assert judged_out, [(r["instance"], r.get("error_kind"), r.get("error")) for r in data["instances"]]
    for record in judged_out:
        assert record["turns"] and record["cost"] and "spending limit is reached" in record["error"], record
    assert sum(r["cost"] or 0 for r in data["instances"]) == pytest.approx(entry["spent"])
    assert result.ret == 1


def test_the_summary_says_an_overshoot_and_whose_calls_were_not_made():
    """A limit passed by the calls already on their way read like a broken cap ("$0.00012 of $0.00010
    paid"); a shard's line counted the calls every shard was refused as its own."""
    from pytest_ifbench._max_cost import lines

    own = {"limit": 0.0001, "spent": 0.00012, "calls": 3, "refused": 11, "unpriced": 0, "largest_call": 0.00005}
    first, refused = lines(own)
    assert first.endswith("; over by $0.000020: calls already on their way when it was reached cost more than "
                          "they had reserved)"), first
    assert refused.startswith("spending limit reached: 11 call(s) not made; their instances errored")
    shared = lines({**own, "spent": 0.00009, "ledger": "redis://127.0.0.1:6379/0/run1"})
    assert "over by" not in shared[0] and "every shard's calls in redis://127.0.0.1:6379/0/run1" in shared[0]
    assert shared[1].startswith("spending limit reached: 11 call(s) not made by the shards together;")
