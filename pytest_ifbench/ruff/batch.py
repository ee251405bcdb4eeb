"""Ruff-backed checks of many replies in one ruff process (``_ruff.check_many``).

A :class:`RuffBatcher` collects replies whose ruff-backed checks will be
evaluated soon: a suite queues an instance's replies when its background
generation finishes, ``ifbench verify`` queues every line of its input. The
first time :func:`_verify.evaluate` asks for a queued reply, every reply
queued so far (up to ``max_replies``) is checked in one ruff process, and the
others' results wait, keyed by their content, for their own ``evaluate``.
Nothing waits for a time window: a reply that arrives last is checked as soon
as its item asks, with whatever else is queued by then.

Results are keyed by the extracted code and the exact checks, so an
``evaluate`` call that asks for something not queued (another turn, a
protocol's own early evaluation) simply runs ruff itself: batching can only
make verdicts faster, never different.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from .._registry import Registry
from .._text import extract_code
from .._types import CheckSpec
from .check import RuffCheck, RuffError, Violation, check_many

#: The results of one reply's ruff checks: violations (or the error) per check key.
RuffResults = dict[str, "list[Violation] | RuffError"]

_ACTIVE: contextvars.ContextVar[RuffBatcher | None] = contextvars.ContextVar("ifbench_ruff_batcher", default=None)


def ruff_checks(checks: Sequence[CheckSpec], registry: Registry) -> list[tuple[CheckSpec, RuffCheck]]:
    """The ruff-backed checks among ``checks``, each with the :class:`RuffCheck` it runs as."""
    out = []
    for check in checks:
        verifier = registry.get(check.verifier)
        if verifier.kind == "ruff" and verifier.ruff is not None:
            out.append((check, RuffCheck(key=check.id, select=verifier.ruff.select(check.params),
                                         settings=verifier.ruff.settings(check.params))))
    return out


def _key(code: str, checks: Sequence[RuffCheck]) -> tuple[str, tuple[tuple[str, tuple[str, ...], str], ...]]:
    return code, tuple((check.key, check.select, repr(check.setting_pairs)) for check in checks)


class RuffBatcher:
    """Queues replies and checks them in batches, one ruff process per batch.

    ``queue`` is cheap and may be called from any thread (the generation
    thread calls it); ``results`` runs the batch in the calling thread.
    """

    def __init__(self, registry: Registry, *, max_replies: int = 1000) -> None:
        self.registry = registry
        self.max_replies = max_replies
        self._queued: deque[tuple[Sequence[CheckSpec], str]] = deque()
        self._ready: dict[tuple, deque[tuple[RuffResults, float]]] = {}
        self._lock = threading.Lock()
        self._run_lock = threading.Lock()
        #: Batches run and replies checked (for tests and benchmarks).
        self.batches = 0
        self.replies = 0

    def queue(self, checks: Sequence[CheckSpec], response: str) -> None:
        """Check ``response``'s ruff-backed ``checks`` in the next batch (other checks are ignored)."""
        try:
            wanted = any(self.registry.get(check.verifier).kind == "ruff" for check in checks)
        except Exception:  # noqa: BLE001 - never fail the caller (a generation job): evaluate reports it
            return
        if wanted:
            with self._lock:
                self._queued.append((checks, response))

    def results(self, code: str, checks: Sequence[RuffCheck]) -> tuple[RuffResults, float] | None:
        """The results for ``checks`` on ``code`` and the seconds per check they took, or None when
        nothing queued matches (the caller runs ruff itself). Each queued reply is handed out once."""
        key = _key(code, checks)
        while True:
            with self._lock:
                ready = self._ready.get(key)
                if ready:
                    found = ready.popleft()
                    if not ready:
                        del self._ready[key]
                    return found
                if not self._queued:
                    return None
            self._run_batch()

    def _run_batch(self) -> None:
        with self._run_lock:
            with self._lock:
                batch = [self._queued.popleft() for _ in range(min(self.max_replies, len(self._queued)))]
            if not batch:
                return
            items = []
            for checks, response in batch:
                found = ruff_checks(checks, self.registry)
                if found:
                    items.append((extract_code(response), [rc for _, rc in found]))
            start = time.perf_counter()
            try:
                results = check_many(items)
            except Exception:  # noqa: BLE001 - each reply then runs ruff itself, which reports per check
                return
            share = (time.perf_counter() - start) / max(1, sum(len(rcs) for _, rcs in items))
            with self._lock:
                for (code, rcs), result in zip(items, results):
                    self._ready.setdefault(_key(code, rcs), deque()).append((result, share))
                self.batches += 1
                self.replies += len(items)

    @property
    def unclaimed(self) -> int:
        """Replies queued or checked whose results no ``evaluate`` has asked for yet."""
        with self._lock:
            return len(self._queued) + sum(len(ready) for ready in self._ready.values())

    @contextmanager
    def active(self) -> Iterator[RuffBatcher]:
        """Make ``evaluate`` calls in this context (that pass no batcher) use this one."""
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)


def active_batcher() -> RuffBatcher | None:
    """The batcher of the innermost :meth:`RuffBatcher.active` context, if any."""
    return _ACTIVE.get()


@contextmanager
def batch_verify_cases(registry: Registry, lines: Iterable[str | bytes]) -> Iterator[RuffBatcher]:
    """Within this context, ``verify_one`` reads batched ruff results for the ruff-backed cases
    among ``ifbench verify`` input lines (each parsed and validated as ``verify_one`` will be).

    Lines that are not a well-formed ruff-backed case are skipped here: their
    own verification reports them exactly as before.
    """
    import json

    batcher = RuffBatcher(registry)
    for line in lines:
        try:
            case = json.loads(line)
            verifier = registry.get(case["verifier"])
            if verifier.kind != "ruff" or not isinstance(case["response"], str):
                continue
            params = verifier.validate(verifier.validate(case.get("params")))
        except Exception:  # noqa: BLE001 - anything wrong is reported by the line's own verification
            continue
        batcher.queue([CheckSpec(id="case", verifier=verifier.id, params=params)], case["response"])
    with batcher.active():
        yield batcher
