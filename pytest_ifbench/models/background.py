"""Background generation: model calls run concurrently while items execute in order.

One daemon thread runs an asyncio loop. Jobs (one per instance) are
submitted in item order with their index as priority, a bounded distance
ahead of the running item (:mod:`.lookahead`); every model call takes a slot
from a :class:`PrioritySemaphore`, so when calls compete the earliest item
wins and each item mostly finds its episode ready. Multi-turn jobs keep their
turns sequential but overlap with other jobs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import heapq
import itertools
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .spending import usd

#: Priority of the job the current task belongs to (lower runs first).
PRIORITY: contextvars.ContextVar[int] = contextvars.ContextVar("ifbench_priority", default=0)
#: Seconds the current episode has spent waiting for a slot (see :func:`start_wait_clock`).
_WAITED: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar("ifbench_waited", default=None)


#: Seconds a stopped run (Ctrl-C, SIGTERM) waits for the model calls it already sent (:func:`stop_and_drain`), so
#: that their replies -- billed in any case -- are in the cache for the re-run; within the 30 s Kubernetes gives a
#: pod before SIGKILL. An xdist controller waits as long (and a little more) for its workers to be done.
DRAIN_SECONDS = 20.0

#: The tasks whose model call was sent and whose reply is not kept yet (:func:`call_sent`): the provider bills them
#: whatever this process does next, so a run that stops lets them finish for a while (:func:`stop_and_drain`) and
#: keeps their replies, where cancelling them paid for them now and again on the re-run.
_SENDING: set[asyncio.Task[Any]] = set()
#: Set while a stopping run waits for the calls on their way: no call is sent any more.
_DRAINING = threading.Event()
#: The calls answered while a stopping run waited for them: how many, the USD of those priced, how many had no
#: price. Their replies are in the cache and in no record, so the run's tables are short of them: said at the end.
_AFTER_STOP = [0, 0.0, 0]


def call_sent() -> None:
    """The current task is about to send a model call; :class:`asyncio.CancelledError` instead when the run
    is stopping (the call is not sent). :func:`call_over` ends it, once the reply is kept (or the call failed)."""
    if _DRAINING.is_set():
        raise asyncio.CancelledError("the run is stopping: no new model call")
    task = asyncio.current_task()
    if task is not None:
        _SENDING.add(task)


def stop_and_drain(seconds: float, say: Callable[[str], None] = lambda _: None) -> None:
    """The run is stopping (Ctrl-C, SIGTERM): no model call is sent from now on, and this waits up to
    ``seconds`` for those already sent, so that their replies -- paid for in any case -- reach the caches
    (the shared one too: it is closed after this) for the re-run; ``say`` tells how many, once. A
    KeyboardInterrupt (a second Ctrl-C) ends the wait; the jobs left are cancelled at the end."""
    _DRAINING.set()
    if not _SENDING:
        return
    say(f"waiting up to {seconds:g} s for {len(_SENDING)} model call(s) already sent (paid for), so that a re-run "
        "finds their replies in the cache; Ctrl-C again to stop now")
    deadline = time.monotonic() + seconds
    try:
        while _SENDING and time.monotonic() < deadline:  # (the loop's thread empties it)
            time.sleep(0.05)
    except KeyboardInterrupt:
        pass
    calls, priced, unpriced = _AFTER_STOP
    if calls:
        cost = f" cost {usd(priced)}" + (f" ({unpriced:,} with no price)" if unpriced else "") \
            if unpriced < calls else " had no price"
        say(f"{calls:,} model call(s) answered after the stop{cost}: their replies are in the cache, in no record "
            "(a re-run takes them free)")


def resume_sending() -> None:
    """A new run may send again (the last one stopped; runs in one process follow one another)."""
    _DRAINING.clear()
    _AFTER_STOP[:] = [0, 0.0, 0]


def call_over(kept: Mapping[str, Any] | None = None) -> None:
    """The current task's call is over: its reply kept (in the cache; ``kept``, its entry), or it failed."""
    task = asyncio.current_task()
    if task is None:
        return
    if kept is not None and _DRAINING.is_set() and task in _SENDING:
        cost = kept.get("cost")
        _AFTER_STOP[0] += 1
        if isinstance(cost, int | float):
            _AFTER_STOP[1] += cost
        else:
            _AFTER_STOP[2] += 1
    _SENDING.discard(task)


