"""SIGTERM ends a run as Ctrl-C does; SIGINT to an xdist controller reaches its workers.

The engines that run shards stop them with SIGTERM -- Kubernetes deleting a pod, SLURM's ``scancel`` and a
job past its time, ``docker stop``, ``timeout`` -- and give them a grace period before SIGKILL. By default
SIGTERM kills the interpreter where it stands: nothing queued is written (the shared cache's pending
entries, whose machine and disk often go with the pod), and the run looks like a crash. Here it raises
:class:`Terminated`, a ``KeyboardInterrupt``, so the run takes pytest's interrupted path: no new model call
is sent, those already sent are waited for, the journal is kept and named, no results file claims a
finished run, the caches are flushed, and the exit status is 2. A second SIGTERM kills as before. A
handler installed by someone else is left alone.

Two cases differ from Ctrl-C in a terminal, which reaches every process of the run at once:

- on an xdist controller, SIGTERM -- and SIGINT sent to its pid alone (``kill -INT``, ``timeout -s INT``, a CI
  runner cancelling the job) -- reaches the controller alone; it passes SIGINT on to its workers (its child
  processes), which stop as they would on Ctrl-C -- they would otherwise go on sending the calls queued for
  their items until the controller's shutdown reached them. When the signal reached the workers too (Ctrl-C
  in a terminal; SIGTERM to the whole group, as SLURM sends it), the controller's copy follows within a moment
  and would be a second Ctrl-C, which stops a worker at once, its calls on their way paid for and lost: a
  worker takes a SIGINT arriving within :data:`ECHO_SECONDS` of the stop it took as that same stop, and ignores
  it. (A copy cannot be told from a terminal's Ctrl-C by its signal or its sender, which Python's handlers are
  not given; a person's second Ctrl-C comes seconds later -- after the line saying the run waits -- and still
  stops at once.)
- a stopped xdist controller starts its teardown (xdist's ``NodeManager.teardown_nodes``) only once its workers
  are done (:func:`_wait_for_workers`) -- their wait for the calls they already sent over, their session finished
  -- or :data:`~pytest_ifbench.models.background.DRAIN_SECONDS` and a few more seconds after the stop. The teardown
  has execnet interrupt a worker still running 5 s later (a SIGINT the worker sends itself: a second Ctrl-C, which
  ends its wait at once) and kill it 10 s later: calls answered after 5 s were paid for and lost. A second Ctrl-C
  (or SIGTERM) to the controller ends its wait, passed on to the workers, which end theirs.
- once the session is finishing (its results file, summary and reports being written), the work is done:
  SIGTERM then lets it finish (a line says so) instead of cutting the results file with a traceback and
  exit status 1; a second one kills.

Either signal is also noted here, before the exception is raised. pytest marks the session interrupted
only once it has taken the first ``KeyboardInterrupt`` and called ``pytest_keyboard_interrupt`` (which
waits for the calls already sent); a second Ctrl-C before that, or during the wait, skips the marking,
and the session finished as if the run had -- a results file of the instances that happened to finish
written over an earlier complete one, the journal removed. The session is marked interrupted at its end
whenever a stop was noted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

import pytest

from ._owner import parent
from ._xdist import worker_done

__all__ = ["Terminated", "install", "uninstall"]

_INSTALLED = pytest.StashKey[bool]()
_NOTING = pytest.StashKey[bool]()  # this run's SIGINT handler is ours


class _Flag:
    """A flag the signal handlers set and read without a lock. ``threading.Event.set`` takes one: a second
    Ctrl-C arriving while the first one's handler held it ran the handler again on the same thread, inside the
    first, which then waited for that lock for ever (the run hung instead of stopping). It also keeps when it
    was last set (:meth:`set_within`, :meth:`since`) and how many times since cleared (``times``)."""

    __slots__ = ("_on", "_when", "times")

    def __init__(self) -> None:
        self._on = False
        self._when = float("-inf")
        self.times = 0  # set since cleared

    def set(self) -> None:
        self._when = time.monotonic()  # first: a handler run inside this one never sees the flag without it
        self.times += 1
        self._on = True

    def clear(self) -> None:
        self._on = False
        self._when = float("-inf")
        self.times = 0

    def is_set(self) -> bool:
        return self._on

    def set_within(self, seconds: float) -> bool:
        """Set, last less than ``seconds`` ago."""
        return self.since() < seconds

    def since(self) -> float:
        """Seconds since it was last set."""
        return time.monotonic() - self._when


#: Set while the session finishes (see the module docstring); whether this process is an xdist controller, or
#: one of its workers.
_FINISHING = _Flag()
_CONTROLLER = _Flag()
_WORKER = _Flag()
#: A SIGINT or SIGTERM stopped the run (see the module docstring).
_STOPPED = _Flag()
#: Seconds after a worker took a stop during which a SIGINT is that stop's copy from the controller (see the
#: module docstring): the controller passes it on from its handler, at once; a person's second Ctrl-C comes
#: seconds later.
ECHO_SECONDS = 1.0
#: Seconds a stopped controller waits for its workers beyond their own wait for the calls they sent: they take the
#: stop a moment after it, and then finish their session (the caches written).
WORKERS_MARGIN_SECONDS = 3.0
#: Seconds a stopped controller waits for its workers before it says so: workers with no call on its way are done
#: by then.
_QUIET_SECONDS = 1.0


class Terminated(KeyboardInterrupt):
    """The run got SIGTERM."""


def install(config: pytest.Config) -> None:
    """Turn this process's SIGTERM into :class:`Terminated` and note its SIGINT, unless another handler is set
    for either (or this is not the main thread, where Python takes signals)."""
    if threading.current_thread() is not threading.main_thread():
        return
    _STOPPED.clear()
    _FINISHING.clear()
    _WORKER.clear()
    _CONTROLLER.clear()
    if hasattr(config, "workerinput"):
        _WORKER.set()
    elif getattr(config.option, "numprocesses", None):
        _CONTROLLER.set()
    config.pluginmanager.register(_Finishing(), "ifbench-termination")
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted)
        config.stash[_NOTING] = True
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    signal.signal(signal.SIGTERM, _terminated)
    config.stash[_INSTALLED] = True


def uninstall(config: pytest.Config) -> None:
    if config.stash.get(_NOTING, False) and signal.getsignal(signal.SIGINT) is _interrupted:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    config.stash[_NOTING] = False
    if config.stash.get(_INSTALLED, False) and signal.getsignal(signal.SIGTERM) is _terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    config.stash[_INSTALLED] = False
    _FINISHING.clear()
    _CONTROLLER.clear()
    _WORKER.clear()


class _Finishing:
    def __init__(self) -> None:
        self.workers = _Workers()

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist, on the controller: a worker starts (a crashed one's replacement too). :class:`_Workers`,
        registered now, after xdist's ``DSession``, has its ``pytest_sessionfinish`` called right before that of
        ``DSession``, which tears the workers down (pluggy calls the last registered first)."""
        self.workers.nodes.append(node)
        if not node.config.pluginmanager.is_registered(self.workers):
            node.config.pluginmanager.register(self.workers, "ifbench-termination-workers")

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.workers.nodes:  # (an xdist controller finishes once its workers are done: _Workers)
            _FINISHING.set()
        if _STOPPED.is_set():  # however pytest took the signal(s): the run did not finish
            session.exitstatus = pytest.ExitCode.INTERRUPTED


