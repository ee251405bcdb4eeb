"""How far ahead of the running item instances' jobs are started.

Generation runs in the background so that an item mostly finds its episode ready (see
:mod:`.background`). Starting every instance's job at collection did that, but each pending job holds
its task, coroutine, future and, once its reply is read from the cache, the decoded episode until its
item runs: about 3 KB per instance, all of them at once on a cached run (150 MB at 50,000 instances).
:class:`Lookahead` starts jobs in run order only as far as ``width`` items past the item pytest is
running, so what waits is bounded by the width, not by the suite. The width is far above the
concurrency limit (:func:`width_for`), so the limiter stays full; only an item whose own job takes
longer than ``width`` other items' jobs makes the rest wait for it.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any, Protocol

#: Jobs started ahead of the running item: at least this many, and at least
#: :data:`PER_SLOT` per concurrency slot.
MIN_WIDTH = 256
PER_SLOT = 8


class Startable(Protocol):
    def start_job(self, priority: int) -> None: ...


def width_for(concurrency: int) -> int:
    return max(MIN_WIDTH, PER_SLOT * concurrency)


class Lookahead:
    """Starts the jobs of items queued in run order, up to ``width`` past the one running.

    The window is refilled when fewer than half of it is left ahead: starting one job per item woke
    the generation thread for every item (a thread switch each: 0.4 ms per instance on a cached run).

    Items are queued with their priority (their collection index: under contention the earliest
    item's calls go first); :meth:`advance` is called as each item starts running.
    """

    def __init__(self, width: int) -> None:
        if width < 1:
            raise ValueError("width must be >= 1")
        self.width = width
        self._items: list[Any] = []
        self._priorities = array("q")
        self._started = 0
        #: Where the running item was last found: items run in queue order, so the next is close by.
        self._cursor = 0

    def queue(self, items: Iterable[tuple[Startable, int]]) -> None:
        """Add ``(item, priority)`` pairs at the end of the run order."""
        for item, priority in items:
            self._items.append(item)
            self._priorities.append(priority)

    def advance(self, running: Startable | None = None) -> None:
        """Start the jobs up to ``width`` items past ``running``.

        ``running`` is looked for among the items whose jobs were started and the next one, from where
        the last one was found (so at most ``width`` steps). When it is not there (None, an item run
        again or out of order, an xdist worker's first item, which left the queue before it joined
        this order) the window is kept where it was: up to ``width`` past the last one found."""
        position = self._find(running) if running is not None else -1
        if position < 0:
            position = self._cursor - 1
        if self._started - (position + 1) > self.width // 2:
            return  # refilled in bursts: each start wakes the generation thread, once per burst is enough
        end = min(len(self._items), position + 1 + self.width)
        while self._started < end:
            index = self._started
            self._started += 1
            self._items[index].start_job(self._priorities[index])

    def _find(self, item: Any) -> int:
        items = self._items
        for index in range(self._cursor, min(len(items), self._started + 1)):  # the next unstarted one too
            if items[index] is item:
                self._cursor = index
                return index
        return -1

    @property
    def started(self) -> int:
        """How many queued jobs were started."""
        return self._started
