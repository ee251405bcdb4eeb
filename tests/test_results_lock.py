"""One run at a time writes a results file (``reports/results_lock.py``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from pytest_ifbench.reports.results_lock import ResultsInUse, ResultsLock, lock_path
from pytest_ifbench.reports.results_stream import journal_path
from pytest_ifbench.testing import Reply
from tests._support import FAKE_KEY, bulk_suite, stub_args, write_suite

_HOLD = """
import sys, time
from pathlib import Path
from pytest_ifbench.reports.results_lock import ResultsLock
ResultsLock(Path(sys.argv[1])).acquire()
print("held", flush=True)
time.sleep(60)
"""


def _holder(results) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(results)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "held\n"
    return proc


def test_a_second_holder_is_refused_naming_the_first_and_a_killed_holders_lock_is_free(tmp_path):
    results = tmp_path / "shard-1.json"
    first = _holder(results)
    try:
        with pytest.raises(ResultsInUse, match=rf"the results file {results} is being written by another run "
                                               rf"\(pid {first.pid} on .+, since .+\): let it finish"):
            ResultsLock(results).acquire()
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    again = ResultsLock(results)
    again.acquire()  # the killed run's lock went with it
    assert lock_path(results).read_text().startswith(f"pid {os.getpid()} on ")
    again.release()
    assert not lock_path(results).exists()


def test_a_lock_released_while_another_opens_it_is_taken_on_the_new_file(tmp_path):
    results = tmp_path / "r.json"
    first = ResultsLock(results)
    first.acquire()
    stale = os.open(lock_path(results), os.O_RDWR)  # as a second run would have, just before the release
    first.release()
    second = ResultsLock(results)
    second.acquire()
    third = ResultsLock(results)
    with pytest.raises(ResultsInUse):
        third.acquire()
    os.close(stale)
    second.release()


def test_a_second_run_on_the_same_results_file_stops_at_start_up_and_the_first_finishes_whole(tmp_path, stub_env):
    """Two runs given the same --ifbench-results at once (a shard re-run while the first still runs): each
    truncated the other's journal and both wrote one temporary file; both exited as usual and left invalid
    JSON, every record lost. The second now stops before paying for anything; the first's file is whole."""
    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY, PYTEST_ADDOPTS="")
    stub_env.add_rule("", Reply(content="hello there", latency=0.5))  # the first run takes 10 s at least
    write_suite(tmp_path, "suites/bulk.yaml", bulk_suite(20))
    argv = [sys.executable, "-m", "pytest", "suites", *stub_args(stub_env), "--ifbench-concurrency=1", "-q",
            "--ifbench-results=shard-1.json", "-p", "no:cacheprovider"]
    first = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        journal = journal_path(tmp_path / "shard-1.json")
        deadline = time.monotonic() + 60
        while not journal.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        second = subprocess.run([*argv, "--ifbench-cache=other-cache"], cwd=tmp_path, env=env, capture_output=True,
                                text=True, timeout=120)
        assert second.returncode == 4, second.stdout[-2000:] + second.stderr[-2000:]
        assert (f"pytest-ifbench: the results file {tmp_path / 'shard-1.json'} is being written by another run "
                f"(pid {first.pid} on ") in second.stderr
        assert first.wait(timeout=120) == 0
        assert stub_env.calls == 20, "the second run, with a cache of its own, paid for nothing"
    finally:
        if first.poll() is None:
            first.kill()
    data = json.loads((tmp_path / "shard-1.json").read_text())
    assert len(data["instances"]) == 20
    assert not journal.exists() and not lock_path(tmp_path / "shard-1.json").exists()


def test_a_merge_onto_a_results_file_a_run_is_writing_is_refused(tmp_path):
    """The run would have replaced the merged file at its end (both also wrote one temporary file)."""
    results = tmp_path / "r.json"
    holder = _holder(results)
    shard = tmp_path / "shard.json"
    shard.write_text(json.dumps({"format": 1, "model": "m", "judges": ["m"], "instances": [
        {"nodeid": "s::x", "benchmark": "b", "model": "m", "judges": ["m"], "status": "passed", "checks": []}]}))
    ifbench = os.path.join(os.path.dirname(sys.executable), "ifbench")
    try:
        merged = subprocess.run([ifbench, "merge", str(shard), "--out", str(results), "--summary="],
                                capture_output=True, text=True)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert merged.returncode == 2, merged.stderr
    assert f"ifbench merge: refused: the results file {results} is being written by another run" in merged.stderr
    assert not results.exists()
    again = subprocess.run([ifbench, "merge", str(shard), "--out", str(results), "--summary="],
                           capture_output=True, text=True)
    assert again.returncode == 0 and json.loads(results.read_text())["instances"][0]["nodeid"] == "s::x"
    assert not lock_path(results).exists()


def test_a_symlink_to_a_results_file_shares_its_lock(tmp_path):
    results = tmp_path / "real" / "r.json"
    results.parent.mkdir()
    results.write_text("{}")
    (tmp_path / "link.json").symlink_to(results)
    first = ResultsLock(results)
    first.acquire()
    try:
        with pytest.raises(ResultsInUse):
            ResultsLock(tmp_path / "link.json").acquire()
    finally:
        first.release()
