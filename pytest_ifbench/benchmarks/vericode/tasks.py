"""Tasks for Vibe Checker suites: the bundled set and importers for downloaded benchmark files.

Every source becomes a list of :class:`Task`: the query the model receives
(for LiveVibeBench-style tasks wrapped in the evaluation prompt of the task
type), the functional tests, and whatever reference code exists (used only to
decide which instructions are relevant).

Input formats (JSON Lines, one task per line; fields not listed are ignored):

* ``builtin`` -- ``pytest_ifbench/benchmarks/vericode/data/tasks.jsonl``: ``id``, ``kind``
  (realworld | stdio | functional), ``prompt``, ``entry_point``, ``tests``
  (assert snippets, or ``{input, output}`` cases for stdio),
  ``reference_solution``, ``libraries``.
* ``bigcodebench`` -- ``task_id`` ("BigCodeBench/12"), ``instruct_prompt`` (the
  query), ``test`` (a unittest module defining ``TestCases``), optional
  ``entry_point`` (default task_func), ``code_prompt`` + ``canonical_solution``
  (reference), ``libs`` (a list or its Python literal).
* ``livecodebench`` -- ``question_id``, ``question_content``,
  ``public_test_cases`` and ``private_test_cases`` (JSON lists of ``{input,
  output, testtype}`` with testtype stdin | functional; the official
  base64/zlib/pickle encoding of private tests is read with a restricted
  unpickler that only builds strings, lists and dicts), optional
  ``starter_code`` (its signature becomes a hint for ``solve()``). Functional tasks
  are asked for ``solve()``; each test calls ``solve(*args)`` with the input
  lines parsed as JSON and compares the result with the JSON output.
* ``mbpp`` -- ``task_id``, ``text`` (or ``prompt``), ``test_list`` (assert
  strings), optional ``test_setup_code`` and ``code`` (reference).
"""

from __future__ import annotations

import ast
import base64
import io
import json
import pickle
import re
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_ifbench import JsonlError, iter_jsonl

SOURCES = ("builtin", "bigcodebench", "livecodebench", "mbpp")
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_.-]+")


class TaskFormatError(ValueError):
    """An input file is not in the expected format; the message names the file and line."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    id: str
    #: realworld (BigVibeBench-like), stdio or functional (LiveVibeBench-like).
    kind: str
    #: bigvibe | livevibe | mbpp: decides the system prompt and the metric group.
    testbed: str
    #: The user query, already wrapped in the task type's evaluation prompt.
    query: str
    entry_point: str | None = None
    tests: tuple[str, ...] = ()
    cases: tuple[Mapping[str, str], ...] = ()
    setup: str = ""
    reference: str = ""
    libraries: tuple[str, ...] = ()
    source_id: str = ""
    #: The tests patch the built-in open(): pathlib rewrites would break them (paper, Fig. 11 note).
    mocks_open: bool = False

    def functional_check(self) -> dict[str, Any]:
        """The suite check that runs the task's tests against the extracted code."""
        if self.kind == "stdio":
            params: dict[str, Any] = {"cases": [dict(c) for c in self.cases]}
            verifier = "ifbench.stdio_tests"
        else:
            params = {"tests": list(self.tests)}
            if self.setup:
                params["setup"] = self.setup
            verifier = "ifbench.unit_tests"
        return {"id": "functional", "verifier": verifier, "params": params,
                "description": "The task's unit tests pass (functional correctness).",
                "metadata": {"role": "functional"}}


# --------------------------------------------------------------------------- evaluation prompts (Fig. 14)

STDIO_PROMPT = """\
Your task: write an executable Python function that solves the problem described below.

Requirements:
- The function reads all the input it needs from standard input (stdin).
- It prints the final answer to standard output (stdout).
- Call the function right after its definition.

Evaluation: we will run your code and compare its standard output with the expected output.

Problem:
{problem}"""

FUNCTIONAL_PROMPT = """\
Your task: implement a function that solves the problem described below.

Requirements:
- The main function takes the inputs as arguments and returns the result; it must be named `solve()`.
- It must NOT read standard input (no `input()`, no `sys.stdin`): every piece of data is passed in as an \
argument.
- Helper functions are allowed.
- The code must contain only definitions: do not call `solve()` yourself.

Evaluation: we will first execute your code to load its definitions, then call your `solve()` function \
directly on several test cases.

Problem:
{problem}"""


def safe_id(text: str) -> str:
    cleaned = _UNSAFE_ID.sub("_", str(text)).strip("_.-")
    return cleaned or "task"


