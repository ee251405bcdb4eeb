"""SIGINT under ``pytest -n``: to the controller alone (``kill -INT``, ``timeout -s INT``, a CI runner cancelling
the job) it stops the workers as a terminal's Ctrl-C does; a terminal's Ctrl-C, which reaches every process of
the run, still waits for the calls already sent, and a second one, seconds later, still stops at once.

Each run holds every model call after the first four in the stub (so four replies are cached and four calls
are in flight when the signal is sent, however loaded the machine), and lets them go only once both workers
say they wait for them: a worker still sending would then send the calls queued behind them. The controller of
an interrupted run is held before its teardown (a conftest, until the test says go): xdist's teardown interrupts
the workers itself, 5 s later (execnet's SIGINT to a worker still running), which hid whether the controller
told them, and cut their wait short."""

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

#: Instances of the suite; replies served at once (the calls after them are held); -n 2 x concurrency 2.
_INSTANCES, _SERVED, _IN_FLIGHT = 16, 4, 4
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
_WAITING = "model call(s) already sent (paid for)"


class _Run:
    """A ``pytest -n 2`` run in its own session (process group), against a stub holding the calls after the
    first :data:`_SERVED` until :meth:`release`."""

    def __init__(self, tmp_path: Path, stub) -> None:
        self.tmp_path, self.stub = tmp_path, stub
        self.held = threading.Event()
        served = iter(range(10**6))

        def hold_after_the_first(body: dict) -> Reply:
            if next(served) >= _SERVED:
                self.held.wait(120)
            return Reply(content="an answer")

        stub.add_rule("", hold_after_the_first)
        write_suite(tmp_path, "suites/bulk.yaml", bulk_suite(_INSTANCES))
        self.go = tmp_path / "go"
        write_suite(tmp_path, "suites/conftest.py", _HOLD_TEARDOWN.format(go=str(self.go)))
        # (a long timeout: a held call is not given up and sent again)
        self.argv = [sys.executable, "-m", "pytest", "suites",
                     *stub_args(stub, "--ifbench-concurrency=2", "--ifbench-timeout=120"), "-q"]
        self.env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY, PYTEST_ADDOPTS="")
        self.log = tmp_path / "output.txt"
        self.proc: subprocess.Popen | None = None

    def start(self) -> subprocess.Popen:
        with self.log.open("w") as out:
            self.proc = subprocess.Popen([*self.argv, "-n", "2"], cwd=self.tmp_path, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        _wait_for(lambda: self.cached() == _SERVED and self.stub.in_flight == _IN_FLIGHT, 90,
                  "the run never had its first replies cached and the next calls in flight")
        assert self.stub.calls == _SERVED + _IN_FLIGHT
        return self.proc

    def cached(self) -> int:
        """Complete cache entries (not the hidden temporary files of one being written)."""
        cache = self.tmp_path / ".ifbench-cache"
        return len([p for p in cache.rglob("*.json") if not p.name.startswith(".")]) if cache.is_dir() else 0

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def both_workers_wait(self, timeout: float) -> bool:
        try:
            _wait_for(lambda: self.output().count(_WAITING) >= 2, timeout, "")
        except _NotReady:
            return False
        return True

    def release(self) -> None:
        """Let the held calls go; once their replies are cached (or after 30 s), the controller's teardown."""
        self.held.set()
        try:
            _wait_for(lambda: self.cached() >= _SERVED + _IN_FLIGHT, 30, "")
        except _NotReady:
            pass
        self.go.touch()

    def end(self, timeout: float = 90) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self) -> None:
        self.held.set()
        self.go.touch()
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


class _NotReady(Exception):
    pass


def _wait_for(ready: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            if what:
                pytest.fail(what)
            raise _NotReady
        time.sleep(0.05)


@pytest.fixture
def run(tmp_path, stub_env) -> Iterator[_Run]:
    started = _Run(tmp_path, stub_env)
    try:
        yield started
    finally:
        started.stop()
        stub_env.wait_idle(timeout=30)


def _stopped_and_kept_what_was_sent(run: _Run, status: int) -> None:
    """The run ended interrupted, sent nothing after the stop, kept the replies of the calls on their way, named its
    journal; a re-run pays only for the instances never sent."""
    output = run.output()
    assert run.stub.wait_idle(timeout=30)
    assert run.stub.calls == _SERVED + _IN_FLIGHT, (
        f"{run.stub.calls - _SERVED - _IN_FLIGHT} call(s) sent after the stop\n{output[-3000:]}")
    assert status == 2, output[-3000:]
    assert output.count(_WAITING) == 2, output[-3000:]
    assert run.cached() == _SERVED + _IN_FLIGHT, "the replies of the calls on their way were kept"
    assert "not written: the run was interrupted" in output, output[-3000:]
    again = subprocess.run(run.argv, cwd=run.tmp_path, env=run.env, capture_output=True, text=True, timeout=180)
    assert again.returncode == 0, again.stdout[-3000:]
    assert run.stub.calls == _INSTANCES, "the re-run paid only for the instances never sent"


def test_sigint_to_the_controller_alone_stops_its_workers_sending(run):
    """``kill -INT <controller>`` (``timeout -s INT``, a CI job cancelled): the workers were not told, went on
    sending the calls queued for their items (18 after the signal, over 5 s, in the audit) and no journal was
    named; as with SIGTERM, or a terminal's Ctrl-C, nothing new is sent and the calls on their way are kept."""
    proc = run.start()
    proc.send_signal(signal.SIGINT)
    run.both_workers_wait(timeout=20)  # (not told, they never say so: the calls are let go after 20 s then)
    run.release()
    _stopped_and_kept_what_was_sent(run, run.end())


def test_ctrl_c_in_a_terminal_still_waits_for_the_calls_sent(run):
    """A terminal's Ctrl-C reaches the workers too: the controller's copy passed on to them is not a second
    Ctrl-C (which would stop them at once, the calls on their way paid for and lost)."""
    proc = run.start()
    os.killpg(proc.pid, signal.SIGINT)
    assert run.both_workers_wait(timeout=60), run.output()[-3000:]
    time.sleep(1.5)  # the controller's copy, however late, has arrived: the workers still wait
    assert proc.poll() is None and run.stub.in_flight == _IN_FLIGHT, run.output()[-3000:]
    run.release()
    _stopped_and_kept_what_was_sent(run, run.end())


def test_ctrl_c_twice_in_a_terminal_stops_at_once(run):
    """A second Ctrl-C, seconds after the first, ends the wait for the calls on their way (here held for good):
    the run ends long before the 20 s it would wait for them (or the 15 s execnet gives a worker still running
    once the controller is gone)."""
    proc = run.start()
    os.killpg(proc.pid, signal.SIGINT)
    assert run.both_workers_wait(timeout=60), run.output()[-3000:]
    time.sleep(2)
    os.killpg(proc.pid, signal.SIGINT)
    second = time.monotonic()
    status = run.end(timeout=60)
    assert time.monotonic() - second < 10, run.output()[-3000:]
    # (the controller, held before its teardown, may end with the second KeyboardInterrupt's traceback)
    assert status in (2, -signal.SIGINT), run.output()[-3000:]
    assert run.cached() == _SERVED