def start_wait_clock() -> list[float]:
    """Start counting, for the current task, the seconds spent waiting for a slot (the run's
    concurrency limit, the agent-run slots); returns the one-element total.

    Jobs start well ahead of their items (up to the lookahead's width), so a job that waits in the
    queue for minutes before its first call would otherwise report those minutes as its generation
    time (a 50,000-instance fill: 4.6 million seconds "of generation"; JUnit and Allure showed the
    same time)."""
    cell = [0.0]
    _WAITED.set(cell)
    return cell


def add_wait(seconds: float) -> None:
    """Count ``seconds`` of waiting for a slot against the current task's clock, if it has one."""
    cell = _WAITED.get()
    if cell is not None:
        cell[0] += seconds


class PrioritySemaphore:
    """An asyncio semaphore that wakes the lowest-priority-number waiter first."""

    def __init__(self, value: int) -> None:
        if value < 1:
            raise ValueError("concurrency must be >= 1")
        self._value = value
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._counter = itertools.count()
        self.peak = 0
        self._in_use = 0

    async def acquire(self) -> None:
        if self._value > 0 and not self._waiters:
            self._value -= 1
        else:
            loop = asyncio.get_running_loop()
            future: asyncio.Future[None] = loop.create_future()
            heapq.heappush(self._waiters, (PRIORITY.get(), next(self._counter), future))
            queued = loop.time()
            try:
                await future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled():
                    self._hand_on()  # granted as it was cancelled: the slot goes to the next (never counted in use)
                raise
            finally:
                add_wait(loop.time() - queued)
        self._in_use += 1
        self.peak = max(self.peak, self._in_use)

    def release(self) -> None:
        self._in_use -= 1
        self._hand_on()

    def _hand_on(self) -> None:
        """A freed slot to the first waiter still waiting, else back to the pool."""
        while self._waiters:
            _, _, future = heapq.heappop(self._waiters)
            if not future.done():
                future.set_result(None)
                return
        self._value += 1

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: Any) -> None:
        self.release()


class BackgroundGenerator:
    """Runs episode jobs on a private event loop in a daemon thread."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="ifbench-generation", daemon=True)
        self._thread.start()
        self.limiter: PrioritySemaphore = asyncio.run_coroutine_threadsafe(
            self._make_limiter(), self._loop
        ).result()
        self._jobs: dict[str, concurrent.futures.Future[Any]] = {}
        self._lock = threading.Lock()

    async def _make_limiter(self) -> PrioritySemaphore:
        return PrioritySemaphore(self.concurrency)

    async def _run(self, priority: int, factory: Callable[[], Awaitable[Any]]) -> Any:
        PRIORITY.set(priority)
        return await factory()

    def submit(self, key: str, priority: int, factory: Callable[[], Awaitable[Any]]) -> concurrent.futures.Future[Any]:
        """Start the job for ``key`` unless it is already running; idempotent."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                job = asyncio.run_coroutine_threadsafe(self._run(priority, factory), self._loop)
                self._jobs[key] = job
            return job

    def run_threadsafe(self, coro: Awaitable[Any]) -> concurrent.futures.Future[Any]:
        """Run ``coro`` on the generation loop from any other thread (e.g. a proxy's handler)."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)  # type: ignore[arg-type]

    def submitted(self, key: str) -> bool:
        return key in self._jobs

    def pop(self, key: str) -> concurrent.futures.Future[Any] | None:
        with self._lock:
            return self._jobs.pop(key, None)

    def shutdown(self, before_stop: Callable[[], Awaitable[Any]] | None = None) -> None:
        """Cancel the jobs, run ``before_stop()`` on the loop (closing what belongs to it), stop the loop."""
        for job in list(self._jobs.values()):
            job.cancel()
        if before_stop is not None:
            try:
                asyncio.run_coroutine_threadsafe(before_stop(), self._loop).result(timeout=5)  # type: ignore[arg-type]
            except Exception:  # closing connections is a courtesy to the server; never fail the run over it
                pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
