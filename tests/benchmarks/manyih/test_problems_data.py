"""Sanity checks for the original MBPP-style problem set of the ManyIH coding subset.

``pytest_ifbench/benchmarks/manyih/data/problems.jsonl`` holds one problem per line
(``id``, ``text``, ``signature``, ``entry_point``, ``test_list``,
``reference_code``).  Style instructions are layered on top of these problems,
so every reference solution must pass its own asserts, and the asserts must be
strong enough to reject a do-nothing implementation.

Solutions are executed in a few batched subprocesses (never in this process),
each with a hard timeout.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

PROBLEMS_PATH = (
    Path(__file__).resolve().parents[3] / "pytest_ifbench" / "benchmarks" / "manyih" / "data" / "problems.jsonl"
)

MIN_PROBLEMS = 64
MIN_ASSERTS = 3
MIN_CODE_LINES = 5
MAX_CODE_LINES = 25
BATCHES = 4
SUBPROCESS_TIMEOUT_S = 10
PER_PROBLEM_LIMIT_S = 2.0

FIELDS = {"id", "text", "signature", "entry_point", "test_list", "reference_code"}

# Executed in a child interpreter: argv[1] = jobs JSON, argv[2] = results JSON.
# Each job is {"id", "code", "asserts"}; each result records the outcome of
# loading the code and of every assert, in order.
RUNNER = textwrap.dedent(
    """
    import json
    import signal
    import sys
    import time


    class ProblemTimeout(BaseException):
        pass


    def _on_alarm(signum, frame):
        raise ProblemTimeout()


    def _outcome(exc):
        if exc is None:
            return "pass"
        if isinstance(exc, AssertionError):
            return "fail"
        return "error: %s: %s" % (type(exc).__name__, exc)


    def run_job(job, limit):
        namespace = {"__name__": "__manyih_problem__"}
        record = {"id": job["id"], "load": "pass", "asserts": [], "elapsed": 0.0}
        started = time.perf_counter()
        if hasattr(signal, "setitimer"):
            signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            try:
                exec(compile(job["code"], "<%s>" % job["id"], "exec"), namespace)
            except ProblemTimeout:
                raise
            except BaseException as exc:
                record["load"] = _outcome(exc)
                return record
            for source in job["asserts"]:
                try:
                    exec(compile(source, "<%s assert>" % job["id"], "exec"), namespace)
                except ProblemTimeout:
                    raise
                except BaseException as exc:
                    record["asserts"].append(_outcome(exc))
                else:
                    record["asserts"].append("pass")
        except ProblemTimeout:
            record["load"] = "timeout after %.1fs" % limit
        finally:
            if hasattr(signal, "setitimer"):
                signal.setitimer(signal.ITIMER_REAL, 0)
            record["elapsed"] = time.perf_counter() - started
        return record


    def main():
        if hasattr(signal, "SIGALRM"):
            signal.signal(signal.SIGALRM, _on_alarm)
        with open(sys.argv[1], encoding="utf-8") as fh:
            jobs = json.load(fh)
        limit = float(sys.argv[3])
        results = [run_job(job, limit) for job in jobs]
        with open(sys.argv[2], "w", encoding="utf-8") as fh:
            json.dump(results, fh)


    main()
    """
)


def _load_problems() -> list[dict]:
    problems = []
    with PROBLEMS_PATH.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if line.strip():
                record = json.loads(line)
                assert isinstance(record, dict), f"line {number} is not an object"
                problems.append(record)
    return problems


PROBLEMS = _load_problems()
PROBLEM_IDS = [str(p.get("id")) for p in PROBLEMS]


def _entry_function(problem: dict) -> ast.FunctionDef:
    tree = ast.parse(problem["reference_code"])
    matches = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == problem["entry_point"]
    ]
    assert len(matches) == 1, f"{problem['id']}: entry point not defined exactly once"
    return matches[0]


def _wrong_code(entry_point: str) -> str:
    return f"def {entry_point}(*args, **kwargs):\n    return None\n"


def _run_jobs(jobs: list[dict], workdir: Path) -> dict[str, dict]:
    runner = workdir / "manyih_runner.py"
    runner.write_text(RUNNER, encoding="utf-8")
    size = -(-len(jobs) // BATCHES)
    results: dict[str, dict] = {}
    for batch_number, start in enumerate(range(0, len(jobs), size)):
        jobs_file = workdir / f"jobs_{batch_number}.json"
        results_file = workdir / f"results_{batch_number}.json"
        jobs_file.write_text(json.dumps(jobs[start : start + size]), encoding="utf-8")
        completed = subprocess.run(
            [
                sys.executable,
                str(runner),
                str(jobs_file),
                str(results_file),
                str(PER_PROBLEM_LIMIT_S),
            ],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=SUBPROCESS_TIMEOUT_S,
            check=False,
        )
        assert completed.returncode == 0, (
            f"runner batch {batch_number} exited with {completed.returncode}:\n"
            f"{completed.stderr[-4000:]}"
        )
        for record in json.loads(results_file.read_text(encoding="utf-8")):
            results[record["id"]] = record
    return results


@pytest.fixture(scope="module")
def reference_results(tmp_path_factory) -> dict[str, dict]:
    jobs = [
        {"id": p["id"], "code": p["reference_code"], "asserts": p["test_list"]}
        for p in PROBLEMS
    ]
    return _run_jobs(jobs, tmp_path_factory.mktemp("manyih_reference"))


@pytest.fixture(scope="module")
def wrong_results(tmp_path_factory) -> dict[str, dict]:
    jobs = [
        {
            "id": p["id"],
            "code": _wrong_code(p["entry_point"]),
            "asserts": p["test_list"],
        }
        for p in PROBLEMS
    ]
    return _run_jobs(jobs, tmp_path_factory.mktemp("manyih_wrong"))


# --------------------------------------------------------------------------
# schema
# --------------------------------------------------------------------------


def test_problem_count():
    assert len(PROBLEMS) >= MIN_PROBLEMS


def test_fields_and_types():
    for problem in PROBLEMS:
        assert set(problem) == FIELDS, problem.get("id")
        for key in ("id", "text", "signature", "entry_point", "reference_code"):
            assert isinstance(problem[key], str) and problem[key].strip(), (
                problem["id"],
                key,
            )
        assert isinstance(problem["test_list"], list), problem["id"]
        assert all(isinstance(t, str) for t in problem["test_list"]), problem["id"]


def test_ids_unique_and_well_formed():
    dupes = [i for i, n in Counter(PROBLEM_IDS).items() if n > 1]
    assert not dupes, dupes
    for problem_id in PROBLEM_IDS:
        assert re.fullmatch(r"mp_\d{3}", problem_id), problem_id


def test_entry_points_and_texts_unique():
    for key in ("entry_point", "text"):
        counts = Counter(p[key] for p in PROBLEMS)
        dupes = [value for value, n in counts.items() if n > 1]
        assert not dupes, (key, dupes)


def test_texts_are_one_line_task_statements():
    for problem in PROBLEMS:
        text = problem["text"]
        assert "\n" not in text and text == text.strip(), problem["id"]
        assert text.startswith("Write a") and text.endswith("."), problem["id"]


def test_entry_point_is_identifier():
    for problem in PROBLEMS:
        assert problem["entry_point"].isidentifier(), problem["id"]


def test_signature_matches_reference_def_line():
    for problem in PROBLEMS:
        function = _entry_function(problem)
        lines = problem["reference_code"].splitlines()
        assert lines[function.lineno - 1] == problem["signature"], problem["id"]
        parsed = ast.parse(problem["signature"] + "\n    pass\n").body
        assert len(parsed) == 1 and isinstance(parsed[0], ast.FunctionDef), problem[
            "id"
        ]
        assert parsed[0].name == problem["entry_point"], problem["id"]
        assert ast.dump(parsed[0].args) == ast.dump(function.args), problem["id"]


def test_asserts_are_single_assert_statements():
    for problem in PROBLEMS:
        tests = problem["test_list"]
        assert len(tests) >= MIN_ASSERTS, problem["id"]
        assert len(set(tests)) == len(tests), problem["id"]
        for source in tests:
            assert "\n" not in source, (problem["id"], source)
            body = ast.parse(source).body
            assert len(body) == 1 and isinstance(body[0], ast.Assert), (
                problem["id"],
                source,
            )
            called = {
                node.func.id
                for node in ast.walk(body[0])
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            }
            assert problem["entry_point"] in called, (problem["id"], source)


def test_reference_code_shape():
    stdlib = set(sys.stdlib_module_names)
    control = (ast.For, ast.While, ast.If, ast.IfExp, ast.comprehension)
    problems = []
    for problem in PROBLEMS:
        code = problem["reference_code"]
        lines = [line for line in code.splitlines() if line.strip()]
        if not MIN_CODE_LINES <= len(lines) <= MAX_CODE_LINES:
            problems.append((problem["id"], f"{len(lines)} non-blank lines"))
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            if not roots <= stdlib:
                problems.append((problem["id"], f"non-stdlib import {roots - stdlib}"))
        function = _entry_function(problem)
        nodes = list(ast.walk(function))
        if not any(
            isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) for n in nodes
        ):
            problems.append((problem["id"], "no local variable in entry point"))
        if not any(isinstance(n, control) for n in nodes):
            problems.append((problem["id"], "no loop or conditional in entry point"))
    assert not problems, problems


# --------------------------------------------------------------------------
# execution (batched subprocesses)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("problem", PROBLEMS, ids=PROBLEM_IDS)
def test_reference_solution_passes(problem, reference_results):
    record = reference_results[problem["id"]]
    assert record["load"] == "pass", record
    failures = [
        (source, outcome)
        for source, outcome in zip(problem["test_list"], record["asserts"])
        if outcome != "pass"
    ]
    assert not failures, failures
    assert len(record["asserts"]) == len(problem["test_list"])


@pytest.mark.parametrize("problem", PROBLEMS, ids=PROBLEM_IDS)
def test_wrong_implementation_fails(problem, wrong_results):
    record = wrong_results[problem["id"]]
    assert record["load"] == "pass", record
    assert len(record["asserts"]) == len(problem["test_list"])
    assert any(outcome != "pass" for outcome in record["asserts"]), (
        f"{problem['id']}: every assert passes for a function returning None"
    )
