"""Records streamed to disk as instances finish: the journal beside the results file, the results file
assembled from it, the compact views the session keeps, and readers of both."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc

import pytest

from pytest_ifbench.reports import results_stream
from pytest_ifbench.reports.metrics import core_tables, headline_metrics
from pytest_ifbench.reports.records import SummaryViews
from pytest_ifbench.reports.results_reader import read_results_text
from pytest_ifbench.reports.results_stream import ResultsJournal, journal_path
from pytest_ifbench.scale.merge import load
from pytest_ifbench.testing import Reply
from tests._support import (
    FAKE_KEY,
    HELLO_LOWER,
    SHOUT,
    bulk_suite,
    demo_suite,
    small_disk,
    stub_args,
    write_suite,
)

SUITE = demo_suite(HELLO_LOWER, SHOUT)


def _record(i: int, *, passed: bool = True, text: str = "stub reply") -> dict:
    checks = [{"id": f"c{k}", "verifier": "ifbench.word_count", "params": {"min": 1, "max": 100},
               "description": "The reply has between min and max words.", "kind": "check", "points": 1.0,
               "turn": None, "scored": True, "category": None, "metadata": {}, "check": f"c{k}",
               "passed": passed or k, "error": None, "duration": 1e-5 * (i + 1),
               "verdict": {"passed": passed or k, "evidence": f"{i} words", "details": {}},
               "turn_ran": 1, "version": "1"} for k in range(5)]
    return {"nodeid": f"s.yaml::inst-{i:05d}", "suite": "s.yaml", "benchmark": "demo", "instance": f"inst-{i:05d}",
            "model": "openai/stub", "judges": ["openai/stub"], "protocol": "single_turn", "protocol_options": {},
            "category": "even" if i % 2 == 0 else "odd", "scaffold": None, "tier": None, "markers": [],
            "metadata": {}, "generation": {"temperature": 0.0, "max_tokens": 32},
            "status": "passed" if passed else "failed", "error": None, "ended": "completed",
            "turns": [{"index": 1, "messages": [{"role": "user", "content": f"prompt {i}"}],
                       "response": {"text": f"{text} {i}", "raw_text": f"{text} {i}", "cached": True,
                                    "prompt_tokens": 8, "completion_tokens": 11, "latency": 0.01 * i}}],
            "checks": checks, "judge_calls": [], "tokens": {"prompt": 0, "completion": 0, "cached_prompt": 8,
                                                             "cached_completion": 11},
            "cost": None, "durations": {"generation": 0.01 * i, "verification": 0.001 * i}, "samples": 1,
            "sample_responses": [], "verifier_versions": {"ifbench.word_count": "1"}}


def test_the_journal_holds_each_record_once_added_and_the_results_file_is_sorted(tmp_path, monkeypatch):
    monkeypatch.setattr(results_stream, "FLUSH_SECONDS", 0.0)
    target = tmp_path / "out" / "results.json"
    journal = ResultsJournal(target, {"model": "openai/stub", "judges": ["openai/stub"]})
    for i in (3, 1, 2):
        journal.add(_record(i))
        lines = journal.path.read_text(encoding="utf-8").splitlines()
        assert json.loads(lines[-1])["nodeid"] == f"s.yaml::inst-{i:05d}"  # on disk before the next one
    journal.add(_record(2, passed=False))  # reported again (a rerun): the later record wins
    assert json.loads(journal.path.read_text().splitlines()[0])["partial"] is True
    journal.finish({"model": "openai/stub", "judges": ["openai/stub"], "metrics": {"demo": {"items": 3}}})
    assert not journal.path.exists()
    doc = json.loads(target.read_text(encoding="utf-8"))
    assert list(doc)[:2] == ["format", "plugin_version"] and doc["metrics"] == {"demo": {"items": 3}}
    assert [r["nodeid"] for r in doc["instances"]] == [f"s.yaml::inst-{i:05d}" for i in (1, 2, 3)]
    assert doc["instances"][1]["status"] == "failed"
    assert doc["instances"][0] == _record(1)


def test_queued_records_reach_the_journal_within_the_flush_interval(tmp_path, monkeypatch):
    """A record queued behind a write is written by a later record past the interval, or by a timer when no
    record comes (the next instance may take minutes: a shard killed then lost every record queued)."""
    monkeypatch.setattr(results_stream, "FLUSH_SECONDS", 0.2)
    journal = ResultsJournal(tmp_path / "r.json", {})
    journal.add(_record(0))  # the first add may flush (the interval runs from the journal's creation)
    journal.flush()
    journal.add(_record(1))
    journal.add(_record(2))
    assert len(journal.path.read_text().splitlines()) == 2  # header + record 0: records 1 and 2 are queued
    time.sleep(0.5)  # no later record: the timer writes them
    assert len(journal.path.read_text().splitlines()) == 4
    monkeypatch.setattr(results_stream, "FLUSH_BYTES", 1)
    journal.add(_record(3))
    assert len(journal.path.read_text().splitlines()) == 5
    journal.finish({})
    assert len(json.loads((tmp_path / "r.json").read_text())["instances"]) == 4


def test_journal_records_are_redacted_and_odd_values_survive(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    journal = ResultsJournal(tmp_path / "r.json", {})
    odd = _record(1, text=f"leaked {FAKE_KEY} \u2028 line separator")
    odd["metadata"] = {"when": __import__("datetime").date(2024, 6, 1), "nan": float("nan")}
    journal.add(odd)
    journal.flush()
    assert FAKE_KEY not in journal.path.read_text(encoding="utf-8")
    data = read_results_text(journal.path.read_text(encoding="utf-8"))  # U+2028 is not a line break
    assert data["instances"][0]["metadata"] == {"when": "2024-06-01", "nan": "nan"}
    journal.finish({})
    text = (tmp_path / "r.json").read_text(encoding="utf-8")
    assert FAKE_KEY not in text and "\u2028" in text


def test_a_killed_runs_journal_is_read_like_a_results_file(tmp_path):
    journal = ResultsJournal(tmp_path / "r.json", {"model": "openai/stub", "judges": ["openai/stub"]})
    for i in range(3):
        journal.add(_record(i))
    journal.close()
    with journal.path.open("ab") as handle:
        handle.write(b'{"nodeid": "s.yaml::inst-0000')  # the process died mid-write
    loaded = load(journal.path)
    assert loaded.meta["model"] == "openai/stub" and "partial" not in loaded.meta
    assert [r["instance"] for r in loaded.records] == ["inst-00000", "inst-00001", "inst-00002"]
    with pytest.raises(ValueError):
        read_results_text('{"format": 1}\n{"not": "a journal"}\n')
    header_only = read_results_text('{"format": 1, "partial": true, "model": "m"}\n')
    assert header_only == {"format": 1, "model": "m", "instances": []}


def _held_by(make):
    """What ``make()`` returns, and the bytes it allocated that are still held once it has returned.

    Not the growth of ``tracemalloc.get_traced_memory()``: that counts every thread's allocations, and in a
    worker of ``-n 4`` (its live status writer, threads earlier tests left running) it once read 3,030 bytes
    a view. Only the blocks allocated below this file's frames count, and the collector is off meanwhile: a
    finalizer of another test's garbage would run, and allocate, on this thread."""
    gc.collect()
    gc.disable()
    tracemalloc.start(64)  # frames enough to reach this file's from whatever ``make`` allocates
    try:
        made = make()
        snapshot = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
        gc.enable()
    here = snapshot.filter_traces([tracemalloc.Filter(True, __file__, all_frames=True)])
    return made, sum(stat.size for stat in here.statistics("filename"))


