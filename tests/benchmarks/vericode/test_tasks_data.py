"""Integrity checks for the bundled VeriCode / Vibe Checker task set.

``pytest_ifbench/benchmarks/vericode/data/tasks.jsonl`` holds original Python tasks in the
style of BigVibeBench (``realworld``: BigCodeBench-like ``task_func`` problems)
and LiveVibeBench (``stdio`` programs and ``functional`` ``solve()`` problems).

For every task this module checks the schema, runs the reference solution
against all of its tests in a fresh subprocess (one subprocess per task, cwd
in a fresh temporary directory), and checks that a deliberately wrong solution
fails at least one test, so the tests are known to be able to fail.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

DATA_FILE = Path(__file__).resolve().parents[3] / "pytest_ifbench" / "benchmarks" / "vericode" / "data" / "tasks.jsonl"

REQUIRED_KEYS = {"id", "kind", "title", "prompt", "entry_point", "tests", "reference_solution", "libraries"}
MIN_COUNTS = {"realworld": 32, "stdio": 16, "functional": 16}
ID_PATTERN = {
    "realworld": re.compile(r"rw_\d{3}"),
    "stdio": re.compile(r"st_\d{3}"),
    "functional": re.compile(r"fn_\d{3}"),
}
ENTRY_POINT = {"realworld": "task_func", "functional": "solve", "stdio": None}
MIN_TESTS = 3
SUBPROCESS_TIMEOUT_S = 10
PER_TEST_TIMEOUT_S = 5


def _load_tasks() -> list[dict]:
    with DATA_FILE.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


TASKS = _load_tasks()
TASK_IDS = [str(task.get("id")) for task in TASKS]


# Executed in a child interpreter: argv = [payload.json, results.json]; the cwd
# is an empty scratch directory and every test gets its own subdirectory.
RUNNER = r'''
import contextlib
import io
import json
import os
import signal
import sys
import traceback


class _TestTimeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _TestTimeout("test exceeded the per-test time limit")


def _normalize(text):
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _run_snippet(code, test, index):
    namespace = {"__name__": "__candidate__"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(code, namespace)
        exec(compile(test, "<test %d>" % index, "exec"), namespace)
    return True, ""


def _run_stdio(code, case):
    stdin = io.TextIOWrapper(io.BytesIO(case["input"].encode("utf-8")), encoding="utf-8")
    raw = io.BytesIO()
    stdout = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    saved = sys.stdin, sys.stdout
    sys.stdin, sys.stdout = stdin, stdout
    try:
        try:
            exec(code, {"__name__": "__main__"})
        except SystemExit as exc:
            if exc.code not in (None, 0):
                return False, "exited with status %r" % (exc.code,)
        stdout.flush()
        got = raw.getvalue().decode("utf-8", "replace")
    finally:
        sys.stdin, sys.stdout = saved
    if _normalize(got) == _normalize(case["output"]):
        return True, ""
    return False, "expected %r, got %r" % (case["output"][:300], got[:300])


def main():
    payload_path, result_path = sys.argv[1], sys.argv[2]
    with open(payload_path, encoding="utf-8") as fh:
        payload = json.load(fh)
    base = os.getcwd()
    results = []
    signal.signal(signal.SIGALRM, _on_alarm)
    try:
        code = compile(payload["code"], "<candidate>", "exec")
    except SyntaxError:
        code = None
        error = traceback.format_exc(limit=1)
    for index, test in enumerate(payload["tests"]):
        workdir = os.path.join(base, "test_%d" % index)
        os.makedirs(workdir)
        os.chdir(workdir)
        signal.alarm(payload["per_test_timeout"])
        try:
            if code is None:
                ok, detail = False, error
            elif payload["kind"] == "stdio":
                ok, detail = _run_stdio(code, test)
            else:
                ok, detail = _run_snippet(code, test, index)
        except BaseException:
            ok, detail = False, traceback.format_exc(limit=-3)[-1500:]
        finally:
            signal.alarm(0)
            os.chdir(base)
        results.append({"ok": ok, "detail": detail})
    with open(result_path, "w", encoding="utf-8") as fh:
        json.dump(results, fh)


main()
'''


def _run_task(task: dict, code: str, tmp_path: Path) -> list[dict]:
    """Run ``code`` against every test of ``task`` in one child interpreter."""
    control = tmp_path / "control"
    work = tmp_path / "work"
    control.mkdir()
    work.mkdir()
    runner = control / "runner.py"
    runner.write_text(RUNNER, encoding="utf-8")
    payload = control / "payload.json"
    payload.write_text(
        json.dumps(
            {
                "kind": task["kind"],
                "code": code,
                "tests": task["tests"],
                "per_test_timeout": PER_TEST_TIMEOUT_S,
            }
        ),
        encoding="utf-8",
    )
    results_file = control / "results.json"
    try:
        proc = subprocess.run(
            [sys.executable, str(runner), str(payload), str(results_file)],
            cwd=work,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=SUBPROCESS_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{task['id']}: test run exceeded {SUBPROCESS_TIMEOUT_S}s")
    if not results_file.exists():
        pytest.fail(f"{task['id']}: runner crashed (rc={proc.returncode}):\n{proc.stderr[-2000:]}")
    results = json.loads(results_file.read_text(encoding="utf-8"))
    assert len(results) == len(task["tests"])
    return results


def _wrong_solution(task: dict) -> str:
    if task["kind"] == "stdio":
        return "import sys\nsys.stdin.read()\n"
    return f"def {task['entry_point']}(*args, **kwargs):\n    return None\n"


def _imported_modules(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_dataset_shape():
    assert TASKS, f"no tasks in {DATA_FILE}"
    ids = [task.get("id") for task in TASKS]
    duplicates = sorted(i for i, n in Counter(ids).items() if n > 1)
    assert not duplicates, f"duplicate ids: {duplicates}"
    counts = Counter(task.get("kind") for task in TASKS)
    assert set(counts) <= set(MIN_COUNTS), f"unknown kinds: {set(counts) - set(MIN_COUNTS)}"
    for kind, minimum in MIN_COUNTS.items():
        assert counts[kind] >= minimum, f"{kind}: {counts[kind]} tasks, expected at least {minimum}"


@pytest.mark.parametrize("task", TASKS, ids=TASK_IDS)
def test_task_schema(task):
    missing = REQUIRED_KEYS - set(task)
    assert not missing, f"missing keys: {sorted(missing)}"
    kind = task["kind"]
    assert kind in MIN_COUNTS
    assert ID_PATTERN[kind].fullmatch(task["id"]), f"id {task['id']!r} does not match kind {kind!r}"
    assert isinstance(task["title"], str) and task["title"].strip()
    assert isinstance(task["prompt"], str) and len(task["prompt"]) >= 80
    assert task["entry_point"] == ENTRY_POINT[kind]

    tests = task["tests"]
    assert isinstance(tests, list) and len(tests) >= MIN_TESTS
    if kind == "stdio":
        for case in tests:
            assert isinstance(case, dict) and set(case) == {"input", "output"}
            assert isinstance(case["input"], str) and isinstance(case["output"], str)
            assert case["output"].strip(), "expected output must not be empty"
        assert "Input" in task["prompt"] and "Output" in task["prompt"]
        assert "Example" in task["prompt"]
    else:
        for snippet in tests:
            assert isinstance(snippet, str) and "assert" in snippet
            snippet_tree = ast.parse(snippet)
            foreign = _imported_modules(snippet_tree) - set(sys.stdlib_module_names)
            assert not foreign, f"test imports non-stdlib modules: {foreign}"
        assert f"{task['entry_point']}(" in task["prompt"]

    source = task["reference_solution"]
    assert isinstance(source, str)
    tree = ast.parse(source)
    top_level_functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    if task["entry_point"] is not None:
        assert task["entry_point"] in top_level_functions
    if kind == "functional":
        # LiveVibeBench functional tasks: definitions only, no call of solve(), no stdin.
        for node in tree.body:
            assert not isinstance(node, ast.Expr), "functional reference must not run top-level code"
        assert "input(" not in source and "sys.stdin" not in source

    libraries = task["libraries"]
    assert isinstance(libraries, list) and all(isinstance(name, str) for name in libraries)
    assert len(set(libraries)) == len(libraries)
    assert set(libraries) <= set(sys.stdlib_module_names), "only standard-library modules are allowed"
    assert _imported_modules(tree) == set(libraries), "libraries must list exactly the modules the reference imports"


@pytest.mark.parametrize("task", TASKS, ids=TASK_IDS)
def test_reference_solution_passes(task, tmp_path):
    results = _run_task(task, task["reference_solution"], tmp_path)
    failures = [f"test {i}: {r['detail']}" for i, r in enumerate(results) if not r["ok"]]
    assert not failures, f"{task['id']} reference fails:\n" + "\n".join(failures)


@pytest.mark.parametrize("task", TASKS, ids=TASK_IDS)
def test_wrong_solution_fails(task, tmp_path):
    results = _run_task(task, _wrong_solution(task), tmp_path)
    assert not all(r["ok"] for r in results), f"{task['id']}: a do-nothing solution passes every test"
