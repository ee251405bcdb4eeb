"""The run's spending limit (``--ifbench-max-cost USD``): what the model and judge calls of one run have
paid, shared by its processes (the xdist workers), and whether the next call may start.

A call is asked for before it is sent (:meth:`SpendingLimit.start`, naming its model) and settled with
what its reply cost (:meth:`SpendingLimit.end`). It may start only while what was paid, plus a
reservation for each call on its way, plus one for itself, stays within the limit. A call's reservation
is the largest cost of one call *of its model* seen so far in the run (that model's replies, and its
cached replies this process read); until a model's first call has come back, one call of that model at
a time is on its way in the whole run. So a run can pass its limit only by what the calls on their way
cost more than the costliest call of their model before them -- a cheap model's price is never what a
pricier judge's calls reserve (it was, when the reservation was the run's costliest call of any model:
judge calls started together each holding a model call's price). A call that does not fit beside the
calls on their way, but would fit once they are paid, waits for them (what they hold may be more than
they cost); a call is refused only when what was paid leaves no room for it. A refused call is never
sent: its caller fails with the limit's reason (:class:`~.client.SpendingLimitReached`).

The ledger is one small file under an exclusive ``flock`` (plus a lock for this process's threads,
which share the file's descriptor): the controller of an xdist run creates it and each worker opens
it. Its record is the run's eight figures (:class:`Spent`) and a fixed table of :data:`MODELS` slots,
one a model, each keyed by a hash of the model's name (its costliest call, its calls on their way, its
paid calls): 2,112 packed bytes, written in place with one ``pwrite`` at the file's start. A write that
fits within one page is never cut by a signal (the kernel checks for one between pages), so a process
killed while writing leaves the old or the new record, never a cut one (a call's two updates take ~11 us
each, as with the 64 bytes of the run's figures alone). A run's models take a slot each as they first
ask; past :data:`MODELS` models, the others share the last slot (judged together, as the whole run once
was).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import math
import os
import struct
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

#: Slots in the record's table of models (one a model of the run; past them, the last is shared).
MODELS = 64
#: The record: the fields of :class:`Spent` in their order (float, float, then int, int, int, float, int,
#: float), then :data:`MODELS` slots of a model's key (8 bytes of its name's hash; zeros: a free slot), its
#: costliest call, its calls on their way and its paid calls. 2,112 bytes: within a page, so one pwrite of
#: it is never cut.
_TOTALS = struct.Struct("<ddqqqdqd")
_SLOT = struct.Struct("<8sdqq")
_SIZE = _TOTALS.size + MODELS * _SLOT.size
_FREE = bytes(8)
#: A decision of :meth:`SpendingLimit.start`: wait and ask again (a first call's price is not known yet).
WAIT = -1.0


@dataclass(frozen=True, slots=True)
class Spent:
    """What the run has paid and done under its limit (every process's calls); ``largest`` is the run's
    costliest call of any model (each model's calls reserve their own model's costliest: the module's
    docstring)."""

    limit: float
    spent: float = 0.0
    calls: int = 0
    refused: int = 0
    unpriced: int = 0
    largest: float = 0.0
    in_flight: int = 0
    reserved: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"limit": self.limit, "spent": round(self.spent, 10), "calls": self.calls, "refused": self.refused,
                "unpriced": self.unpriced, "largest_call": round(self.largest, 10)}


class Ledger(Protocol):
    """What the clients ask (see the module docstring): :class:`SpendingLimit`, this host's file, or a ledger
    several machines share (``--ifbench-max-cost-ledger``, :mod:`..scale.shared_ledger`). Any method may
    raise :class:`LedgerUnavailable`. ``model`` is the call's model (its name as the client calls it):
    each model's calls reserve that model's costliest call."""

    #: Whether its calls wait for the network: the client then asks :meth:`start` from a thread, off its
    #: event loop (:meth:`end` must not wait: it only queues).
    remote: bool

    def start(self, model: str, *, wait: bool = True) -> float | None: ...

    def end(self, model: str, reserved: float, cost: float | None, *, paid: bool = True,
            given_up: bool = False) -> None: ...

    def saw(self, model: str, cost: float | None) -> None: ...

    def status(self) -> Spent: ...

    def close(self) -> None: ...


class LedgerUnavailable(RuntimeError):
    """A shared ledger could not be asked (its store is down): the call is not made, since what it would
    cost could not be counted."""


class SpendingLimit:
    """The run's ledger on this host (see the module docstring); one per process, all on the same file."""

    #: A file under a lock, held ~10 us: asked inline (a thread hop cost 0.6 ms of CPU a call).
    remote = False

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_RDWR)
        self._lock = threading.Lock()
        #: By model, the largest cost of one call this process has seen in cached replies (not yet in the file).
        self._seen: dict[str, float] = {}
        #: By model, where its slot's numbers begin among the record's (as last found: checked on each use).
        self._slots: dict[str, int] = {}

    @classmethod
    def create(cls, path: Path, limit: float) -> SpendingLimit:
        """A new ledger at ``path`` (the controller's, or a run without workers)."""
        if not limit > 0:
            raise ValueError(f"the spending limit must be above 0, not {limit:g}")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.pwrite(fd, _TOTALS.pack(*_fields(Spent(limit=float(limit)))) + bytes(_SIZE - _TOTALS.size), 0)
        finally:
            os.close(fd)
        return cls(path)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def saw(self, model: str, cost: float | None) -> None:
        """A cached reply's cost: what a call of ``model`` may cost, known without paying for one."""
        if cost is not None and cost > self._seen.get(model, 0.0):
            self._seen[model] = cost

    def status(self) -> Spent:
        with self._held():
            return Spent(*_TOTALS.unpack_from(self._read()))

    def start(self, model: str, *, wait: bool = True) -> float | None:
        """Whether a call of ``model`` may start: its reservation (to give back to :meth:`end`), :data:`WAIT`
        while that model's first call is on its way and no price of the model is known, or while the call
        fits only once the calls on their way are paid (unless ``wait`` is False: the caller has waited
        long enough -- a call's process may have died), or None -- refused, the limit is reached."""
        with self._held():
            record = self._read()
            now = Spent(*_TOTALS.unpack_from(record))
            at = self._slot(record, model)
            key, own, on_their_way, paid = _SLOT.unpack_from(record, at)
            largest = max(own, self._seen.get(model, 0.0))
            if wait and largest <= 0 and on_their_way and not paid:
                return WAIT
            fits_alone = now.spent < now.limit and now.spent + largest <= now.limit
            if not fits_alone or now.spent + now.reserved + largest > now.limit:
                if fits_alone and wait:  # once the calls on their way are paid
                    return WAIT
                _SLOT.pack_into(record, at, key, largest, on_their_way, paid)
                self._write(record, replace(now, refused=now.refused + 1, largest=max(now.largest, largest)))
                return None
            _SLOT.pack_into(record, at, key, largest, on_their_way + 1, paid)
            self._write(record, replace(now, in_flight=now.in_flight + 1, reserved=now.reserved + largest,
                                        largest=max(now.largest, largest)))
            return largest

    def end(self, model: str, reserved: float, cost: float | None, *, paid: bool = True,
            given_up: bool = False) -> None:
        """Settle a started call of ``model``: ``cost`` its reply's price (None: the reply had none), ``paid``
        False when no reply came (a failed attempt is counted as costing nothing). ``given_up``: no reply, but
        the request was sent and not waited for (its timeout): a provider may bill it, so it counts among the
        run's calls without a price -- not among its model's, whose next call still waits for a price."""
        with self._held():
            record = self._read()
            now = Spent(*_TOTALS.unpack_from(record))
            at = self._slot(record, model)
            key, own, on_their_way, calls = _SLOT.unpack_from(record, at)
            priced = cost if cost is not None and paid else 0.0
            _SLOT.pack_into(record, at, key, max(own, priced), max(0, on_their_way - 1), calls + (1 if paid else 0))
            unpriced = (paid and cost is None) or (given_up and not paid)
            self._write(record, replace(
                now, in_flight=max(0, now.in_flight - 1), reserved=max(0.0, now.reserved - reserved),
                spent=now.spent + priced, calls=now.calls + (1 if paid or given_up else 0),
                unpriced=now.unpriced + (1 if unpriced else 0), largest=max(now.largest, priced)))

    # -- the file ----------------------------------------------------------------------------------------
    def _held(self) -> _Held:
        return _Held(self)

    def _read(self) -> bytearray:
        raw = os.pread(self._fd, _SIZE, 0)
        if len(raw) != _SIZE:
            raise RuntimeError(f"the run's spending ledger {self.path} is unreadable: {len(raw)} bytes")
        return bytearray(raw)

    def _slot(self, record: bytearray, model: str) -> int:
        """Where ``model``'s slot begins in ``record``: its own, a free one it takes (its key is written
        with the record), or, with every slot taken, the last (shared by the models past :data:`MODELS`)."""
        key = _key(model)
        at = self._slots.get(model)
        if at is None or record[at:at + 8] != key:
            # slots are taken in order and never given back: a model's own comes before the first free one
            slots = range(_TOTALS.size, _SIZE, _SLOT.size)
            at = self._slots[model] = next((at for at in slots if record[at:at + 8] in (key, _FREE)), slots[-1])
            if record[at:at + 8] == _FREE:
                record[at:at + 8] = key
        return at

    def _write(self, record: bytearray, totals: Spent) -> None:
        """``record`` with ``totals``, written over the old one at once."""
        _TOTALS.pack_into(record, 0, *_fields(totals))
        os.pwrite(self._fd, record, 0)