def test_the_views_keep_what_the_metrics_read_and_are_small():
    records = [_record(i, passed=i % 3 != 0) for i in range(600)]
    views = SummaryViews()
    # as they arrive from xdist: fresh objects
    kept, held = _held_by(lambda: [views.view(json.loads(json.dumps(r))) for r in records])
    per_view = held / len(kept)
    # the full record: ~17 KB as Python objects; views of their own dicts were ~1.9 KB, key-sharing ones ~1.2
    assert per_view < 1600, f"{per_view:.0f} bytes per view"
    assert headline_metrics(kept) == headline_metrics(records)
    assert core_tables("demo", kept) == core_tables("demo", records)
    view = kept[1]
    assert view["turns"] == [{"index": 1, "response": {"text": "stub reply 1"}}]  # the reply's text, nothing else
    assert view["tokens"] == records[1]["tokens"] and view["durations"] == records[1]["durations"]
    assert {type(part) for part in (view["tokens"], view["durations"], view["turns"][0])} == {dict}
    assert "description" not in view["checks"][0] and "evidence" not in view["checks"][0]["verdict"]
    assert view["checks"][0]["verdict"]["passed"] is True and view["nodeid"] == "s.yaml::inst-00001"
    assert kept[1]["checks"][0] is kept[2]["checks"][0]  # equal parts are shared
    # an ordinary dict whose keys are stored once for all views (a key-sharing dict): a third of a copy's size
    assert type(view) is dict and sys.getsizeof(view) * 2 < sys.getsizeof(dict(view))


