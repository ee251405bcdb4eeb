"""SIGTERM ends a run as Ctrl-C does.

The engines that run shards stop them with SIGTERM -- Kubernetes deleting a pod, SLURM's ``scancel`` and a
job past its time, ``docker stop``, ``timeout`` -- and give them a grace period before SIGKILL. By default
SIGTERM kills the interpreter where it stands: nothing queued is written (the shared cache's pending
entries, whose machine and disk often go with the pod), and the run looks like a crash. Here it raises
:class:`Terminated`, a ``KeyboardInterrupt``, so the run takes pytest's interrupted path: the items stop,
the journal is kept and named, no results file claims a finished run, the caches are flushed, and the exit
status is 2. A second SIGTERM kills as before. A handler someone else installed is left alone.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

import pytest

__all__ = ["Terminated", "install", "uninstall"]

_INSTALLED = pytest.StashKey[bool]()


class Terminated(KeyboardInterrupt):
    """The run got SIGTERM."""


def install(config: pytest.Config) -> None:
    """Turn this process's SIGTERM into :class:`Terminated`, unless another handler is set (or this is not
    the main thread, where Python takes signals)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    signal.signal(signal.SIGTERM, _terminated)
    config.stash[_INSTALLED] = True


def uninstall(config: pytest.Config) -> None:
    if config.stash.get(_INSTALLED, False) and signal.getsignal(signal.SIGTERM) is _terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    config.stash[_INSTALLED] = False


def _terminated(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second one kills, as ever
    raise Terminated("the run got SIGTERM (stopped as by Ctrl-C; a second SIGTERM kills it)")
