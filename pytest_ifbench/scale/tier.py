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

A store that cannot be reached at start (or whose keys cannot be listed) is one warning, and the tier
stands aside: the run goes on with the local cache. During the run the tier is two parts that fail
apart -- **reads** (the GETs) and **writes and leases** (entries, leases, renewals):

* a request the store *refuses* (:meth:`~..stores.Refusals.refused`: a permission denied -- a read-only
  credential, a bucket policy, a Redis ACL --, a read-only replica, a quota) stops its part for the rest
  of the run at once: a refused write stops only writes and leases, and the entries the store holds are
  still read; a refused read stops only reads;
* any other failure (a timeout, a connection reset, S3's 503 SlowDown, the store restarting) is that one
  request's: a read is a miss, a lease is not taken (the caller looks again, as while another process
  holds it, within its patience), a write is sent again. Its part rests a moment (:data:`REST_SECONDS`,
  doubled after each failure in a row) and asks again; it stops only when its requests have all
  failed for :data:`FAILING_SECONDS` (at least :data:`FAILURES` of them) -- and the other part with it
  when that one's last request failed too (the store is down).

A stopped part is one warning (the reason, :attr:`StoreTier.problem`, what stopped,
:attr:`StoreTier.stopped`, and whether during the run; :func:`warning` words it, and ``warn`` is told
it). Entries are the cache's own redacted JSON text: no API key reaches a store.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from .._owner import gone, this_process
from .._redact import redact
from ..models.cache import kept_reply
from .stores import Store, hint

#: How long the end of a run waits for queued writes.
FLUSH_SECONDS = 120.0
#: How long a lease on a key lasts unless renewed (every third of it while this process holds it).
LEASE_SECONDS = 30.0
#: A part of the tier (reads; writes and leases) stops once its requests have all failed for FAILING_SECONDS, at
#: least FAILURES of them: a blip -- a burst of S3 503 SlowDown, a Redis failover or restart, a connection reset --
#: passes within a few seconds, while a store that answered nothing for 10 s is down for this run's purposes, and
#: each further request costs a caller a timeout. (Concurrent requests fail together, hence the time as well as
#: the count.) Stopping is cheap for writes (other processes pay for what is not written) and dear for reads
#: (every held entry is paid for again), so reads are not stopped sooner than writes.
FAILURES = 5
FAILING_SECONDS = 10.0
#: After the second failure in a row a part rests REST_SECONDS, doubled at each further one up to REST_MAX_SECONDS:
#: no request meanwhile (a read is a miss, a lease not taken, the writer waits). The first failure has no rest, so
#: one failed request costs one miss.
REST_SECONDS = 0.5
REST_MAX_SECONDS = 4.0
#: Attempts at listing the store's keys at start, a failure other than a refusal apart.
LIST_ATTEMPTS = 3

READS, WRITES = "reads", "writes and leases"


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
    #: keys the store listed whose read failed (or was skipped while the store failed) before reads stopped: each a
    #: miss, asked of the model (not counting those fetched later)
    unread: int = 0