class _Held:
    """The ledger locked against this process's other threads and every other process."""

    def __init__(self, ledger: SpendingLimit) -> None:
        self._ledger = ledger

    def __enter__(self) -> None:
        self._ledger._lock.acquire()
        try:
            fcntl.flock(self._ledger._fd, fcntl.LOCK_EX)
        except BaseException:
            self._ledger._lock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            fcntl.flock(self._ledger._fd, fcntl.LOCK_UN)
        finally:
            self._ledger._lock.release()


def _fields(spent: Spent) -> tuple[Any, ...]:
    return tuple(getattr(spent, name) for name in Spent.__slots__)


@functools.lru_cache(maxsize=256)
def _key(model: str) -> bytes:
    """``model``'s key in the record's table: 8 bytes of its name's hash, never zeros (a free slot's)."""
    key = hashlib.blake2b(model.encode(), digest_size=8).digest()
    return b"\1" + key[1:] if key == _FREE else key


def shared_ledgers(entries: Iterable[Mapping[str, Any]]) -> dict[str, tuple[Mapping[str, Any], int]]:
    """Of a run's ``spending_limit`` entries (a merged file's, one per shard), those of ledgers the shards
    shared (``--ifbench-max-cost-ledger``: the entry's ``ledger``), by ledger: its latest entry -- each
    shard's is the whole run's figures as it finished, so the last to finish saw the most -- and how many
    entries name it (one that could not read it at its end, ``unread``, counts, but is never the latest
    unless no entry could). Entries without ``ledger`` are each a limit of its own."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for entry in entries:
        if entry.get("ledger"):
            groups.setdefault(str(entry["ledger"]), []).append(entry)
    def seen(entry: Mapping[str, Any]) -> tuple[bool, int, int]:  # (an entry that could not read it: last)
        return not entry.get("unread"), int(entry.get("calls") or 0), int(entry.get("refused") or 0)

    return {ledger: (max(group, key=seen), len(group)) for ledger, group in groups.items()}


def usd(amount: float) -> str:
    """A sum of money as the summary shows it: cents from $10, four decimals down to a tenth of a cent,
    two significant digits below (a stub's or a cheap model's calls cost millionths), never in exponent
    notation (``$0.000023``, not ``$2.3e-05``)."""
    if amount == 0:
        return "$0"
    if amount >= 10:
        return f"${amount:,.2f}"
    if amount >= 0.001:
        return f"${amount:.4f}"
    decimals = min(1 - math.floor(math.log10(abs(amount))), 20)  # two significant digits
    return f"${amount:.{decimals}f}"
