"""Stopping a ``pytest -n 2`` run: nothing new is sent, and the model calls already sent are waited for.

- SIGINT to the controller alone (``kill -INT``, ``timeout -s INT``, a CI runner cancelling the job) stops the
  workers as a terminal's Ctrl-C does; a terminal's Ctrl-C, which reaches every process of the run, still waits
  for the calls already sent (the controller's copy passed on to the workers is not a second Ctrl-C), and a
  second one, seconds later, still stops at once.
- A stopped controller (SIGINT, SIGTERM) starts xdist's teardown only once its workers are done waiting for the
  calls they sent: the teardown (xdist's ``NodeManager.teardown_nodes``) ends each worker through execnet, which
  interrupts a worker still running 5 s later (a SIGINT it sends itself: a second Ctrl-C, which ends the wait at
  once) and kills it 10 s later; the calls on their way, paid for, were lost when they took longer than 5 s. A
  second Ctrl-C to the waiting controller still stops the run at once.

Each run serves the first four replies at once and holds every model call after them in the stub (so four
replies are cached and four calls are in flight when the signal is sent, however loaded the machine) until the
test answers them: once both workers say they wait for them (a worker still sending would then send the calls
queued behind them), or 9 s after the signal (more than the 5 s xdist's teardown gave, well within the 20 s
promised), or never (a second Ctrl-C ends the wait).

A stopped controller needs no help to wait for its workers before xdist's teardown (``_termination``'s
``_wait_for_workers``): the tests of that wait rely on it. The test of SIGINT to the controller alone holds the
controller before its teardown (a conftest, until the test answers the calls) all the same: with no such wait
(before it was added, or were it lost), the teardown would interrupt the workers itself, 5 s later, and hide
whether the controller told them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_ifbench.testing import Reply
from tests._support import FAKE_KEY, bulk_suite, stub_args, write_suite

#: Instances of the suite; replies served at once; calls in flight at the signal (-n 2 x concurrency 2).
_INSTANCES, _SERVED, _IN_FLIGHT = 16, 4, 4
#: Seconds after the signal the calls in flight are answered (:meth:`_Run.answer_in`).
_LATENCY = 9.0
#: The suite's conftest: an interrupted controller waits for the file ``go`` before its teardown.
_HOLD_TEARDOWN = """
import os, time, pytest

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput") or exitstatus != pytest.ExitCode.INTERRUPTED:
        return
    deadline = time.monotonic() + 120
    while not os.path.exists({go!r}) and time.monotonic() < deadline:
        time.sleep(0.05)
