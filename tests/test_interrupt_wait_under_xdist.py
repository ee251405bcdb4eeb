"""Under ``pytest -n``, a stopped run still waits up to 20 s for the model calls its workers already sent.

The controller's teardown (xdist's ``NodeManager.teardown_nodes``) ends each worker through execnet, which
interrupts a worker still running 5 s later (a SIGINT it sends itself: a second Ctrl-C, which ends the wait at
once) and the controller kills it 10 s after the teardown started. The calls on their way, paid for, were lost
when they took longer than 5 s: a stopped controller now starts its teardown only once its workers are done
waiting for them.

Each run serves the first four replies at once and holds every call after them in the stub (so four replies are
cached and four calls are in flight when the signal is sent, however loaded the machine); the held calls are
answered 9 s after the signal: more than the 5 s the teardown gave, well within the 20 s promised."""

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
#: Seconds after the signal the calls in flight are answered.
_LATENCY = 9.0
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

    def start(self) -> subprocess.Popen:
        with self.log.open("w") as out:
            self.proc = subprocess.Popen([*self.argv, "-n", "2"], cwd=self.tmp_path, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        _wait_for(lambda: self.cached() == _SERVED and self.stub.in_flight == _IN_FLIGHT, 90,
                  "the run never had its first replies cached and the next calls in flight")
        assert self.stub.calls == _SERVED + _IN_FLIGHT
        return self.proc

    def answer_in(self, seconds: float) -> None:
        self.timer = threading.Timer(seconds, self.answered.set)
        self.timer.start()

    def cached(self) -> int:
        """Complete cache entries (not the hidden temporary files of one being written)."""
        cache = self.tmp_path / ".ifbench-cache"
        return len([p for p in cache.rglob("*.json") if not p.name.startswith(".")]) if cache.is_dir() else 0

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def end(self, timeout: float = 90) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.answered.set()
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _wait_for(ready: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            pytest.fail(what)
        time.sleep(0.05)


@pytest.fixture
def run(tmp_path, stub_env) -> Iterator[_Run]:
    started = _Run(tmp_path, stub_env)
    try:
        yield started
    finally:
        started.stop()
        stub_env.wait_idle(timeout=30)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stopped_run_under_xdist_keeps_the_replies_of_calls_answered_after_5_s(run, signum):
    """``kill -INT`` / ``kill -TERM`` to the controller (``timeout``, ``docker stop``, a CI job cancelled): the
    four calls on their way, answered 9 s later, are in the cache; nothing else was sent; the re-run pays only for
    the instances never sent. (Before: exit 2, 8 calls paid, 4 cached -- execnet cut the wait after 5 s.)"""
    proc = run.start()
    proc.send_signal(signum)
    run.answer_in(_LATENCY)
    started = time.monotonic()
    status = run.end()
    output = run.output()
    assert run.stub.wait_idle(timeout=30)
    assert run.stub.calls == _SERVED + _IN_FLIGHT, (
        f"{run.stub.calls - _SERVED - _IN_FLIGHT} call(s) sent after the stop\n{output[-3000:]}")
    assert status == 2, output[-3000:]
    assert run.cached() == _SERVED + _IN_FLIGHT, (
        f"{run.cached()} cached of {_SERVED + _IN_FLIGHT} answered (the run ended "
        f"{time.monotonic() - started:.1f} s after the signal)\n{output[-3000:]}")
    assert output.count(_CONTROLLER_WAITS) == 1, output[-3000:]
    assert "not written: the run was interrupted" in output, output[-3000:]
    again = subprocess.run(run.argv, cwd=run.tmp_path, env=run.env, capture_output=True, text=True, timeout=180)
    assert again.returncode == 0, again.stdout[-3000:]
    assert run.stub.calls == _INSTANCES, "the re-run paid only for the instances never sent"


def test_a_second_ctrl_c_to_the_waiting_controller_stops_the_run_at_once(run):
    """While the controller waits for its workers (their calls held for good here), a second SIGINT to it ends
    the run within seconds, not after the 20 s wait; nothing more is sent or cached."""
    proc = run.start()
    proc.send_signal(signal.SIGINT)
    _wait_for(lambda: _CONTROLLER_WAITS in run.output(), 30,
              f"the controller never said it waits for its workers\n{run.output()[-3000:]}")
    time.sleep(2)  # a person's second Ctrl-C, not the first one's copy
    proc.send_signal(signal.SIGINT)
    second = time.monotonic()
    status = run.end(timeout=60)
    output = run.output()
    assert time.monotonic() - second < 10, output[-3000:]
    assert status == 2, output[-3000:]
    assert run.cached() == _SERVED
    assert run.stub.calls == _SERVED + _IN_FLIGHT, output[-3000:]
