"""The event loop the recording proxy runs model calls on when the caller gives it none."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any

from ..models.client import Completion
from ..models.openai_compat import close_sessions

__all__ = ["LoopThread"]


class LoopThread:
    """An asyncio event loop in a daemon thread; :meth:`submit` runs a coroutine on it."""

    def __init__(self, name: str = "ifbench-proxy-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, Completion]) -> concurrent.futures.Future[Completion]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def close(self) -> None:
        """Close the model clients' pooled sessions made on the loop, cancel what still runs there (litellm
        leaves a logging task), stop and close it."""
        if self.loop.is_closed():
            return
        if self.loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(close_sessions(), self.loop).result(5)
            except Exception:  # a session that fails to close must not keep the loop open
                pass
            try:
                asyncio.run_coroutine_threadsafe(_cancel_tasks(), self.loop).result(5)
            except (concurrent.futures.TimeoutError, RuntimeError):
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)
        if not self.loop.is_running():
            self.loop.close()


async def _cancel_tasks() -> None:
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


