"""Parent side: the test front ends -- assert-style tests and stdin/stdout cases.

Both build a job for the Python harness through :mod:`._python` and turn what
comes back (the harness's records plus the process result) into one
:class:`TestOutcome` per test, always in order and always complete: a test
that never ran because the process died or the code failed to load is
reported as failed with the reason, never silently dropped.

* :func:`run_assert_tests` -- one child loads the code once and runs every
  snippet (``"tests"`` mode of :mod:`._harness`).
* :func:`run_stdio_tests` -- one child per case (``"script"`` mode), run
  concurrently from a small thread pool; outputs are compared line by line
  after trailing-whitespace normalisation.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ._checks import Check, SplitTest, decode, split_test
from ._python import execute, run_script
from ._types import SandboxLimits, SandboxResult, TestOutcome, TestRun


def _death_reason(result: SandboxResult, limits: SandboxLimits) -> str:
    if result.limit == "timeout":
        return f"wall-clock timeout ({limits.timeout:g} s)"
    if result.limit == "output":
        return f"output limit exceeded ({limits.max_output_bytes} bytes)"
    if result.limit == "cpu":
        return f"CPU time limit exceeded ({limits.cpu_seconds} s)"
    if result.limit == "memory":
        return f"memory limit exceeded ({limits.memory_mb} MB)"
    if result.limit == "disk":
        return f"disk limit exceeded ({limits.disk_mb} MB)"
    rc = result.returncode
    if rc is None:
        return "killed by the sandbox"
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = str(-rc)
        text = f"killed by signal {name}"
    else:
        text = f"the process exited with code {rc} (os._exit() or a crash)"
    tail = _stderr_tail(result.stderr)
    return text + (f"; stderr: {tail}" if tail else "")


def _stderr_tail(stderr: str, lines: int = 6, chars: int = 1500) -> str:
    tail = "\n".join(stderr.rstrip().splitlines()[-lines:])
    return tail[-chars:]


def run_assert_tests(
    code: str,
    tests: Sequence[str],
    *,
    setup: str = "",
    limits: SandboxLimits = SandboxLimits(),
) -> TestRun:
    """Load ``code`` once in the sandbox, then run each assert-style test.

    In one child process: ``setup`` (if any) then ``code`` are executed in a
    fresh module namespace named ``solution`` (so ``if __name__ ==
    "__main__":`` blocks do not run; setup runs first so the code may rely on
    its imports).  Any exception there -- including ``SystemExit`` -- is the
    ``load_error``.  Then every test snippet runs in a shallow copy of that
    namespace and passes iff it raises nothing.  Plain ``assert a <op> b``
    statements are rewritten to report both values on failure.
    ``SystemExit``/``KeyboardInterrupt`` in a test fail that test only.

    Time: the whole child gets ``limits.timeout`` seconds.  Each step (the
    load, each test) runs under its own ``setitimer`` alarm sized to leave a
    reserve for the remaining steps, so a test that loops forever fails with
    ``"timeout: ..."`` and the following tests still run; ``result.limit`` is
    then ``"timeout"``.  A ``MemoryError`` escaping a step sets
    ``result.limit = "memory"``; hitting ``RLIMIT_CPU`` fails the running test
    and sets ``"cpu"``.  If the process dies (``os._exit``, crash, kill), the
    running test fails with the reason and later tests are reported as
    "not run".  Outcomes are always returned in order, one per test, named
    ``test_<i>``.
    """
    split = [split_test(str(t)) for t in tests]
    result, records = execute(
        {"mode": "tests", "code": code, "setup": setup or "", "tests": [t.source for t in split]},
        stdin=None, files=None, limits=limits)
    return _assemble_assert_run(split, result, records, limits)


def _judge(name: str, split: SplitTest, record: dict, checks: list[dict]) -> TestOutcome:
    """One test's outcome: the child's word can fail a test, only the parent's checks make it a
    trusted pass (see :mod:`._checks`)."""
    if not record.get("passed"):
        return TestOutcome(name=name, passed=False, message=str(record.get("message") or "failed"))
    for check in split.checks:
        failure = _check_failure(check, [c for c in checks if c.get("k") == check.index])
        if failure is not None:
            return TestOutcome(name=name, passed=False, message=failure, trusted=True)
    return TestOutcome(name=name, passed=True, message="", trusted=bool(split.checks))


def _check_failure(check: Check, reports: list[dict]) -> str | None:
    if not reports:
        return f"assert {check.source}: the checked value never reached the sandbox's parent"
    for report in reports:
        if "error" in report:
            return f"assert {check.source}: {report['error']}"
        try:
            value = decode(report.get("value"))
        except (ValueError, RecursionError):
            return f"assert {check.source}: the sandboxed process reported a malformed value"
        failure = check.verdict(value, str(report.get("message") or ""))
        if failure is not None:
            return failure
    return None


def _assemble_assert_run(split: list[SplitTest], result: SandboxResult, records: list[dict],
                         limits: SandboxLimits) -> TestRun:
    load_rec = next((r for r in records if r.get("kind") == "load"), None)
    started = [r.get("step") for r in records if r.get("kind") == "start"]
    current = started[-1] if started else None
    names = {f"test_{i}": i for i in range(len(split))}
    verdicts: dict[str, list[dict]] = {}
    checks: dict[str, list[dict]] = {}
    for rec in records:
        if rec.get("kind") == "test" and rec.get("name") in names:
            verdicts.setdefault(rec["name"], []).append(rec)
        elif rec.get("kind") == "check" and rec.get("step") in names:
            checks.setdefault(rec["step"], []).append(rec)
    reported: dict[str, TestOutcome] = {}
    for name, recs in verdicts.items():
        if len(recs) > 1:  # the harness reports a test once: something else wrote records
            reported[name] = TestOutcome(name=name, passed=False, message="conflicting reports for this test")
        else:
            reported[name] = _judge(name, split[names[name]], recs[0], checks.get(name, []))

    if load_rec is None:
        load_error: str | None = (
            "the sandboxed process ended before the code finished loading: "
            + _death_reason(result, limits))
    else:
        err = load_rec.get("error")
        load_error = str(err) if err else None

    reason = _death_reason(result, limits)
    outcomes = []
    for i in range(len(split)):
        name = f"test_{i}"
        if name in reported:
            outcomes.append(reported[name])
        elif load_error is not None:
            outcomes.append(TestOutcome(name=name, passed=False, message="not run: the code failed to load"))
        elif name == current:
            outcomes.append(TestOutcome(name=name, passed=False, message=f"did not finish: {reason}"))
        else:
            outcomes.append(TestOutcome(name=name, passed=False, message=f"not run: {reason}"))
    return TestRun(outcomes=tuple(outcomes), load_error=load_error, result=result)


def _normalize_output(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _diff_message(expected: list[str], got: list[str]) -> str:
    import difflib

    first = next(
        (i for i, (e, g) in enumerate(zip(expected, got)) if e != g),
        min(len(expected), len(got)),
    )
    exp_line = repr(expected[first]) if first < len(expected) else "<end of output>"
    got_line = repr(got[first]) if first < len(got) else "<end of output>"
    head = (f"wrong output (expected {len(expected)} lines, got {len(got)}); "
            f"first difference at line {first + 1}: expected {exp_line[:200]}, got {got_line[:200]}")
    diff = list(difflib.unified_diff(expected, got, "expected", "got", n=1, lineterm=""))
    if len(diff) > 40:
        diff = diff[:40] + [f"... ({len(diff) - 40} more diff lines)"]
    return head + "\n" + "\n".join(diff)


def run_stdio_tests(
    code: str,
    cases: Sequence[Mapping[str, str]],
    *,
    limits: SandboxLimits = SandboxLimits(),
) -> TestRun:
    """Run ``code`` as a script once per case with ``case["input"]`` on stdin.

    A case passes iff the program exits with status 0, hits no limit, and its
    stdout equals ``case["output"]`` after ``rstrip()`` of every line and
    removal of trailing blank lines (``\\r\\n`` is treated as ``\\n``).  Each
    case is its own child with the full ``limits``; cases run concurrently on
    at most ``min(4, cpu_count)`` threads.  Outcomes are named ``case_<i>``.
    ``load_error`` is set when the code does not compile.  ``result`` is the
    :class:`SandboxResult` of the first failing case (of the last case when all
    pass) with ``duration`` replaced by the total wall time of the run.
    """
    from concurrent.futures import ThreadPoolExecutor

    cases = list(cases)
    started = time.monotonic()
    if not cases:
        empty = SandboxResult(returncode=None, stdout="", stderr="", duration=0.0, limit=None)
        return TestRun(outcomes=(), load_error=None, result=empty)

    def one(case: Mapping[str, str]):
        return run_script(code, stdin=str(case.get("input", "") or ""), files=None, limits=limits)

    workers = max(1, min(4, len(cases), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ifbench-sandbox") as pool:
        runs = list(pool.map(one, cases))

    load_error = None
    outcomes = []
    for i, (case, (res, records)) in enumerate(zip(cases, runs)):
        load_rec = next((r for r in records if r.get("kind") == "load"), None)
        if load_rec is not None and load_rec.get("error") and load_error is None:
            load_error = str(load_rec["error"])
        name = f"case_{i}"
        if res.limit is not None:
            msg = _death_reason(res, limits)
            if res.limit in ("memory", "cpu") and res.stderr:
                msg += "; stderr: " + _stderr_tail(res.stderr)
            outcomes.append(TestOutcome(name=name, passed=False, message=msg))
            continue
        if res.returncode != 0:
            if load_rec is not None and load_rec.get("error"):
                msg = f"the code does not compile: {load_rec['error']}"
            elif res.returncode is not None and res.returncode > 0:
                tail = _stderr_tail(res.stderr)
                msg = f"runtime error (exit code {res.returncode})" + (f":\n{tail}" if tail else "")
            else:
                msg = _death_reason(res, limits)
            outcomes.append(TestOutcome(name=name, passed=False, message=msg))
            continue
        expected = _normalize_output(str(case.get("output", "") or ""))
        got = _normalize_output(res.stdout)
        if expected == got:
            outcomes.append(TestOutcome(name=name, passed=True, message=""))
        else:
            outcomes.append(TestOutcome(name=name, passed=False, message=_diff_message(expected, got)))

    chosen = next((runs[i][0] for i, o in enumerate(outcomes) if not o.passed), runs[-1][0])
    result = replace(chosen, duration=time.monotonic() - started)
    return TestRun(outcomes=tuple(outcomes), load_error=load_error, result=result)