class _Workers:
    """An xdist controller's workers: when the run was stopped, its teardown waits for them (see the module
    docstring)."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []

    def pytest_sessionfinish(self) -> None:
        if _STOPPED.times == 1:  # (stopped twice: at once)
            _wait_for_workers(self.nodes)
        _FINISHING.set()


def _wait_for_workers(workers: list[Any]) -> None:
    """Wait until every worker is done (see the module docstring), up to the workers' own wait after the stop and
    :data:`WORKERS_MARGIN_SECONDS`; a KeyboardInterrupt (a second Ctrl-C or SIGTERM) ends the wait."""
    from .models.background import DRAIN_SECONDS

    left = DRAIN_SECONDS + WORKERS_MARGIN_SECONDS - _STOPPED.since()
    deadline, quiet = time.monotonic() + left, time.monotonic() + _QUIET_SECONDS
    said = False
    try:
        while (running := sum(not worker_done(node) for node in workers)) and time.monotonic() < deadline:
            if not said and time.monotonic() >= quiet:
                said = True
                sys.stderr.write(f"pytest-ifbench: waiting up to {deadline - time.monotonic():.0f} s for {running} "
                                 "worker(s) still waiting for the model calls they already sent, so that a re-run "
                                 "finds their replies in the cache; Ctrl-C again to stop now\n")
                sys.stderr.flush()
            time.sleep(0.05)
    except KeyboardInterrupt:
        pass


def _interrupted(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C: noted, passed on to an xdist controller's workers, then Python's own ``KeyboardInterrupt``; on a
    worker, ignored when it is the controller's copy of the stop the worker just took (see the module docstring)."""
    if _WORKER.is_set() and _STOPPED.is_set() and _STOPPED.set_within(ECHO_SECONDS):
        return
    _STOPPED.set()
    if _CONTROLLER.is_set():
        _interrupt_children()
    signal.default_int_handler(signum, frame)


def _terminated(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second one kills, as ever
    if _FINISHING.is_set():
        sys.stderr.write("pytest-ifbench: SIGTERM while the run writes its results and summary: it ends once they "
                         "are written (a second SIGTERM kills it)\n")
        return
    _STOPPED.set()
    if _CONTROLLER.is_set():
        _interrupt_children()
    raise Terminated("the run got SIGTERM (stopped as by Ctrl-C; a second SIGTERM kills it)")


def _interrupt_children() -> None:
    """SIGINT to this process's children: an xdist controller's are its workers."""
    me = os.getpid()
    for pid in (int(entry) for entry in os.listdir("/proc") if entry.isdigit()):
        if parent(pid) == me:
            with contextlib.suppress(OSError):  # ended meanwhile
                os.kill(pid, signal.SIGINT)
