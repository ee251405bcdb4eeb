"""Plugin behaviour users rely on: clear collection errors, resume, start-up checks."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from pytest_ifbench.models.cache import ResponseCache
from pytest_ifbench.testing import Reply
from tests._support import FAKE_KEY, bulk_suite, stub_args, write_suite


def test_malformed_suite_names_file_instance_and_field(pytester):
    write_suite(pytester.path, "suites/bad.yaml", """
        ifbench: 1
        benchmark: demo
        instances:
          - id: abc
            prompt: hi
            checks:
              - {id: a, verifier: ifbench.word_count}
              - {id: b, verifier: ifbench.word_count}
              - {id: c, verifier: ifbench.word_count, params: {max: eighty}}
    """)
    result = pytester.runpytest("suites", "--model=openai/x")
    result.stdout.fnmatch_lines([
        "*ERROR collecting suites/bad.yaml*",
        "suites/bad.yaml: instance 'abc': checks[[]2[]].params.max: expected int, got 'eighty'",
    ])
    assert result.ret == 2


def test_other_yaml_files_are_not_collected(pytester):
    write_suite(pytester.path, "suites/config.yaml", "name: not a suite\nitems: [1, 2]\n")
    result = pytester.runpytest("suites", "--model=openai/x")
    assert result.ret == 5  # no tests collected


def test_collect_only_makes_no_model_calls(pytester, stub_env):
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(3))
    result = pytester.runpytest("suites", *stub_args(stub_env), "--collect-only", "-q")
    result.stdout.fnmatch_lines(["suites/bulk.yaml::q000", "suites/bulk.yaml::q001", "suites/bulk.yaml::q002"])
    assert stub_env.calls == 0


def test_a_suites_instances_share_one_fixture_closure_and_still_get_every_fixture(pytester, stub_env):
    """pytest computes an item's fixture closure from its function and file; every instance of a suite has
    the same, so they share one (as a parametrized function's items do): an autouse fixture of a conftest
    (and of a deeper one, for its directory only), the ``usefixtures`` option and a fixture asked for by
    name reach every instance they reach without sharing."""
    stub_env.add_rule("", Reply(content="hello there"))
    write_suite(pytester.path, "suites/a.yaml", bulk_suite(3))
    write_suite(pytester.path, "suites/deeper/b.yaml", bulk_suite(2))
    pytester.makeconftest("""
import pytest

seen = []

@pytest.fixture(autouse=True)
def everywhere(request):
    seen.append(("auto", request.node.name))

@pytest.fixture
def marked(request):
    seen.append(("marked", request.node.name))

@pytest.fixture
def asked(request):
    return request.node.name

@pytest.fixture
def appended(request):
    seen.append(("appended", request.node.name))

def pytest_collection_modifyitems(items):
    for item in items:  # a common conftest idiom, without a guard
        item.fixturenames.append("appended")

def pytest_ifbench_instance_verified(item, record):
    seen.append(("asked", item._request.getfixturevalue("asked")))
    seen.append(("names", item.fixturenames.count("appended")))

def pytest_unconfigure(config):
    import json, pathlib
    pathlib.Path("seen.json").write_text(json.dumps(seen))
""")
    (pytester.path / "suites" / "deeper" / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture(autouse=True)\ndef deeper(request):\n"
        "    request.config._deeper = [*getattr(request.config, '_deeper', []), request.node.name]\n\n"
        "def pytest_unconfigure(config):\n"
        "    import pathlib\n    pathlib.Path('deeper.txt').write_text(' '.join(getattr(config, '_deeper', [])))\n")
    result = pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-results=", "--ifbench-no-cache",
                                "-o", "usefixtures=marked")
    result.assert_outcomes(passed=5)
    seen = json.loads((pytester.path / "seen.json").read_text())
    names = ["q000", "q001", "q002", "q000", "q001"]
    assert [n for kind, n in seen if kind == "auto"] == names
    assert [n for kind, n in seen if kind == "asked"] == names
    assert [n for kind, n in seen if kind == "marked"] == names
    assert [n for kind, n in seen if kind == "appended"] == names
    assert [n for kind, n in seen if kind == "names"] == [1] * 5  # each item's own list
    assert (pytester.path / "deeper.txt").read_text() == "q000 q001"

    items = pytester.inline_run("suites", *stub_args(stub_env), "--collect-only").getcalls(
        "pytest_collection_finish")[0].session.items
    by_suite = {}
    for item in items:
        by_suite.setdefault(item.parent.name, set()).add(id(item._fixtureinfo))
    assert {name: len(infos) for name, infos in by_suite.items()} == {"a.yaml": 1, "b.yaml": 1}


def test_markers_are_listed(pytester):
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(1).replace(
        "    prompt: question 0", "    prompt: question 0\n    category: Skill.md\n    scaffold: Claude Code"))
    result = pytester.runpytest("suites", "--markers")
    result.stdout.fnmatch_lines(["*@pytest.mark.bulk:*", "*@pytest.mark.category_skill_md:*",
                                 "*@pytest.mark.scaffold_claude_code:*"])


def test_missing_local_extra_fails_at_start_with_instructions(pytester, monkeypatch):
    import pytest_ifbench.models.local as local

    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(1))
    monkeypatch.setattr(local, "local_model_problem", lambda: "llama_cpp is not installed; " + local.INSTALL_HINT)
    result = pytester.runpytest("suites")
    result.stderr.fnmatch_lines([
        "*embedded model is needed (no --model/--judge-model given) but llama_cpp is not installed"
        "*pip install*[[]local[]]*--model=*"
    ])
    assert result.ret == 4


def test_resume_after_killed_run_pays_only_for_the_rest(pytester, stub_env):
    """The run is killed with six replies cached and two calls in flight: the stub holds every call after
    the sixth, so what the killed run paid is known however loaded the machine (it flaked when a late
    request was counted after the kill, or the run finished before it)."""
    held = threading.Event()
    served = itertools.count()

    def after_the_sixth_wait(body: dict) -> Reply:
        if next(served) >= 6:
            held.wait(60)
        return Reply(content="an answer")

    stub_env.add_rule("", after_the_sixth_wait)
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(24))
    # A real process: the test kills it with SIGKILL mid-run.
    args = [sys.executable, "-m", "pytest", "suites", *stub_args(stub_env, "--ifbench-concurrency=2")]
    proc = subprocess.Popen(args, cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    cache = pytester.path / ".ifbench-cache"

    def entries() -> int:  # complete entries only: a kill may leave a half-written hidden .<entry>.json.*.tmp
        return len([p for p in cache.rglob("*.json") if not p.name.startswith(".")])

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (entries() < 6 or stub_env.in_flight < 2):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    held.set()
    assert stub_env.wait_idle()
    assert (entries(), stub_env.calls) == (6, 8)
    assert len(ResponseCache(cache)) == 6  # leftover temp files are not counted as entries
    result = pytester.runpytest("suites", *stub_args(stub_env, "--ifbench-concurrency=8"))
    result.assert_outcomes(passed=24)
    assert stub_env.calls - 8 == 24 - 6


def test_no_key_in_any_written_file(pytester, stub_env):
    stub_env.add_rule("", Reply(content=f"I will repeat what I saw: {FAKE_KEY}"))
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(2))
    pytester.runpytest("suites", *stub_args(stub_env), "--junitxml=junit.xml",
                       "--alluredir=allure-results")
    written = [p for p in pytester.path.rglob("*") if p.is_file() and p.suffix != ".yaml"]
    assert any(p.name == "ifbench-results.json" for p in written)
    for path in written:
        assert FAKE_KEY not in path.read_text(errors="replace"), path


def test_score_pre_recorded_responses(pytester, stub_env):
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(3))
    (pytester.path / "r.jsonl").write_text(
        json.dumps({"id": "q000", "response": "an answer"}) + "\n" + json.dumps({"id": "q001", "response": ""}) + "\n")
    result = pytester.runpytest("suites", "--ifbench-responses=r.jsonl")
    result.assert_outcomes(passed=1, failed=2, errors=1)
    result.stdout.fnmatch_lines(["*no recorded response for instance 'q002'*"])
    assert stub_env.calls == 0


def test_score_mode_reports_unmatched_ids_and_bad_files(pytester):
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(1))
    (pytester.path / "r.jsonl").write_text(json.dumps({"id": "q000", "response": "x"}) + "\n"
                                           + json.dumps({"id": "q0OO", "response": "typo"}) + "\n")
    result = pytester.runpytest("suites", "--ifbench-responses=r.jsonl")
    result.stdout.fnmatch_lines(["*model: (pre-recorded responses)*",
                                 "*1 recorded response id(s) matched no selected instance: q0OO*"])
    assert json.loads((pytester.path / "ifbench-results.json").read_text())["model"] == "recorded-responses"
    (pytester.path / "bad.jsonl").write_text("{not json\n")
    result = pytester.runpytest("suites", "--ifbench-responses=bad.jsonl")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--ifbench-responses: *bad.jsonl:1: not JSON*"])


def test_full_instances_are_left_out_of_a_plain_run(pytester, stub_env):
    suite = bulk_suite(3).replace("  - id: q002\n", "  - id: q002\n    markers: [full]\n")
    write_suite(pytester.path, "suites/bulk.yaml", suite)
    result = pytester.runpytest("suites", *stub_args(stub_env))
    result.assert_outcomes(passed=2, deselected=1)
    result = pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-full")
    result.assert_outcomes(passed=3)
    result = pytester.runpytest("suites", *stub_args(stub_env), "-m", "bulk and full")
    result.assert_outcomes(passed=1, deselected=2)
    result = pytester.runpytest("suites/bulk.yaml::q002", *stub_args(stub_env))
    result.assert_outcomes(passed=1)
    result = pytester.runpytest("suites/bulk.yaml", *stub_args(stub_env))  # naming the file runs it all
    result.assert_outcomes(passed=3)
    result = pytester.runpytest("suites", *stub_args(stub_env), "-m", "bulk")
    result.assert_outcomes(passed=2, deselected=1)


@pytest.mark.parametrize("usage", [{"prompt_tokens": "12", "completion_tokens": "x"},
                                   {"prompt_tokens": None, "completion_tokens": True}], ids=["strings", "null-bool"])
def test_token_counts_that_are_not_numbers_count_as_none_and_never_crash_the_record(pytester, stub_env, usage):
    """They were cached as sent, and adding them up crashed every run's record of the instance."""
    stub_env.default = Reply(raw_body=json.dumps({"choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "an answer"}}], "usage": usage}))
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(1))
    for _ in range(2):  # the second from the cache
        pytester.runpytest("suites", *stub_args(stub_env)).assert_outcomes(passed=1)
        (record,) = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
        assert record["status"] == "passed" and record["turns"][0]["response"]["prompt_tokens"] == 0
    assert stub_env.calls == 1


def test_a_cache_entry_with_damaged_figures_is_read_without_them(pytester, stub_env):
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(1))
    pytester.runpytest("suites", *stub_args(stub_env)).assert_outcomes(passed=1)
    (path,) = (pytester.path / ".ifbench-cache").rglob("*.json")
    entry = json.loads(path.read_text())
    entry["response"].update(prompt_tokens=None, completion_tokens="7", cost="0.1")
    path.write_text(json.dumps(entry))
    pytester.runpytest("suites", *stub_args(stub_env)).assert_outcomes(passed=1)
    (record,) = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
    response = record["turns"][0]["response"]
    assert (response["prompt_tokens"], response["completion_tokens"], response["cost"]) == (0, 0, None)
    assert stub_env.calls == 1
