"""The run's spending limit (``--ifbench-max-cost USD``): what the model and judge calls of one run have
paid, shared by its processes (the xdist workers), and whether the next call may start.

A call is asked for before it is sent (:meth:`SpendingLimit.start`) and settled with what its reply
cost (:meth:`SpendingLimit.end`). It may start only while what was paid, plus a reservation for each
call on its way, plus one for itself, stays within the limit. A call's reservation is the largest cost
of one call seen so far in the run (its replies, and the cached replies this process read); until a
first call has come back, one call at a time is on its way in the whole run, so a run can pass its
limit only by what the calls on their way cost more than the costliest call before them. A call that
does not fit beside the calls on their way, but would fit once they are paid, waits for them (what
they hold may be more than they cost); a call is refused only when what was paid leaves no room for
it. A refused call is never sent: its caller fails with the limit's reason
(:class:`~.client.SpendingLimitReached`).

The ledger is one small file under an exclusive ``flock`` (plus a lock for this process's threads,
which share the file's descriptor): the controller of an xdist run creates it and each worker opens
it. Its record is eight packed numbers written in place with one ``pwrite`` of 64 bytes, so a process
killed while writing leaves the old or the new record, never a cut one (packed, a call's two updates
take ~10 us each; as JSON they took ~22).
"""

from __future__ import annotations

import fcntl
import math
import os
import struct
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

#: The record: the fields of :class:`Spent` in their order (float, float, then int, int, int, float, int, float).
_RECORD = struct.Struct("<ddqqqdqd")
#: A decision of :meth:`SpendingLimit.start`: wait and ask again (a first call's price is not known yet).
WAIT = -1.0


@dataclass(frozen=True, slots=True)
class Spent:
    """What the run has paid and done under its limit (every process's calls)."""

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
    raise :class:`LedgerUnavailable`."""

    #: Whether its calls wait for the network: the client then asks :meth:`start` from a thread, off its
    #: event loop (:meth:`end` must not wait: it only queues).
    remote: bool

    def start(self, *, wait: bool = True) -> float | None: ...

    def end(self, reserved: float, cost: float | None, *, paid: bool = True) -> None: ...

    def saw(self, cost: float | None) -> None: ...

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
        #: The largest cost of one call this process has seen in cached replies (not yet in the file).
        self._seen = 0.0

    @classmethod
    def create(cls, path: Path, limit: float) -> SpendingLimit:
        """A new ledger at ``path`` (the controller's, or a run without workers)."""
        if not limit > 0:
            raise ValueError(f"the spending limit must be above 0, not {limit:g}")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.pwrite(fd, _encode(Spent(limit=float(limit))), 0)
        finally:
            os.close(fd)
        return cls(path)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def saw(self, cost: float | None) -> None:
        """A cached reply's cost: what a call may cost, known without paying for one."""
        if cost is not None and cost > self._seen:
            self._seen = cost

    def status(self) -> Spent:
        with self._held():
            return self._read()

    def start(self, *, wait: bool = True) -> float | None:
        """Whether a call may start: its reservation (to give back to :meth:`end`), :data:`WAIT` while the
        run's first call is on its way and no price is known, or while the call fits only once the calls
        on their way are paid (unless ``wait`` is False: the caller has waited long enough -- a call's
        process may have died), or None -- refused, the limit is reached."""
        with self._held():
            now = self._read()
            largest = max(now.largest, self._seen)
            if wait and largest <= 0 and now.in_flight and not now.calls:
                return WAIT
            fits_alone = now.spent < now.limit and now.spent + largest <= now.limit
            if not fits_alone or now.spent + now.reserved + largest > now.limit:
                if fits_alone and wait:  # once the calls on their way are paid
                    return WAIT
                self._write(replace(now, refused=now.refused + 1, largest=largest))
                return None
            self._write(replace(now, in_flight=now.in_flight + 1, reserved=now.reserved + largest, largest=largest))
            return largest

    def end(self, reserved: float, cost: float | None, *, paid: bool = True) -> None:
        """Settle a started call: ``cost`` its reply's price (None: the reply had none), ``paid`` False
        when no reply came (a failed attempt is counted as costing nothing)."""
        with self._held():
            now = self._read()
            priced = cost if cost is not None and paid else 0.0
            self._write(replace(
                now, in_flight=max(0, now.in_flight - 1), reserved=max(0.0, now.reserved - reserved),
                spent=now.spent + priced, calls=now.calls + (1 if paid else 0),
                unpriced=now.unpriced + (1 if paid and cost is None else 0), largest=max(now.largest, priced)))

    # -- the file ----------------------------------------------------------------------------------------
    def _held(self) -> _Held:
        return _Held(self)

    def _read(self) -> Spent:
        raw = os.pread(self._fd, _RECORD.size, 0)
        if len(raw) != _RECORD.size:
            raise RuntimeError(f"the run's spending ledger {self.path} is unreadable: {len(raw)} bytes")
        return Spent(*_RECORD.unpack(raw))

    def _write(self, spent: Spent) -> None:
        os.pwrite(self._fd, _encode(spent), 0)


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


def _encode(spent: Spent) -> bytes:
    return _RECORD.pack(*(getattr(spent, name) for name in Spent.__slots__))


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
