"""The shared tier behind the local response cache: read-through, write-through, write-once.

:class:`StoreTier` is the :class:`~pytest_ifbench.models.cache.SharedTier` a run attaches to
its :class:`~pytest_ifbench.models.cache.ResponseCache`. The calls come from the generation
loop's thread, so the tier keeps the network off them where it can:

* the store's keys are listed once, on a background thread, before generation starts
  (:meth:`StoreTier.start`, :meth:`StoreTier.wait_ready`); a miss the store cannot answer is
  then decided in memory, with no request;
* a write is queued and sent by a background thread (write-through): the loop never waits
  for it; the queue is drained at the end of the run (:meth:`StoreTier.close`);
* an entry the local directory holds but the store lacks (a killed shard's, an earlier
  run's) is offered again on its next local hit, so the store catches up;
* the one request on the caller's thread is the GET of an entry the store holds, which
  replaces a model call (a few milliseconds against a call of seconds).

Whatever fails -- the store down, a timeout, a refused write -- is one warning (the first
failure's reason, through ``warn``); the tier then stands aside and the run goes on with
the local cache. Entries are the cache's own redacted JSON text: no API key reaches a store.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from .._redact import redact
from .stores import Store

#: How long the end of a run waits for queued writes.
FLUSH_SECONDS = 120.0


@dataclass(kw_only=True)
class TierStats:
    fetched: int = 0
    uploaded: int = 0
    known: int = 0


class StoreTier:
    """A :class:`~..stores.Store` as the cache's second tier (see the module docstring)."""

    def __init__(self, store: Store, *, warn: Callable[[str], None]) -> None:
        self.store = store
        self.stats = TierStats()
        self.problem: str | None = None
        self._warn = warn
        self._index: set[str] = set()
        self._offered: set[str] = set()
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[tuple[str, str] | None] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None
        self._lister: threading.Thread | None = None
        self._closed = False

    # -- life cycle -------------------------------------------------------------------------

    def ping(self) -> bool:
        """Whether the store answers (on the calling thread); False after the one warning."""
        try:
            self.store.ping()
            return True
        except Exception as exc:  # noqa: BLE001 - any client error means: go on without it
            self._fail(exc)
            return False

    def start(self) -> None:
        """List the store's keys on a background thread (:meth:`wait_ready` waits for it)."""
        if self._lister is None:
            self._lister = threading.Thread(target=self._list, name="ifbench-shared-index", daemon=True)
            self._lister.start()

    def _list(self) -> None:
        try:
            found = set(self.store.keys())
            with self._lock:
                self._index |= found
            self.stats.known = len(found)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)
        finally:
            self._ready.set()

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Wait for the key listing (called before generation starts, off the loop)."""
        if self._lister is not None and not self._ready.wait(timeout):
            self._fail(TimeoutError(f"listing the store's keys took more than {timeout:g} s"))

    def close(self, timeout: float = FLUSH_SECONDS) -> None:
        """Send the queued writes (up to ``timeout``), then close the store's client (once)."""
        if self._closed:
            return
        self._closed = True
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join(timeout)
            if self._writer.is_alive():
                self._fail(TimeoutError(f"writes still queued after {timeout:g} s"))
        try:
            self.store.close()
        except Exception:  # noqa: BLE001 - closing a client that failed already
            pass

    # -- the SharedTier calls -----------------------------------------------------------------

    def fetch(self, key: str) -> str | None:
        if self.problem is not None:
            return None
        if not self._ready.is_set():  # a cache used outside a run's start-up: list now
            self.start()
            self.wait_ready()
        if key not in self._index:
            return None
        try:
            data = self.store.get(key)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)
            return None
        if data is None:
            return None
        self.stats.fetched += 1
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def offer(self, key: str, text: str) -> None:
        if self.problem is not None or key in self._index:
            return
        with self._lock:
            if key in self._offered:
                return
            self._offered.add(key)
            if self._writer is None:
                self._writer = threading.Thread(target=self._write, name="ifbench-shared-writer", daemon=True)
                self._writer.start()
        self._queue.put((key, text))

    def _write(self) -> None:
        while (item := self._queue.get()) is not None:
            if self.problem is not None:
                continue  # drain: the tier stood aside
            key, text = item
            try:
                self.store.put_once(key, text.encode("utf-8"))
            except Exception as exc:  # noqa: BLE001
                self._fail(exc)
                continue
            self._index.add(key)
            self.stats.uploaded += 1

    def _fail(self, exc: BaseException) -> None:
        with self._lock:
            if self.problem is not None:
                return
            detail = redact(str(exc).strip().splitlines()[0] if str(exc).strip() else "")[:300]
            self.problem = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        self._ready.set()
        self._warn(f"shared cache {self.store.display} unavailable ({self.problem}); "
                   "the run goes on with the local cache")
