"""How a session uses the garbage collector.

A session keeps every item, report and result view alive to its end, so the cyclic garbage
collector's full passes walk a heap that only grows: at 20,000 cached instances 20 full collections
took 4.7 s of a 36 s run, and the passes at exit (pytest's unconfigure, the interpreter's last one)
another 4.5 s. So a session

* runs a full collection a tenth as often, from configure to its end (the oldest generation's
  threshold 10 -> 100; the young generations, where nearly all cyclic garbage dies, are collected as
  before): 20 -> 5 full collections, 4.7 -> 0.9 s at 20,000 instances, most of them while the suite
  is collected (a small session makes few full collections either way); a user's own tuning (a
  higher threshold, the collector off) is left alone;
* from :attr:`SessionHeap.BIG` finished tests on, moves everything alive at unconfigure to the
  permanent generation (``gc.freeze``), so pytest's ``gc.collect()`` at exit looks only at what is
  made afterwards, and freezes the heap again in an exit handler after pytest thawed it (a process
  that embeds pytest keeps its heap until it ends).

The price of the freeze: an object that is garbage at that point, in a reference cycle, is neither
reported by pytest's unraisable-exception check nor finalized at exit (its ``__del__`` does not run;
Python does not promise that it does). The cleanup registered at configure time restores the
thresholds and thaws the heap, for a pytest run inside another process.
"""

from __future__ import annotations

import atexit
import gc

import pytest


class SessionHeap:
    """Applies the policy of the module docstring from configure to the end of the session."""

    #: Finished tests (call phases) from which a session counts as big.
    BIG = 1000
    #: The oldest generation's threshold while the session is big (CPython's default is 10).
    FULL_COLLECTION_THRESHOLD = 100

    def __init__(self, config: pytest.Config) -> None:
        self.finished = 0
        self._thresholds: tuple[int, int, int] | None = None
        self._frozen = False
        config.add_cleanup(self._restore)  # registered early, so it runs after pytest's own cleanups
        young, middle, oldest = gc.get_threshold()
        if gc.isenabled() and oldest < self.FULL_COLLECTION_THRESHOLD:  # leave a user's own tuning alone
            self._thresholds = (young, middle, oldest)
            gc.set_threshold(young, middle, self.FULL_COLLECTION_THRESHOLD)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" and not hasattr(report, "context"):  # a test, not one of its subtests
            self.finished += 1

    @pytest.hookimpl(tryfirst=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.finished >= self.BIG:
            gc.freeze()
            self._frozen = True

    def _restore(self) -> None:
        if self._thresholds is not None:
            gc.set_threshold(*self._thresholds)
            self._thresholds = None
        if self._frozen:
            gc.unfreeze()
            self._frozen = False
            atexit.unregister(gc.freeze)
            atexit.register(gc.freeze)
