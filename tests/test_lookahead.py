"""Jobs start a bounded distance ahead of the running item (``models.lookahead``): what waits for its
item is bounded by the width, not by the suite, and every instance is still generated exactly once."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from pytest_ifbench.models.lookahead import MIN_WIDTH, PER_SLOT, Lookahead, width_for
from tests._support import bulk_suite, stub_args, write_suite


class Job:
    def __init__(self, name: str, started: list[tuple[str, int]]) -> None:
        self.name, self._started = name, started

    def start_job(self, priority: int) -> None:
        self._started.append((self.name, priority))


def _queue(count: int, width: int) -> tuple[Lookahead, list[Job], list[tuple[str, int]]]:
    started: list[tuple[str, int]] = []
    jobs = [Job(f"j{i}", started) for i in range(count)]
    lookahead = Lookahead(width)
    lookahead.queue((job, 100 + i) for i, job in enumerate(jobs))
    return lookahead, jobs, started


def test_the_first_width_start_at_once_with_their_priorities():
    lookahead, _, started = _queue(10, 4)
    lookahead.advance()
    assert started == [("j0", 100), ("j1", 101), ("j2", 102), ("j3", 103)]


def test_the_window_is_refilled_in_bursts_once_half_of_it_ran():
    lookahead, jobs, started = _queue(20, 4)
    lookahead.advance()
    ahead = []
    for job in jobs:
        lookahead.advance(job)
        position = int(job.name[1:])
        ahead.append(lookahead.started - position - 1)
        assert lookahead.started <= position + 1 + 4  # never more than the width past the running one
    assert [name for name, _ in started] == [f"j{i}" for i in range(20)]  # each once, in order
    # refilled to 4 ahead whenever only half the width is left: starts come in bursts of 2, not 1 per item
    assert ahead[:6] == [3, 4, 3, 4, 3, 4]


def test_an_item_not_in_the_order_keeps_the_window_where_it_was():
    lookahead, jobs, started = _queue(10, 3)
    lookahead.advance(Job("stranger", []))  # e.g. an xdist worker's first item, taken off its queue
    assert [name for name, _ in started] == ["j0", "j1", "j2"]
    lookahead.advance(jobs[1])
    assert lookahead.started == 5
    lookahead.advance(jobs[0])  # run again (a rerun): nothing moves back or starts twice
    lookahead.advance(Job("stranger", []))
    assert lookahead.started == 5 and len(started) == 5


def test_items_queued_later_join_the_end_of_the_order():
    lookahead, jobs, started = _queue(2, 3)
    lookahead.advance()
    assert lookahead.started == 2
    more = [Job("k0", started), Job("k1", started)]
    lookahead.queue((job, 7) for job in more)
    lookahead.advance(jobs[0])
    assert started[-2:] == [("k0", 7), ("k1", 7)]


def test_the_width_is_far_above_the_concurrency():
    assert width_for(1) == MIN_WIDTH and width_for(1000) == PER_SLOT * 1000
    with pytest.raises(ValueError):
        Lookahead(0)


# Run by pytester in this process and loaded by xdist workers too: a width of 3 for every process.
_NARROW = """
import json, pathlib, pytest
import pytest_ifbench.models.lookahead as lookahead
from pytest_ifbench._state import STATE_KEY

lookahead.MIN_WIDTH, lookahead.PER_SLOT = 3, 1

@pytest.hookimpl(trylast=True)
def pytest_runtest_setup(item):
    state = item.config.stash[STATE_KEY]
    waiting = len(state.generator._jobs)
    path = pathlib.Path(f"pending-{getattr(item.config, 'workerinput', {}).get('workerid', 'main')}.json")
    seen = json.loads(path.read_text()) if path.exists() else []
    path.write_text(json.dumps(seen + [waiting]))
"""


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_pending_jobs_stay_within_the_width_and_each_instance_is_generated_once(pytester, stub_env, workers,
                                                                                 monkeypatch):
    monkeypatch.setattr("pytest_ifbench.models.lookahead.MIN_WIDTH", 3)
    monkeypatch.setattr("pytest_ifbench.models.lookahead.PER_SLOT", 1)
    stub_env.latency = 0.02
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(30))
    pytester.makeconftest(_NARROW)
    result = pytester.runpytest("suites", *stub_args(stub_env, "--ifbench-concurrency=1"), "--ifbench-no-cache",
                                *workers)
    result.assert_outcomes(passed=30)
    asked = Counter(r.last_user_text for r in stub_env.requests)
    assert len(asked) == 30 and set(asked.values()) == {1}
    pending = [n for path in pytester.path.glob("pending-*.json") for n in json.loads(path.read_text())]
    assert len(pending) == 30
    # at its setup an item's own job is taken, the rest of the window waits: at most the width of
    # 3, plus under xdist this item's and the next one's, which a worker starts itself
    assert max(pending) <= (3 if not workers else 5), pending


def test_a_waiter_cancelled_as_its_slot_was_granted_hands_it_on_without_miscounting():
    """Claims are now asked for with a slot held and given up while queued, so this path is common: the slot
    went on, but the count of slots in use dropped below the truth (``peak`` under-reported)."""
    import asyncio

    from pytest_ifbench.models.background import PrioritySemaphore

    async def scenario() -> tuple[int, int, int]:
        sem = PrioritySemaphore(1)
        await sem.acquire()
        waiter = asyncio.ensure_future(sem.acquire())
        await asyncio.sleep(0)
        sem.release()  # grants the waiter's slot...
        waiter.cancel()  # ...which is cancelled before it resumes
        with pytest.raises(asyncio.CancelledError):
            await waiter
        in_use = sem._in_use
        await sem.acquire()
        return in_use, sem._in_use, sem.peak

    assert asyncio.run(scenario()) == (0, 1, 1)