def test_a_run_streams_records_before_it_ends(pytester, stub_env):
    """A conftest looks at the journal while the run goes on: each finished instance is already there."""
    stub_env.add_rule("", Reply(content="hello there"))
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(6))
    pytester.makeconftest('''
import json, pathlib, pytest
from pytest_ifbench.reports import results_stream
results_stream.FLUSH_SECONDS = 0.0  # every record at once: the default hands them over within 0.25 s
SEEN = []

@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if report.when == "teardown" and "::" in report.nodeid:
        path = pathlib.Path("ifbench-results.partial.jsonl")
        SEEN.append(len(path.read_text().splitlines()) - 1 if path.exists() else -1)

def pytest_sessionfinish(session):
    pathlib.Path("seen.json").write_text(json.dumps(SEEN))
''')
    result = pytester.runpytest("suites", *stub_args(stub_env))
    assert result.ret == 0
    assert json.loads((pytester.path / "seen.json").read_text()) == [1, 2, 3, 4, 5, 6]
    assert not (pytester.path / "ifbench-results.partial.jsonl").exists()
    doc = json.loads((pytester.path / "ifbench-results.json").read_text())
    assert len(doc["instances"]) == 6 and doc["instances"][0]["turns"][0]["response"]["text"] == "hello there"


def test_subtest_and_logged_reports_do_not_keep_the_record(pytester, stub_env):
    stub_env.add_rule("lowercase", Reply(content="hello there"))
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    pytester.makeconftest('''
import json, pathlib, pytest
CARRIED, REPORTS = [], []

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    CARRIED.append([report.when, hasattr(report, "context"), hasattr(report, "ifbench_record")])
    REPORTS.append(report)

def pytest_sessionfinish(session):
    kept = sum(hasattr(r, "ifbench_record") for r in REPORTS)
    pathlib.Path("carried.json").write_text(json.dumps({"carried": CARRIED, "kept": kept}))
''')
    result = pytester.runpytest("suites", *stub_args(stub_env))
    assert result.ret == 1  # shout fails its check
    data = json.loads((pytester.path / "carried.json").read_text())
    with_record = [entry for entry in data["carried"] if entry[2]]
    assert with_record == [["call", False, True], ["call", False, True]]  # the call reports only, no subtest
    assert data["kept"] == 0  # dropped once every plugin saw it


def _output_or_stacks(proc: subprocess.Popen, timeout: float) -> str:
    """The run's output once it ended; if it is still running after ``timeout`` s, every thread's stack
    (its faulthandler, enabled by ``PYTHONFAULTHANDLER``, dumps them on SIGABRT) in the failure."""
    try:
        return proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        stacks = proc.communicate(timeout=30)[0]
        pytest.fail(f"the run did not end within {timeout:g} s of the signal:\n{stacks[-12000:]}")


def _signal_once_journaled(tmp_path, stub_env, env, signum: int, stdout=subprocess.DEVNULL) -> subprocess.Popen:
    """A run of 40 slow instances in a child pytest, sent ``signum`` once its journal holds 3 records."""
    stub_env.add_rule("", Reply(content="hello there", latency=0.3))
    write_suite(tmp_path, "suites/bulk.yaml", bulk_suite(40))
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "suites", *stub_args(stub_env),
                             "--ifbench-concurrency=1", "-q"], cwd=tmp_path, env=env,
                            stdout=stdout, stderr=subprocess.STDOUT, text=True)
    journal = journal_path(tmp_path / "ifbench-results.json")
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if journal.exists() and len(journal.read_text(encoding="utf-8").splitlines()) >= 4:
                break
            time.sleep(0.05)
        else:
            pytest.fail("no records reached the journal")
    finally:
        proc.send_signal(signum)
    return proc