class _Part:
    """Reads, or writes and leases: the failures in a row, the rest they bought, and why the part stopped."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stopped: str | None = None
        self.streak = 0
        self.since = 0.0
        self.until = 0.0

    def rest(self) -> float:
        """Seconds until the part may ask the store again (0: now)."""
        return max(0.0, self.until - time.monotonic())

    def failed(self) -> bool:
        """Count one failure that was no refusal: whether the part is to stop now (see :data:`FAILURES`)."""
        now = time.monotonic()
        if self.streak == 0:
            self.since = now
        self.streak += 1
        if self.streak >= FAILURES and now - self.since >= FAILING_SECONDS:
            return True
        if self.streak > 1:
            self.until = now + min(REST_SECONDS * 2 ** (self.streak - 2), REST_MAX_SECONDS)
        return False

    def answered(self) -> None:
        self.streak, self.until = 0, 0.0


class StoreTier:
    """A :class:`~..stores.Store` as the cache's second tier (see the module docstring)."""

    def __init__(self, store: Store, *, warn: Callable[[str], None] = lambda _: None) -> None:
        self.store = store
        self.stats = TierStats()
        #: the reason the first part stopped (see :attr:`stopped`); None while both go on
        self.problem: str | None = None
        #: whether that failure came after the store's keys were listed (the run was using it)
        self.failed_during_run = False
        self._warn = warn
        self._listed = False
        self._reads, self._writes = _Part(READS), _Part(WRITES)
        self._index: set[str] = set()
        self._offered: set[str] = set()
        self._fetched: set[str] = set()
        self._unread: set[str] = set()
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

    @property
    def stopped(self) -> str | None:
        """What stopped: ``"everything"``, ``"reads"``, ``"writes"`` (and leases), or None."""
        reads, writes = self._reads.stopped is not None, self._writes.stopped is not None
        return "everything" if reads and writes else "reads" if reads else "writes" if writes else None

    # -- life cycle -------------------------------------------------------------------------

    def ping(self, attempts: int = 1) -> bool:
        """Whether the store answers (on the calling thread), asked up to ``attempts`` times while it fails
        without refusing (a store restarting); False after the one warning (:attr:`problem`)."""
        for attempt in range(1, attempts + 1):
            try:
                self.store.ping()
                return True
            except Exception as exc:  # noqa: BLE001 - any client error means: go on without it
                if attempt == attempts or self._refused(exc):
                    self._fail(exc)
                    return False
                time.sleep(REST_SECONDS * attempt)
        return False

    def start(self) -> None:
        """List the store's keys on a background thread (:meth:`wait_ready` waits for it)."""
        if self._lister is None:
            self._lister = threading.Thread(target=self._list, name="ifbench-shared-index", daemon=True)
            self._lister.start()

    def _list(self) -> None:
        try:
            for attempt in range(1, LIST_ATTEMPTS + 1):
                try:
                    found = set(self.store.keys())
                    break
                except Exception as exc:  # noqa: BLE001
                    if attempt == LIST_ATTEMPTS or self._refused(exc):
                        self._fail(exc)
                        return
                    time.sleep(REST_SECONDS * attempt)
            with self._lock:
                self._index |= found
            self.stats.known = len(found)
            self._listed = True
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
                self._fail(TimeoutError(f"writes still queued after {timeout:g} s"), self._writes)
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
        if self._reads.stopped is not None:
            return None
        if not self._ready.is_set():  # a cache used outside a run's start-up: list now
            self.start()
            self.wait_ready()
        if (key not in self._index and not fresh) or self._reads.stopped is not None:
            return None
        if self._reads.rest():  # the store failing: a miss, with no request
            self._not_read(key)
            return None
        try:
            data = self.store.get(key)
        except Exception as exc:  # noqa: BLE001
            self._failed(self._reads, exc)
            self._not_read(key)
            return None
        self._reads.answered()
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
            self._unread.discard(key)  # read after all
            self.stats.unread = len(self._unread)
        return text

    def _not_read(self, key: str) -> None:
        with self._lock:
            # a listed key not fetched before (once reads stopped, the warning says it)
            if self._reads.stopped is None and key in self._index and key not in self._fetched:
                self._unread.add(key)
                self.stats.unread = len(self._unread)

    def offer(self, key: str, text: str) -> None:
        if self._writes.stopped is not None:
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
        its lease (it is asking), or while the store fails to answer the lease (the caller looks again,
        within its patience); True otherwise, and whenever the tier cannot lease (a store without
        :class:`~..stores.Claims`, or writes and leases stopped): then this process asks, as it would alone."""
        if self._writes.stopped is not None or not self.leases:
            return True
        if self._writes.rest():
            return False
        try:
            won = self.store.claim(key, self._owner, LEASE_SECONDS, _gone)  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001
            return self._failed(self._writes, exc)  # stopped now: asked as alone; else not taken (looked again)
        self._writes.answered()
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
        """Send the queue in order (an entry before the end of its lease), each write until it is sent or writes
        stop: a write that failed waits out the rest and is sent again."""
        while (item := self._queue.get()) is not None:
            key, text, damaged = item
            if text is None:
                if self._writes.stopped is None and not self._writes.rest():
                    try:
                        self.store.unclaim(key, self._owner)  # type: ignore[attr-defined]
                    except Exception:  # noqa: BLE001 - e.g. a store refusing conditional deletes: the lease runs out
                        pass
                continue
            while self._writes.stopped is None:  # stopped: drained (the leases run out by themselves)
                if wait := self._writes.rest():
                    time.sleep(wait)
                    continue
                try:
                    replaced = self._put(key, text.encode("utf-8"), damaged)
                except Exception as exc:  # noqa: BLE001
                    self._failed(self._writes, exc)
                    continue
                self._writes.answered()
                with self._lock:
                    self._index.add(key)
                    self.stats.uploaded += 1
                    if replaced:
                        self._replaced.add(key)
                        self.stats.replaced = len(self._replaced)
                break

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
                if self._writes.stopped is not None or self._stop.is_set():
                    return
                if self._writes.rest():
                    break  # the store failing: the next round renews (a lease outlives two rounds)
                try:
                    kept = self.store.renew(key, self._owner, LEASE_SECONDS)  # type: ignore[attr-defined]
                except Exception as exc:  # noqa: BLE001
                    self._failed(self._writes, exc)
                    break
                self._writes.answered()
                if not kept:  # run out while this process stalled, and taken over: the other one asks too
                    with self._lock:
                        self._held.discard(key)

    # -- failures -------------------------------------------------------------------------------

    def _refused(self, exc: BaseException) -> bool:
        """Whether the store refused the request for good (its :class:`~..stores.Refusals`; else: no)."""
        refused = getattr(self.store, "refused", None)
        try:
            return bool(refused(exc)) if callable(refused) else False
        except Exception:  # noqa: BLE001 - a classifier that fails: counted as a failure, not a refusal
            return False

    def _failed(self, part: _Part, exc: BaseException) -> bool:
        """One of ``part``'s requests failed: whether the part stopped (now or before)."""
        refused = self._refused(exc)
        with self._lock:
            if part.stopped is not None:
                return True
            if not refused and not part.failed():
                return False
            other = self._writes if part is self._reads else self._reads
            # given up on while the other part's last request failed too: the store is down, both stop (one warning)
            stopping = (part, other) if not refused and other.stopped is None and other.streak else (part,)
        self._fail(exc, *stopping)
        return True

    def _fail(self, exc: BaseException, *parts: _Part) -> None:
        """Stop ``parts`` (all when none is named: the store unusable from the start) for the rest of the run."""
        with self._lock:
            stopping = [part for part in (parts or (self._reads, self._writes)) if part.stopped is None]
            if not stopping:
                return
            detail = redact(str(exc).strip().splitlines()[0] if str(exc).strip() else "")[:300]
            problem = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
            if advice := hint(exc):
                problem += f" -- {advice}"
            for part in stopping:
                part.stopped = problem
            if self.problem is None:
                self.problem = problem
                self.failed_during_run = self._listed
            during_run, stopped = self.failed_during_run, self.stopped or "everything"
        if not self._listed:
            self._ready.set()
        self._warn(warning(self.store.display, problem, during_run=during_run, stopped=stopped))