# --------------------------------------------------------------------------- readers


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise TaskFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with handle:
        try:
            yield from iter_jsonl(handle)
        except JsonlError as exc:
            raise TaskFormatError(f"{path}:{exc.line}: {exc.reason}") from None


def _need(record: Mapping[str, Any], key: str, where: str, kind: type | tuple[type, ...] = str) -> Any:
    if key not in record or record[key] is None:
        raise TaskFormatError(f"{where}: missing field {key!r}")
    if not isinstance(record[key], kind):
        raise TaskFormatError(f"{where}: field {key!r} has the wrong type ({type(record[key]).__name__})")
    return record[key]


def detect_source(path: Path) -> str:
    """Guess the format of ``path`` from the fields of its first record."""
    for _, record in _records(path):
        if "instruct_prompt" in record:
            return "bigcodebench"
        if "question_content" in record:
            return "livecodebench"
        if "test_list" in record:
            return "mbpp"
        if "reference_solution" in record and "kind" in record:
            return "builtin"
        raise TaskFormatError(f"{path}: cannot tell the format from the fields {sorted(record)}; pass --source")
    raise TaskFormatError(f"{path}: no tasks")


def load_tasks(source: str, path: Path | None = None) -> list[Task]:
    if source == "builtin":
        if path is None:
            path = Path(str(resources.files(__package__) / "data" / "tasks.jsonl"))
        return [_builtin(r, f"{path}:{n}") for n, r in _records(path)]
    if path is None:
        raise TaskFormatError(f"--source {source} needs --input FILE (the downloaded JSONL file)")
    reader = {"bigcodebench": _bigcodebench, "livecodebench": _livecodebench, "mbpp": _mbpp}[source]
    tasks = [reader(r, f"{path}:{n}") for n, r in _records(path)]
    ids = [t.id for t in tasks]
    duplicate = next((i for i in ids if ids.count(i) > 1), None)
    if duplicate:
        raise TaskFormatError(f"{path}: duplicate task id {duplicate!r}")
    return tasks


def _builtin(record: Mapping[str, Any], where: str) -> Task:
    kind = _need(record, "kind", where)
    prompt = _need(record, "prompt", where)
    tests = _need(record, "tests", where, list)
    common = {"id": safe_id(_need(record, "id", where)), "kind": kind, "source_id": str(record["id"]),
              "reference": str(record.get("reference_solution") or ""),
              "libraries": tuple(record.get("libraries") or ()), "entry_point": record.get("entry_point")}
    if kind == "realworld":
        return Task(testbed="bigvibe", query=prompt, tests=tuple(tests), **common)
    if kind == "functional":
        return Task(testbed="livevibe", query=FUNCTIONAL_PROMPT.format(problem=prompt), tests=tuple(tests), **common)
    if kind == "stdio":
        return Task(testbed="livevibe", query=STDIO_PROMPT.format(problem=prompt),
                    cases=tuple({"input": c["input"], "output": c["output"]} for c in tests), **common)
    raise TaskFormatError(f"{where}: unknown kind {kind!r} (realworld, stdio or functional)")


# --------------------------------------------------------------------------- BigCodeBench

_UNITTEST_RUNNER = '''
import io as _ifbench_io
import unittest as _ifbench_unittest
_ifbench_cases = [v for v in list(globals().values())
                  if isinstance(v, type) and issubclass(v, _ifbench_unittest.TestCase)
                  and v is not _ifbench_unittest.TestCase]
_ifbench_suite = _ifbench_unittest.TestSuite(
    _ifbench_unittest.defaultTestLoader.loadTestsFromTestCase(c) for c in _ifbench_cases)
_ifbench_result = _ifbench_unittest.TextTestRunner(stream=_ifbench_io.StringIO(), verbosity=0).run(_ifbench_suite)
_ifbench_problems = [t.id().rsplit(".", 1)[-1] + ": " + (tb.strip().splitlines() or [""])[-1]
                     for t, tb in _ifbench_result.failures + _ifbench_result.errors]
assert _ifbench_result.testsRun > 0, "no unittest test cases were found"
assert _ifbench_result.wasSuccessful(), "; ".join(_ifbench_problems)[:1500]
'''