@pytest.mark.parametrize("gap", [0.0, 0.02, 0.1])
def test_ctrl_c_twice_in_quick_succession_keeps_the_journal_and_the_earlier_file(tmp_path, stub_env, gap):
    """The second Ctrl-C came while pytest was still taking the first (before it had marked the session
    interrupted): the session then finished as if the run had, wrote a results file of the instances that
    happened to finish over an earlier complete one, and removed the journal (4 times in 4 in the audit)."""
    earlier = tmp_path / "ifbench-results.json"
    earlier.write_text('{"an": "earlier complete run"}')
    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY, PYTEST_ADDOPTS="", PYTHONFAULTHANDLER="1")
    proc = _signal_once_journaled(tmp_path, stub_env, env, signal.SIGINT, stdout=subprocess.PIPE)
    time.sleep(gap)
    proc.send_signal(signal.SIGINT)
    output = _output_or_stacks(proc, 60)
    assert proc.returncode in (2, -signal.SIGINT), output[-3000:]
    assert earlier.read_text() == '{"an": "earlier complete run"}', output[-3000:]
    done = read_results_text(journal_path(earlier).read_text(encoding="utf-8"))["instances"]
    assert 3 <= len(done) < 40


def test_a_killed_run_leaves_its_finished_records_in_the_journal(tmp_path, stub_env):
    """SIGKILL in the middle of a run: the journal holds every instance reported so far, and
    ``ifbench merge`` turns it into a results file."""
    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY, PYTEST_ADDOPTS="")
    journal = journal_path(tmp_path / "ifbench-results.json")
    _signal_once_journaled(tmp_path, stub_env, env, signal.SIGKILL).wait()
    assert not (tmp_path / "ifbench-results.json").exists()
    done = read_results_text(journal.read_text(encoding="utf-8"))["instances"]
    assert 3 <= len(done) < 40 and all(r["status"] == "passed" for r in done)
    ifbench = os.path.join(os.path.dirname(sys.executable), "ifbench")
    merged = subprocess.run([ifbench, "merge", str(journal), "--out", str(tmp_path / "merged.json"),
                             "--summary="], capture_output=True, text=True, env=env)
    assert merged.returncode in (0, 1), merged.stderr  # 1: incomplete is fine, the records are there
    assert len(json.loads((tmp_path / "merged.json").read_text())["instances"]) == len(done)


def test_a_run_killed_during_a_long_instance_keeps_the_instances_finished_before_it(tmp_path, stub_env):
    """Three instances answer at once, the fourth takes a minute: killed during it, the journal held only
    what a later record had written (the first), though all three were reported and paid for."""
    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY, PYTEST_ADDOPTS="")
    stub_env.add_rule("question 3", Reply(content="slow reply", latency=60))
    stub_env.add_rule("", Reply(content="hello there"))
    write_suite(tmp_path, "suites/bulk.yaml", bulk_suite(4))
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "suites", *stub_args(stub_env),
                             "--ifbench-concurrency=1", "-q"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while stub_env.calls < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.5)  # q000-q002 were reported long before; q003's reply is a minute away
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    done = read_results_text(journal_path(tmp_path / "ifbench-results.json").read_text(encoding="utf-8"))
    assert sorted(r["instance"] for r in done["instances"]) == ["q000", "q001", "q002"]