def warning(display: str, problem: str, *, during_run: bool, where: str = "", stopped: str = "everything") -> str:
    """The warning line for a tier that stood aside, wholly or in part (``stopped``: "everything", "reads" or
    "writes" -- and leases; ``where``: " on gw0, gw1" for xdist workers)."""
    if not during_run:
        return f"shared cache {display} unavailable{where} ({problem}); the run goes on with the local cache"
    missing = ("what it paid for from then on is not in the store (a later run on this machine offers it when it "
               "reads it)")
    if stopped == "reads":
        return (f"shared cache {display} stopped answering reads during the run{where} ({problem}); writes and "
                "leases went on, but entries the store held were paid for again from then on")
    if stopped == "writes":
        return (f"shared cache {display} stopped taking writes and leases during the run{where} ({problem}); reads "
                f"went on, but {missing}")
    return (f"shared cache {display} failed during the run{where} ({problem}); the run went on with the local "
            f"cache: entries the store held were paid for again from then on, and {missing}")


def usable(data: bytes) -> str | None:
    """An entry's text when the cache can answer from it -- a JSON object keeping a reply (the cache's own rule,
    :func:`~..models.cache.kept_reply`) -- or None: damaged (cut short, not JSON)."""
    try:
        text = data.decode("utf-8")
        entry = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return text if isinstance(entry, dict) and kept_reply(entry) is not None else None


def _gone(owner: str) -> bool:
    """Whether a lease's owner is a process of this host that has ended (a shard killed and run again)."""
    return gone(owner) is True
