"""A request identical to one another process is asking the model right now: wait for its reply, or claim it.

Processes sharing a response cache directory (xdist workers, shards on one machine) and, through a
shared tier, processes on other machines ask the model once for one cache key: the first claims it
(:meth:`~.cache.ResponseCache.claim`) and the others look for its reply until it is kept.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from .cache import ResponseCache

#: How often a request waiting on another process's identical one looks for its reply.
POLL_SECONDS = 0.05
#: The longest pause between two looks when each look asks a shared tier over the network.
POLL_SHARED_SECONDS = 0.5


def kept_reply(entry: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The reply a response-cache entry keeps; None for none or a damaged one (then the model is asked)."""
    response = entry.get("response") if entry is not None else None
    return response if isinstance(response, dict) and isinstance(response.get("raw_text"), str) else None


async def reply_or_claim(cache: ResponseCache, key: str,
                         patience: float) -> tuple[dict[str, Any] | None, bool]:
    """``(reply, claimed)``: the reply another process is fetching for ``key``, once it is kept; else
    None, and this process is to ask the model. ``claimed`` tells whether it holds the claim on ``key``
    then, to :meth:`~.cache.ResponseCache.release` once its reply is kept: it does not when ``patience``
    seconds passed first (paying twice beats waiting forever on a process that hangs) -- the mark is
    still the other process's then, and releasing it would let a third process pay too.

    A reply kept in between -- by a process that claimed the key after this one missed it and is done,
    or on another machine since this run listed the shared tier -- is looked for once the key is
    claimed; found, the claim is released and the reply returned."""
    # A shared tier leases and reads over the network: off the event loop then.
    offloop = cache.shared is not None

    async def run(call: Any, *args: Any) -> Any:
        return await asyncio.to_thread(call, *args) if offloop else call(*args)

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

    deadline = time.monotonic() + patience
    pause = POLL_SECONDS
    while not await claim():
        if time.monotonic() > deadline:
            return None, False
        await asyncio.sleep(pause)
        if offloop:
            pause = min(pause * 2, POLL_SHARED_SECONDS)
        kept = kept_reply(await run(cache.get, key, True))
        if kept is not None:
            return kept, False
    try:
        kept = kept_reply(await run(cache.get, key, True))
    except BaseException:  # cancelled, or the read failed: the claim is not left held
        cache.release(key)
        raise
    if kept is not None:
        cache.release(key)  # the shared tier's part is queued: no request on this thread
        return kept, False
    return None, True