def _libs(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise TaskFormatError(f"{where}: field 'libs' is not a list literal") from None
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise TaskFormatError(f"{where}: field 'libs' must be a list of module names")
    return tuple(value)


def _bigcodebench(record: Mapping[str, Any], where: str) -> Task:
    task_id = str(_need(record, "task_id", where))
    test = _need(record, "test", where)
    number = task_id.rsplit("/", 1)[-1]
    return Task(
        id=safe_id(f"bcb_{number}"), kind="realworld", testbed="bigvibe", source_id=task_id,
        query=_need(record, "instruct_prompt", where), entry_point=str(record.get("entry_point") or "task_func"),
        tests=(test.rstrip("\n") + "\n" + _UNITTEST_RUNNER,),
        reference=str(record.get("code_prompt") or "") + str(record.get("canonical_solution") or ""),
        libraries=_libs(record.get("libs"), where),
        mocks_open="builtins.open" in test or "mock_open" in test,
    )


# --------------------------------------------------------------------------- LiveCodeBench


class _StringsOnly(pickle.Unpickler):
    """Unpickles plain data only: any class or function reference is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def _test_cases(value: Any, where: str, key: str) -> list[dict[str, Any]]:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            try:
                raw = zlib.decompress(base64.b64decode(value))
                value = json.loads(_StringsOnly(io.BytesIO(raw)).load())
            except Exception as exc:
                raise TaskFormatError(f"{where}: field {key!r} is neither JSON nor the official "
                                      f"base64/zlib/pickle encoding ({type(exc).__name__})") from None
    if not isinstance(value, list) or not all(isinstance(c, dict) and "input" in c and "output" in c for c in value):
        raise TaskFormatError(f"{where}: field {key!r} must be a list of {{input, output, testtype}} objects")
    return value


def _signature_hint(starter: str) -> str:
    match = re.search(r"def\s+\w+\s*\(\s*self\s*,?\s*(.*?)\)\s*(->\s*[^:]+)?:", starter or "", re.DOTALL)
    if not match:
        return ""
    args = " ".join(match.group(1).split())
    returns = f" {match.group(2).strip()}" if match.group(2) else ""
    return f"\n\nSignature: def solve({args}){returns}:"


def _livecodebench(record: Mapping[str, Any], where: str) -> Task:
    question_id = str(_need(record, "question_id", where, (str, int)))
    content = _need(record, "question_content", where)
    cases = _test_cases(record.get("public_test_cases"), where, "public_test_cases") + _test_cases(
        record.get("private_test_cases"), where, "private_test_cases")
    if not cases:
        raise TaskFormatError(f"{where}: no test cases")
    functional = any(c.get("testtype") == "functional" for c in cases)
    common = {"id": safe_id(f"lcb_{question_id}"), "testbed": "livevibe", "source_id": question_id}
    if not functional:
        return Task(kind="stdio", query=STDIO_PROMPT.format(problem=content),
                    cases=tuple({"input": str(c["input"]), "output": str(c["output"])} for c in cases), **common)
    tests = tuple(
        "import json as _json\n"
        f"_args = [_json.loads(_line) for _line in {str(c['input'])!r}.splitlines() if _line.strip()]\n"
        f"assert solve(*_args) == _json.loads({str(c['output'])!r})\n"
        for c in cases
    )
    return Task(kind="functional", entry_point="solve",
                query=FUNCTIONAL_PROMPT.format(
                    problem=content + _signature_hint(str(record.get("starter_code") or ""))),
                tests=tests, **common)


# --------------------------------------------------------------------------- MBPP

_CALLED = re.compile(r"assert\s+(?:not\s+)?\(?\s*(?:\w+\s*\(\s*)*?([A-Za-z_]\w*)\s*\(")


def _mbpp(record: Mapping[str, Any], where: str) -> Task:
    task_id = str(_need(record, "task_id", where, (str, int)))
    text = record.get("text") or record.get("prompt")
    if not isinstance(text, str) or not text.strip():
        raise TaskFormatError(f"{where}: missing field 'text' (or 'prompt')")
    tests = _need(record, "test_list", where, list)
    if not tests or not all(isinstance(t, str) for t in tests):
        raise TaskFormatError(f"{where}: field 'test_list' must be a non-empty list of assert strings")
    reference = str(record.get("code") or "")
    entry = None
    try:
        entry = next((n.name for n in ast.parse(reference).body if isinstance(n, ast.FunctionDef)), None)
    except SyntaxError:
        pass
    if entry is None:
        match = _CALLED.search(tests[0])
        entry = match.group(1) if match else None
    query = f"{text.strip()}\n\nYour code should pass these tests:\n\n" + "\n".join(tests)
    return Task(id=safe_id(f"mbpp_{task_id}"), kind="functional", testbed="mbpp", source_id=task_id, query=query,
                entry_point=entry, tests=tuple(tests), setup=str(record.get("test_setup_code") or ""),
                reference=reference)
