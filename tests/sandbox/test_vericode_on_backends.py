"""The shipped VeriCode quick suite against the stub server gives the same verdicts on docker as on
bubblewrap (``--ifbench-sandbox``): every check of every instance, unit tests and stdio tests included.

The stub answers each task's first turn with its reference solution, a program that does not load, or
one that never ends (by task), and every later turn with code that exits while loading -- so the run has
passing and failing functional checks of each kind."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench.benchmarks.vericode import generate as gen
from pytest_ifbench.sandbox._code_runs import close_all
from pytest_ifbench.testing import Reply
from tests._support import stub_args
from tests.sandbox.backend_fixtures import docker_host  # noqa: F401 -- fixture

QUICK = Path(__file__).parents[2] / "suites" / "vericode" / "quick.yaml"
TASKS = [json.loads(line) for line in (Path(gen.__file__).parent / "data" / "tasks.jsonl").open()]
DOES_NOT_LOAD = "raise SystemExit(3)\n"
NEVER_ENDS = "while True:\n    pass\n"


def scripted(body: dict[str, Any]) -> Reply:
    messages = body["messages"]
    if any(m["role"] == "assistant" for m in messages):
        return Reply(content=f"Changed.\n\n```python\n{DOES_NOT_LOAD}```\n")
    query = next(m["content"] for m in messages if m["role"] == "user")
    task = next(t for t in TASKS if t["prompt"][:120] in query)
    code = (task["reference_solution"], DOES_NOT_LOAD, NEVER_ENDS)[zlib.crc32(task["id"].encode()) % 3]
    return Reply(content=f"Here it is.\n\n```python\n{code}```\n")


def _verdicts(pytester: pytest.Pytester, stub_env, backend: str) -> dict[str, dict[str, tuple]]:
    results = pytester.path / f"results-{backend}.json"
    outcome = pytester.runpytest("suites", *stub_args(stub_env), f"--ifbench-sandbox={backend}",
                                 "--ifbench-sandbox-timeout=3", f"--ifbench-results={results}")
    assert outcome.ret in (0, 1), outcome.stdout.str()[-3000:]
    doc = json.loads(results.read_text())
    return {r["instance"]: {c["id"]: (c["passed"], c.get("error")) for c in r["checks"]} for r in doc["instances"]}


def test_the_vericode_quick_suite_gives_the_same_verdicts_on_docker(pytester, stub_env, docker_host,  # noqa: F811
                                                                   monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", docker_host)
    (pytester.path / "suites" / "vericode").mkdir(parents=True)
    shutil.copy(QUICK, pytester.path / "suites" / "vericode" / "quick.yaml")
    stub_env.default = scripted
    on_bubblewrap = _verdicts(pytester, stub_env, "bubblewrap")
    functional = [checks["functional"][0] for checks in on_bubblewrap.values() if "functional" in checks]
    assert len(on_bubblewrap) == 10 and True in functional and False in functional, on_bubblewrap
    try:
        assert _verdicts(pytester, stub_env, "docker") == on_bubblewrap
        import docker

        ran_in = docker.from_env().containers.list(filters={"label": "pytest-ifbench.sandbox"})
        assert ran_in, "the code did not run in containers"  # the pooled runs are still open
    finally:
        close_all()
