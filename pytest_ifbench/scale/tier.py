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
  replaces a model call (a few milliseconds against a call of seconds);
* a key about to be asked of the model is leased in the store first (:meth:`StoreTier.claim`,
  on a store with :class:`~..stores.Claims`): a process on another machine about to ask the
  same waits for this one's entry instead of paying for its own. A lease lasts
  :data:`LEASE_SECONDS` and is renewed by a background thread while the call runs, so a killed
  process's leases run out within that; it ends (:meth:`StoreTier.release`) once the entry is
  written, through the same queue as the writes, so a waiter that sees the lease gone finds
  the entry. The caller's thread pays the lease's one request and, after it, one GET of the
  entry (another process may have written it since the listing) per model call;
* an entry the store holds that the cache cannot answer from (cut short, not JSON, no reply in it:
  :func:`usable`) is a miss, and the reply this process then pays for replaces it in the store
  (:meth:`~..stores.Repairs.replace`): only while the store still holds that damaged text, so an
  entry another process wrote meanwhile is never overwritten (both are replies to the same request).

Whatever fails -- the store down, a timeout, a refused write -- is one warning (the first
failure's reason, :attr:`StoreTier.problem`, and whether it came during the run; :func:`warning`
words it, and ``warn`` is told it); the tier then stands aside and the run goes on with the local
cache. Entries are the cache's own redacted JSON text: no API key reaches a store.
"""

from __future__ import annotations

import json
import queue
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from .._owner import gone, this_process
from .._redact import redact
from .stores import Store, hint

#: How long the end of a run waits for queued writes.
FLUSH_SECONDS = 120.0
#: How long a lease on a key lasts unless renewed (every third of it while this process holds it).
LEASE_SECONDS = 30.0


@dataclass(kw_only=True)
class TierStats:
    #: keys whose entry came from the store, usable (each counted once, however often it was read)
    fetched: int = 0
    uploaded: int = 0
    known: int = 0
    #: keys another process held the lease on when this one was about to ask the model
    waited: int = 0
    #: keys whose entry in the store was damaged (:func:`usable`), and those this process replaced
    damaged: int = 0
    replaced: int = 0


class StoreTier:
    """A :class:`~..stores.Store` as the cache's second tier (see the module docstring)."""

    def __init__(self, store: Store, *, warn: Callable[[str], None] = lambda _: None) -> None:
        self.store = store
        self.stats = TierStats()
        self.problem: str | None = None
        #: whether that failure came after the store's keys were listed (the run was using it)
        self.failed_during_run = False
        self._warn = warn
        self._listed = False
        self._index: set[str] = set()
        self._offered: set[str] = set()
        self._fetched: set[str] = set()
        #: key -> the damaged entry the store held when last read (replaced by this process's next offer)
        self._damaged: dict[str, bytes] = {}
        self._found_damaged: set[str] = set()
        self._replaced: set[str] = set()
        self._ready = threading.Event()
        self._lock = threading.Lock()
        # (key, entry text, the damaged entry it replaces or None) to write, (key, None, None) to end this
        # process's lease on key; None: stop
        self._queue: queue.SimpleQueue[tuple[str, str | None, bytes | None] | None] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None
        self._lister: threading.Thread | None = None
        self._closed = False
        self.leases = all(callable(getattr(store, name, None)) for name in ("claim", "renew", "unclaim"))
        self._owner = f"{this_process()} {uuid.uuid4().hex}"
        self._held: set[str] = set()
        self._waited: set[str] = set()
        self._renewer: threading.Thread | None = None
        self._stop = threading.Event()

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
            self._listed = True
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)
        finally:
            self._ready.set()

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Wait for the key listing (called before generation starts, off the loop)."""
        if self._lister is not None and not self._ready.wait(timeout):
            self._fail(TimeoutError(f"listing the store's keys took more than {timeout:g} s"))

    def close(self, timeout: float = FLUSH_SECONDS) -> None:
        """Send the queued writes (up to ``timeout``), then close the store's client (once), after the
        renewing thread has stopped: a renewal cut off by the close is not the store failing."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join(timeout)
            if self._writer.is_alive():
                self._fail(TimeoutError(f"writes still queued after {timeout:g} s"))
        if self._renewer is not None:
            self._renewer.join(timeout)  # at most the renewal under way (the clients' timeouts bound it)
        try:
            self.store.close()
        except Exception:  # noqa: BLE001 - closing a client that failed already
            pass

    # -- the SharedTier calls -----------------------------------------------------------------

    def fetch(self, key: str, fresh: bool = False) -> str | None:
        """The entry's text; ``fresh``: asked of the store even when its listing lacked ``key`` (an
        entry written since, by a process this one waited for or one that started later)."""
        if self.problem is not None:
            return None
        if not self._ready.is_set():  # a cache used outside a run's start-up: list now
            self.start()
            self.wait_ready()
        if key not in self._index and not fresh:
            return None
        try:
            data = self.store.get(key)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)
            return None
        if data is None:
            return None
        text = usable(data)
        with self._lock:
            if text is None:  # a miss: not listed any more, and this process's reply replaces it (offer)
                self._index.discard(key)
                self._damaged[key] = data
                self._found_damaged.add(key)
                self.stats.damaged = len(self._found_damaged)
                return None
            self._index.add(key)
            self._damaged.pop(key, None)  # replaced since by another process
            self._fetched.add(key)
            self.stats.fetched = len(self._fetched)
        return text

    def offer(self, key: str, text: str) -> None:
        if self.problem is not None:
            return
        with self._lock:
            damaged = self._damaged.pop(key, None)
            if damaged is not None and usable(text.encode("utf-8")) is None:
                self._damaged[key] = damaged  # (a local entry as damaged: nothing to replace it with)
                return
            if damaged is None:
                if key in self._index or key in self._offered:
                    return
                self._offered.add(key)
            self._start_writer()
        self._queue.put((key, text, damaged))

    def claim(self, key: str) -> bool:
        """Lease ``key`` to this process before it asks the model: False while another process holds
        its lease (it is asking); True otherwise, and whenever the tier cannot lease (a store without
        :class:`~..stores.Claims`, or one that failed): then this process asks, as it would alone."""
        if self.problem is not None or not self.leases:
            return True
        try:
            won = self.store.claim(key, self._owner, LEASE_SECONDS, _gone)  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)
            return True
        if not won:
            with self._lock:
                self._waited.add(key)
                self.stats.waited = len(self._waited)
            return False
        with self._lock:
            self._held.add(key)
            if self._renewer is None:
                self._renewer = threading.Thread(target=self._renew, name="ifbench-shared-leases", daemon=True)
                self._renewer.start()
        return True

    def release(self, key: str) -> None:
        """End this process's lease on ``key``, after the writes queued before (its entry's among them)."""
        with self._lock:
            if key not in self._held:
                return
            self._held.discard(key)
            self._start_writer()
        self._queue.put((key, None, None))

    def _start_writer(self) -> None:  # under self._lock
        if self._writer is None:
            self._writer = threading.Thread(target=self._write, name="ifbench-shared-writer", daemon=True)
            self._writer.start()

    def _write(self) -> None:
        while (item := self._queue.get()) is not None:
            if self.problem is not None:
                continue  # drain: the tier stood aside (its leases run out by themselves)
            key, text, damaged = item
            if text is None:
                try:
                    self.store.unclaim(key, self._owner)  # type: ignore[attr-defined]
                except Exception:  # noqa: BLE001 - e.g. a store refusing conditional deletes: the lease runs out
                    pass
                continue
            try:
                replaced = self._put(key, text.encode("utf-8"), damaged)
            except Exception as exc:  # noqa: BLE001
                self._fail(exc)
                continue
            with self._lock:
                self._index.add(key)
                self.stats.uploaded += 1
                if replaced:
                    self._replaced.add(key)
                    self.stats.replaced = len(self._replaced)

    def _put(self, key: str, data: bytes, damaged: bytes | None) -> bool:
        """Write ``data`` once, or in place of ``damaged`` while the store holds that: whether it replaced it."""
        replace = getattr(self.store, "replace", None)
        if damaged is None or not callable(replace):  # a store without Repairs: its damaged entry stays
            self.store.put_once(key, data)
            return False
        return bool(replace(key, data, damaged))

    def _renew(self) -> None:
        while not self._stop.wait(LEASE_SECONDS / 3):
            with self._lock:
                held = list(self._held)
            for key in held:
                if self.problem is not None or self._stop.is_set():
                    return
                try:
                    kept = self.store.renew(key, self._owner, LEASE_SECONDS)  # type: ignore[attr-defined]
                except Exception as exc:  # noqa: BLE001
                    self._fail(exc)
                    return
                if not kept:  # run out while this process stalled, and taken over: the other one asks too
                    with self._lock:
                        self._held.discard(key)

    def _fail(self, exc: BaseException) -> None:
        with self._lock:
            if self.problem is not None:
                return
            detail = redact(str(exc).strip().splitlines()[0] if str(exc).strip() else "")[:300]
            self.problem = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
            if advice := hint(exc):
                self.problem += f" -- {advice}"
            self.failed_during_run = self._listed
        self._ready.set()
        self._warn(warning(self.store.display, self.problem, during_run=self.failed_during_run))


def warning(display: str, problem: str, *, during_run: bool, where: str = "") -> str:
    """The warning line for a tier that stood aside (``where``: " on gw0, gw1" for xdist workers)."""
    if during_run:  # the run was reading and writing it: say what is missing from the store
        return (f"shared cache {display} failed during the run{where} ({problem}); the run went on with the "
                "local cache, so what it paid for from then on is not in the store (a later run on this "
                "machine offers it when it reads it)")
    return f"shared cache {display} unavailable{where} ({problem}); the run goes on with the local cache"


def usable(data: bytes) -> str | None:
    """An entry's text when the cache can answer from it -- a JSON object keeping a reply, ``response`` with its
    ``raw_text`` (what :func:`~..models.in_flight.kept_reply` takes) -- or None: damaged (cut short, not JSON)."""
    try:
        text = data.decode("utf-8")
        entry = json.loads(text)
    except (ValueError, RecursionError):
        return None
    response = entry.get("response") if isinstance(entry, dict) else None
    return text if isinstance(response, dict) and isinstance(response.get("raw_text"), str) else None


def _gone(owner: str) -> bool:
    """Whether a lease's owner is a process of this host that has ended (a shard killed and run again)."""
    return gone(owner) is True
