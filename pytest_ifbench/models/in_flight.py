"""A request identical to one another process is asking the model right now: wait for its reply, or claim it.

Processes sharing a response cache directory (xdist workers, shards on one machine) and, through a
shared tier, processes on other machines ask the model once for one cache key: the first claims it
(:meth:`~.cache.ResponseCache.claim`) and the others look for its reply until it is kept.

A claim is taken only by a request about to be sent: one holding a slot of the run's concurrency
limit (:func:`reply_or_turn`). The generation loop starts hundreds of jobs ahead of the items so the
limit stays full (:mod:`.lookahead`); had each claimed its key on starting, a process at
``--ifbench-concurrency=2`` held 256 leases for requests it was not asking, another machine running
the same requests waited on all of them (throttled to the first one's rate), a killed shard left them
behind, and renewing them one after another took longer than a lease lasts on a distant store.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from .cache import ResponseCache, kept_reply

#: How often a request waiting on another process's identical one looks for its reply.
POLL_SECONDS = 0.05
#: The longest pause between two looks when each look asks a shared tier over the network.
POLL_SHARED_SECONDS = 0.5


class Slot:
    """One slot of the run's concurrency limit (``acquire``/``release``, e.g. the generation loop's
    ``PrioritySemaphore``) held for a request's first attempt; released once, by whoever is done with it
    first (:meth:`release` again does nothing). Without a limit, nothing is held."""

    __slots__ = ("_limiter",)

    def __init__(self, limiter: Any = None) -> None:
        self._limiter = limiter

    @property
    def held(self) -> bool:
        return self._limiter is not None

    def release(self) -> None:
        limiter, self._limiter = self._limiter, None
        if limiter is not None:
            limiter.release()

    async def __aenter__(self) -> None:  # the slot is held already: entering takes nothing
        return None

    async def __aexit__(self, *exc: Any) -> None:
        self.release()


async def _slot(limiter: Any, look: Callable[[], Awaitable[dict[str, Any] | None]] | None,
                pause: float) -> tuple[Slot | None, dict[str, Any] | None]:
    """``(slot, None)`` once a slot of ``limiter`` is this request's; with ``look``, ``(None, reply)``
    instead if ``look()`` -- asked every ``pause`` seconds while the request is queued for the slot --
    finds another process's reply first (the queued acquisition is given up, and a slot it got is
    given back)."""
    if limiter is None:
        return Slot(), None
    if look is None:
        await limiter.acquire()
        return Slot(limiter), None
    taking = asyncio.ensure_future(limiter.acquire())  # (the task keeps this job's priority: its context)
    try:
        while not (await asyncio.wait({taking}, timeout=pause))[0]:
            kept = await look()
            if kept is not None:
                break
        else:
            taking.result()
            return Slot(limiter), None
    except BaseException:
        _give_back(taking, limiter)
        raise
    _give_back(taking, limiter)
    return None, kept


def _give_back(taking: asyncio.Future[Any], limiter: Any) -> None:
    """Give up the acquisition ``taking``: cancelled while queued (the limiter gives back a slot granted
    meanwhile), or the slot it got released."""
    if not taking.cancel() and not taking.cancelled() and taking.exception() is None:
        limiter.release()


async def reply_or_turn(cache: ResponseCache, key: str, patience: float,
                        limiter: Any = None) -> tuple[dict[str, Any] | None, bool, Slot | None]:
    """``(reply, claimed, slot)``: the reply another process is fetching for ``key``, once it is kept
    (no slot then); else None, and this process is to ask the model, holding ``slot`` -- a slot of
    ``limiter`` for its first attempt, taken before the claim, to :meth:`~Slot.release` once that
    attempt is done (an empty :class:`Slot` when there is no limiter). ``claimed`` tells whether it
    holds the claim on ``key`` then, to :meth:`~.cache.ResponseCache.release` once its reply is kept:
    it does not when ``patience`` seconds passed first (paying twice beats waiting forever on a process
    that hangs) -- the mark is still the other process's then, and releasing it would let a third
    process pay too.

    The claim is taken with a slot held, so a process holds claims only on requests it is sending (at
    most its concurrency's worth). A request that finds another process's claim gives its slot back
    while it waits, looking for the reply; it queues for a slot again (looking still) and tries the
    claim once it has one. A reply kept in between -- by a process that claimed the key after this one
    missed it and is done, or on another machine since this run listed the shared tier -- is looked
    for once the key is claimed; found, the claim and the slot are released and the reply returned."""
    # A shared tier leases and reads over the network: off the event loop then.
    offloop = cache.shared is not None

    async def run(call: Any, *args: Any) -> Any:
        return await asyncio.to_thread(call, *args) if offloop else call(*args)

    async def look() -> dict[str, Any] | None:
        return kept_reply(await run(cache.get, key, True))

    async def claim() -> bool:
        """``cache.claim(key)``; cancelled while a thread takes it, the claim is released once taken (else
        it stayed held, and every other process waited on it for its whole patience)."""
        if not offloop:
            return cache.claim(key)
        taking = asyncio.ensure_future(asyncio.to_thread(cache.claim, key))
        try:
            return await asyncio.shield(taking)
        except asyncio.CancelledError:
            taking.add_done_callback(lambda done: done.cancelled() or done.exception() is not None
                                     or not done.result() or cache.release(key))
            raise

    deadline: float | None = None  # patience counts from the first sight of another's claim (not the queue)
    pause = POLL_SECONDS
    while True:  # once another process's claim was seen, its reply is looked for while queued for a slot
        slot, kept = await _slot(limiter, look if deadline is not None else None, pause)
        if slot is None:
            return kept, False, None
        try:
            if await claim():
                break
        except BaseException:
            slot.release()
            raise
        if deadline is None:
            deadline = time.monotonic() + patience
        if time.monotonic() > deadline:
            return None, False, slot
        slot.release()  # no slot held while another process asks
        await asyncio.sleep(pause)
        if offloop:
            pause = min(pause * 2, POLL_SHARED_SECONDS)
        kept = await look()
        if kept is not None:
            return kept, False, None
    try:
        kept = await look()
    except BaseException:  # cancelled, or the read failed: neither the claim nor the slot is left held
        cache.release(key)
        slot.release()
        raise
    if kept is not None:
        cache.release(key)  # the shared tier's part is queued: no request on this thread
        slot.release()
        return kept, False, None
    return None, True, slot