"""
#: What a worker prints once it waits for its calls already sent (``models.background.stop_and_drain``).
_WORKER_WAITS = "model call(s) already sent (paid for)"
#: What the controller prints while it waits for its workers (``_termination``).
_CONTROLLER_WAITS = "worker(s) still waiting for the model calls they already sent"


class _Run:
    """A ``pytest -n 2`` run in its own session (process group), against a stub holding the calls after the
    first :data:`_SERVED` until :meth:`answer`."""

    def __init__(self, tmp_path: Path, stub) -> None:
        self.tmp_path, self.stub = tmp_path, stub
        self.answered = threading.Event()
        served = iter(range(10**6))

        def hold_after_the_first(body: dict) -> Reply:
            if next(served) >= _SERVED:
                self.answered.wait(120)
            return Reply(content="an answer")

        stub.add_rule("", hold_after_the_first)
        write_suite(tmp_path, "suites/bulk.yaml", bulk_suite(_INSTANCES))
        # (a long timeout: a held call is not given up and sent again)
        self.argv = [sys.executable, "-m", "pytest", "suites",
                     *stub_args(stub, "--ifbench-concurrency=2", "--ifbench-timeout=120"), "-q"]
        self.env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY, PYTEST_ADDOPTS="")
        self.log = tmp_path / "output.txt"
        self.proc: subprocess.Popen | None = None
        self.timer: threading.Timer | None = None
        self.go: Path | None = None  # (the controller is held before its teardown until it exists)
        self.took = float("nan")  # seconds from the first signal to the run's end
        self.signalled: float | None = None  # (time.monotonic() of the first signal)

    def start(self, *, hold_teardown: bool = False) -> subprocess.Popen:
        """Start the run (with ``hold_teardown``, its controller, once interrupted, held before its teardown until
        :meth:`answer`); once its first replies are cached and the next calls in flight."""
        if hold_teardown:
            self.go = self.tmp_path / "go"
            write_suite(self.tmp_path, "suites/conftest.py", _HOLD_TEARDOWN.format(go=str(self.go)))
        with self.log.open("w") as out:
            self.proc = subprocess.Popen([*self.argv, "-n", "2"], cwd=self.tmp_path, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        if not _wait_for(lambda: self.cached() == _SERVED and self.stub.in_flight == _IN_FLIGHT, 90):
            pytest.fail("the run never had its first replies cached and the next calls in flight")
        assert self.stub.calls == _SERVED + _IN_FLIGHT
        return self.proc

    def send(self, signum: int, *, terminal: bool = False) -> float:
        """``signum`` to the controller alone, or (``terminal``) to every process of the run, as a terminal sends
        Ctrl-C; returns when."""
        assert self.proc is not None
        if terminal:
            os.killpg(self.proc.pid, signum)
        else:
            self.proc.send_signal(signum)
        sent = time.monotonic()
        if self.signalled is None:
            self.signalled = sent
        return sent

    def answer(self) -> None:
        """Let the held calls go; a controller held before its teardown, once their replies are cached (or after
        30 s)."""
        self.answered.set()
        if self.go is not None:
            _wait_for(lambda: self.cached() >= _SERVED + _IN_FLIGHT, 30)
            self.go.touch()

    def answer_in(self, seconds: float) -> None:
        self.timer = threading.Timer(seconds, self.answer)
        self.timer.start()

    def cached(self) -> int:
        """Complete cache entries (not the hidden temporary files of one being written)."""
        cache = self.tmp_path / ".ifbench-cache"
        return len([p for p in cache.rglob("*.json") if not p.name.startswith(".")]) if cache.is_dir() else 0

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def says(self, line: str, times: int, timeout: float) -> bool:
        """Whether the run's output has ``line`` ``times`` times within ``timeout`` seconds."""
        return _wait_for(lambda: self.output().count(line) >= times, timeout)

    def end(self, timeout: float = 90) -> int:
        assert self.proc is not None
        status = self.proc.wait(timeout)
        if self.signalled is not None:
            self.took = time.monotonic() - self.signalled
        return status

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.answered.set()
        if self.go is not None:
            self.go.touch()
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _wait_for(ready: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def run(tmp_path, stub_env) -> Iterator[_Run]:
    started = _Run(tmp_path, stub_env)
    try:
        yield started
    finally:
        started.stop()
        stub_env.wait_idle(timeout=30)


def _stopped_and_kept_what_was_sent(run: _Run, status: int) -> str:
    """The run ended interrupted, sent nothing after the stop, kept the replies of the calls on their way (both
    workers said they wait for them), named its journal; a re-run pays only for the instances never sent. Returns
    the run's output."""
    output = run.output()
    assert run.stub.wait_idle(timeout=30)
    assert run.stub.calls == _SERVED + _IN_FLIGHT, (
        f"{run.stub.calls - _SERVED - _IN_FLIGHT} call(s) sent after the stop\n{output[-3000:]}")
    assert status == 2, output[-3000:]
    assert output.count(_WORKER_WAITS) == 2, output[-3000:]
    assert run.cached() == _SERVED + _IN_FLIGHT, (
        f"the replies of the calls on their way were not all kept: {run.cached()} cached of "
        f"{_SERVED + _IN_FLIGHT} answered (the run ended {run.took:.1f} s after the signal)\n"
        f"{output[-3000:]}")
    assert "not written: the run was interrupted" in output, output[-3000:]
    again = subprocess.run(run.argv, cwd=run.tmp_path, env=run.env, capture_output=True, text=True, timeout=180)
    assert again.returncode == 0, again.stdout[-3000:]
    assert run.stub.calls == _INSTANCES, "the re-run paid only for the instances never sent"
    return output


def test_sigint_to_the_controller_alone_stops_its_workers_sending(run):
    """``kill -INT <controller>`` (``timeout -s INT``, a CI job cancelled): the workers were not told, went on
    sending the calls queued for their items (18 after the signal, over 5 s, in the audit) and no journal was
    named; as with SIGTERM, or a terminal's Ctrl-C, nothing new is sent and the calls on their way are kept."""
    run.start(hold_teardown=True)
    run.send(signal.SIGINT)
    run.says(_WORKER_WAITS, 2, timeout=20)  # (not told, they never say so: the calls are let go after 20 s then)
    run.answer()
    _stopped_and_kept_what_was_sent(run, run.end())


def test_ctrl_c_in_a_terminal_still_waits_for_the_calls_sent(run):
    """A terminal's Ctrl-C reaches the workers too: the controller's copy passed on to them is not a second
    Ctrl-C (which would stop them at once, the calls on their way paid for and lost)."""
    proc = run.start()
    run.send(signal.SIGINT, terminal=True)
    assert run.says(_WORKER_WAITS, 2, timeout=60), run.output()[-3000:]
    time.sleep(1.5)  # the controller's copy, however late, has arrived: the workers still wait
    assert proc.poll() is None and run.stub.in_flight == _IN_FLIGHT, run.output()[-3000:]
    run.answer()
    _stopped_and_kept_what_was_sent(run, run.end())


def test_ctrl_c_twice_in_a_terminal_stops_at_once(run):
    """A second Ctrl-C, seconds after the first, ends the wait for the calls on their way (here held for good):
    the run ends long before the 20 s it would wait for them (or the 15 s execnet gives a worker still running
    once the controller is gone)."""
    run.start()
    run.send(signal.SIGINT, terminal=True)
    assert run.says(_WORKER_WAITS, 2, timeout=60), run.output()[-3000:]
    time.sleep(2)
    second = run.send(signal.SIGINT, terminal=True)
    status = run.end(timeout=60)
    assert time.monotonic() - second < 10, run.output()[-3000:]
    # (the second KeyboardInterrupt may reach the controller outside the wait for its workers, and end it)
    assert status in (2, -signal.SIGINT), run.output()[-3000:]
    assert run.cached() == _SERVED


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stopped_run_under_xdist_keeps_the_replies_of_calls_answered_after_5_s(run, signum):
    """``kill -INT`` / ``kill -TERM`` to the controller (``timeout``, ``docker stop``, a CI job cancelled): the
    four calls on their way, answered 9 s later, are in the cache; nothing else was sent; the re-run pays only for
    the instances never sent. (Before: exit 2, 8 calls paid, 4 cached -- execnet cut the wait after 5 s.)"""
    run.start()
    run.send(signum)
    run.answer_in(_LATENCY)
    output = _stopped_and_kept_what_was_sent(run, run.end())
    assert output.count(_CONTROLLER_WAITS) == 1, output[-3000:]


def test_a_second_ctrl_c_to_the_waiting_controller_stops_the_run_at_once(run):
    """While the controller waits for its workers (their calls held for good here), a second SIGINT to it ends
    the run within seconds, not after the 20 s wait; nothing more is sent or cached."""
    run.start()
    run.send(signal.SIGINT)
    assert run.says(_CONTROLLER_WAITS, 1, timeout=30), (
        f"the controller never said it waits for its workers\n{run.output()[-3000:]}")
    time.sleep(2)  # a person's second Ctrl-C, not the first one's copy
    second = run.send(signal.SIGINT)
    status = run.end(timeout=60)
    output = run.output()
    assert time.monotonic() - second < 10, output[-3000:]
    assert status == 2, output[-3000:]
    assert run.cached() == _SERVED
    assert run.stub.calls == _SERVED + _IN_FLIGHT, output[-3000:]