def test_a_big_session_tunes_the_collector_and_gives_it_back(pytester, stub_env, monkeypatch, request):
    """Full collections a tenth as often during the session and, from SessionHeap.BIG finished tests on,
    the heap frozen while pytest collects at exit; both undone by the end of the run."""
    import gc

    from pytest_ifbench._heap import SessionHeap

    monkeypatch.setattr(SessionHeap, "BIG", 3)
    stub_env.add_rule("", Reply(content="hello there"))
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(3))
    pytester.makeconftest('''
import gc, json, pathlib, pytest

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    pathlib.Path("heap.json").write_text(json.dumps([gc.get_freeze_count(), gc.get_threshold()]))
''')
    outer = gc.get_threshold()  # this test session's own (tuned by the plugin too)
    gc.set_threshold(700, 10, 10)  # CPython's default
    request.addfinalizer(lambda: gc.set_threshold(*outer))
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    result = pytester.runpytest_inprocess("suites", *stub_args(stub_env))
    assert result.ret == 0
    frozen, thresholds = json.loads((pytester.path / "heap.json").read_text())
    assert frozen > 0 and thresholds == [*before[:2], SessionHeap.FULL_COLLECTION_THRESHOLD]
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before  # given back by the end of the run
    monkeypatch.setattr(SessionHeap, "BIG", 4)  # a smaller session: pytest's own exit
    result = pytester.runpytest_inprocess("suites", *stub_args(stub_env))
    assert json.loads((pytester.path / "heap.json").read_text())[0] == 0
    gc.set_threshold(*before[:2], 500)  # a user's own tuning is left alone
    result = pytester.runpytest_inprocess("suites", *stub_args(stub_env))
    assert json.loads((pytester.path / "heap.json").read_text())[1] == [*before[:2], 500]


#: Run in a fresh interpreter: pytest on the suite, then a reference cycle whose ``__del__`` writes a
#: file -- only the interpreter's last collection at exit can finalize it.
_EXIT_PROBE = """
import pathlib, sys, pytest
from pytest_ifbench._heap import SessionHeap
SessionHeap.BIG = int(sys.argv[1])
assert pytest.main(["suites", "-q", "-p", "no:cacheprovider", *sys.argv[2:]]) == 0

class Cycle:
    def __del__(self):
        pathlib.Path("finalized").write_text("yes")

cycle = Cycle()
cycle.me = cycle
del cycle
"""


@pytest.mark.parametrize(("freeze_from", "finalized"), [(3, False), (4, True)])
def test_a_big_session_spares_the_interpreter_its_last_heap_walk(pytester, stub_env, freeze_from, finalized):
    """The exit handler freezes the heap again after pytest thawed it: the interpreter's collection at
    exit visits nothing (so garbage in a cycle is not finalized: the documented price); below the
    threshold the exit is Python's own."""
    stub_env.add_rule("", Reply(content="hello there"))
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(3))
    env = {**os.environ, "OPENAI_API_KEY": FAKE_KEY}
    done = subprocess.run([sys.executable, "-c", _EXIT_PROBE, str(freeze_from), *stub_args(stub_env)],
                          cwd=pytester.path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (pytester.path / "finalized").exists() is finalized


def test_a_journal_that_cannot_be_written_loses_no_record(pytester, stub_env):
    """The journal's directory is a file: every record is kept in memory and the results file is
    still written where it can be (here: nowhere, so the error is the run's, as before streaming)."""
    stub_env.add_rule("", Reply(content="hello there"))
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(3))
    pytester.makeconftest('''
import pytest
from pytest_ifbench.reports import results_stream

class Failing(results_stream.ResultsJournal):
    def flush(self):
        if self._pending and len(self._index) >= 1:
            raise OSError(28, "No space left on device")
        super().flush()

results_stream.FLUSH_SECONDS = 0.0
results_stream.ResultsJournal = Failing
''')
    result = pytester.runpytest("suites", *stub_args(stub_env))
    assert result.ret == 0
    doc = json.loads((pytester.path / "ifbench-results.json").read_text())
    assert [r["instance"] for r in doc["instances"]] == ["q000", "q001", "q002"]
    assert not (pytester.path / "ifbench-results.partial.jsonl").exists()


def test_a_plugin_adds_entries_to_the_results_file_but_not_over_the_core_s(pytester, stub_env):
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(2))
    pytester.makeconftest('''
def pytest_ifbench_results_meta(config):
    return {"ci": {"job": 7}, "model": "not the model", "instances": []}
''')
    assert pytester.runpytest("suites", *stub_args(stub_env)).ret == 0
    doc = json.loads((pytester.path / "ifbench-results.json").read_text())
    assert doc["ci"] == {"job": 7} and doc["model"] == "openai/stub" and len(doc["instances"]) == 2


