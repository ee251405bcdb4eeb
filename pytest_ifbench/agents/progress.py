"""This process's agent activity, for the live status line (:mod:`pytest_ifbench.reports.live_status`).

The built-in loop and the recording proxy's meter tell :data:`BOARD` about every agent step (one model
call: its tokens and cost, or that its reply came from the cache, which this run did not pay for) and
every run that starts or ends. The board only adds numbers up under a lock; whoever shows them takes a
:meth:`Board.snapshot` (a plain, JSON-safe dict) when it likes.

One board per process, a module global, because the step counters sit far below anything that knows
the pytest session (a meter inside a proxy inside a CLI run inside the background generation loop), and
one process runs one session: the live status resets it at session start (:meth:`Board.reset`). Under
xdist each worker has its own board; the live status ships its snapshots to the controller.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["BOARD", "Board"]


class Board:
    """Counters of agent runs and steps; every method is thread-safe and cheap (a lock, a few adds)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._running = self._runs = self._steps = self._tokens = 0
            self._cost = 0.0
            self._version = 0

    def begin(self) -> None:
        """An agent run started (the loop's, or a real CLI's behind the proxy)."""
        with self._lock:
            self._running += 1
            self._runs += 1
            self._version += 1

    def end(self) -> None:
        """An agent run ended (whatever the reason)."""
        with self._lock:
            self._running = max(self._running - 1, 0)
            self._version += 1

    def step(self, *, tokens: int, cost: float | None, cached: bool = False) -> None:
        """One agent step: a model call answered, with its prompt + completion tokens and cost (USD).
        ``cached``: its reply came from the cache: a step, but no tokens or cost (this run paid none)."""
        with self._lock:
            self._steps += 1
            if not cached:
                self._tokens += max(int(tokens), 0)
                self._cost += cost or 0.0
            self._version += 1

    @property
    def version(self) -> int:
        """Changes whenever a counter does (a writer skips unchanged snapshots)."""
        with self._lock:
            return self._version

    def snapshot(self) -> dict[str, Any]:
        """``{running, runs, steps, tokens, cost}`` now (``tokens`` and ``cost``: the paid steps')."""
        with self._lock:
            return {"running": self._running, "runs": self._runs, "steps": self._steps, "tokens": self._tokens,
                    "cost": round(self._cost, 8)}


#: This process's board.
BOARD = Board()