def test_a_batch_the_disk_refuses_stays_queued_for_the_run_to_keep(tmp_path):
    """The journal on a full disk: the records of the batch whose write failed come back from
    take_pending (the session keeps them in memory); they were dropped, and so missing from the results
    file written at the end once the disk had room again."""
    with small_disk(tmp_path / "small", "64k") as small:
        journal = ResultsJournal(small / "r.json", {})
        attempted = []
        with pytest.raises(OSError):
            for i in range(1000):
                attempted.append(f"s.yaml::inst-{i:05d}")
                journal.add(_record(i))
                journal.flush()
        kept = {r["nodeid"] for r in journal.take_pending()}
        on_disk = {r["nodeid"] for r in read_results_text(journal.path.read_text(encoding="utf-8"))["instances"]}
        assert kept and not kept & on_disk and kept | on_disk == set(attempted), "every record added is somewhere"


def test_a_run_whose_results_file_the_disk_refuses_says_so_and_keeps_its_summary(pytester, stub_env):
    """The results file on a full disk: the run ends with its tables and one line saying the file was
    not written and how many records its journal holds (it ended in an INTERNALERROR, without them)."""
    stub_env.add_rule("", Reply(content="hello there " * 300))
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(80))
    with small_disk(pytester.path / "small", "128k"):
        result = pytester.runpytest("suites", *stub_args(stub_env, "--ifbench-results=small/r.json"))
        assert result.ret == 0 and "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
        line = next(line for line in result.outlines if "results file" in line)
        assert line.startswith("warning: results file small/r.json not written (No space left on device); ")
        held = len(read_results_text((pytester.path / "small" / "r.partial.jsonl").read_text())["instances"])
        assert f"; {held} of the 80 records are in " in line and 0 < held < 80
        result.stdout.fnmatch_lines(["*ifbench summary*", "model: openai/stub*"])


def test_sigterm_while_the_run_writes_its_results_lets_it_finish(pytester, stub_env):
    """The items are done and the results file is being written: SIGTERM there cut it with a traceback and
    exit status 1 (CI read a test failure). It now lets the run finish, and says so."""
    pytester.makeconftest("""
        import os, signal

        def pytest_sessionfinish(session):
            os.kill(os.getpid(), signal.SIGTERM)
    """)
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(3))
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env))
    assert result.ret == 0, result.stdout.str()[-2000:] + result.stderr.str()[-2000:]
    result.stderr.fnmatch_lines(["pytest-ifbench: SIGTERM while the run writes its results and summary: it ends "
                                 "once they are written*"])
    assert len(json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]) == 3


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_run_keeps_its_journal_and_writes_no_results_file(tmp_path, stub_env, signum):
    """SIGINT (Ctrl-C; a CI job cancelled or out of time gets it first): the results file assembled from
    the journal looked like a finished run's -- its rates over the instances that happened to finish, merged
    with exit 0 -- and replaced an earlier complete file. Now the journal stays, as a killed run's does, the
    earlier file is left alone, and the summary says so. SIGTERM (a pod deleted, ``scancel``, ``docker
    stop``) killed the run where it stood, with no summary; it now stops the run as Ctrl-C does."""
    earlier = tmp_path / "ifbench-results.json"
    earlier.write_text('{"an": "earlier complete run"}')
    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY, PYTEST_ADDOPTS="")
    journal = journal_path(earlier)
    proc = _signal_once_journaled(tmp_path, stub_env, env, signum, stdout=subprocess.PIPE)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, output[-3000:]
    assert earlier.read_text() == '{"an": "earlier complete run"}'
    done = read_results_text(journal.read_text(encoding="utf-8"))["instances"]
    assert 3 <= len(done) < 40
    assert (f"warning: results file ifbench-results.json not written: the run was interrupted; the {len(done)} "
            f"record(s) it finished are in {journal}") in output, output[-3000:]
    ifbench = os.path.join(os.path.dirname(sys.executable), "ifbench")
    merged = subprocess.run([ifbench, "merge", str(journal), "--out", str(tmp_path / "merged.json"),
                             "--summary="], capture_output=True, text=True, env=env)
    assert merged.returncode == 1 and "did not finish" in merged.stderr + merged.stdout, merged
