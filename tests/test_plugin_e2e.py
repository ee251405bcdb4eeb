"""End to end: pytest runs suites against the stub server through litellm."""

from __future__ import annotations

import json

import pytest

from pytest_ifbench.testing import Fault, Reply
from tests._support import FAKE_KEY, HELLO_LOWER, SHOUT, bulk_suite, demo_suite, stub_args, write_suite

SUITE = demo_suite(HELLO_LOWER, {**SHOUT, "tier": 12}, defaults={"generation": {"max_tokens": 50}})


def test_items_subtests_and_summary(pytester, stub_env):
    stub_env.add_rule("lowercase", Reply(content="hello there"))
    stub_env.add_rule("uppercase", Reply(content="Hello There"))
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    result = pytester.runpytest("suites", *stub_args(stub_env), "-v")
    result.stdout.fnmatch_lines([
        "*suites/demo.yaml::hello-lower PASSED*",
        "*suites/demo.yaml::shout*SUBFAILED*[[]upper[]]*",
        "*check 'upper' failed*",
        "*evidence:*",
        "*letters in the wrong case*",
        "*ifbench summary*",
        "*demo*",
        "*all*2*0*50.0%*50.0%*",
    ])
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*2 failed, 1 passed, 2 subtests passed*"])
    assert stub_env.calls == 2


def test_markers_select_and_strict(pytester, stub_env):
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    result = pytester.runpytest("suites", *stub_args(stub_env), "--strict-markers",
                                "-m", "demo and tier_12 and not category_format")
    result.assert_outcomes(failed=2)
    assert stub_env.calls == 1, "deselected instances must not be generated"



def test_an_installed_benchmarks_markers_are_known_whatever_the_run_collects(pytester, stub_env):
    """`-m "manyih and not perturbed" --strict-markers` on a run holding no ManyIH instance, or none perturbed
    (an official file's sample), stopped with "Unknown marker(s) in '-m' expression": a benchmark's name and its
    declared markers are registered at start-up now, once each."""
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    result = pytester.runpytest("suites", *stub_args(stub_env), "--strict-markers", "-m", "manyih and not perturbed",
                                "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED, result.stdout.str()[-800:]
    listed = pytester.runpytest("suites", "--markers").stdout.lines
    for name in ("manyih", "perturbed", "ppi_scalar", "evolif", "octobench", "demo"):
        assert sum(line.startswith(f"@pytest.mark.{name}:") for line in listed) == 1, name

def test_api_failure_is_an_error_not_a_failure(pytester, stub_env):
    stub_env.add_rule("lowercase", Reply(content="hello there"))
    stub_env.inject_faults(*[Fault(kind="status", status=500, message="boom")] * 3, match="uppercase")
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    result = pytester.runpytest("suites", *stub_args(stub_env, "--ifbench-max-attempts=3"))
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*ERROR*shout*", "*failed after 3 attempt(s) (HTTP 500)*boom*"])


def test_second_run_is_served_from_cache(pytester, stub_env):
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    pytester.runpytest("suites", *stub_args(stub_env))
    assert stub_env.calls == 2
    pytester.runpytest("suites", *stub_args(stub_env))
    assert stub_env.calls == 2, "a second identical run makes zero model calls"
    entries = list((pytester.path / ".ifbench-cache").rglob("*.json"))
    assert len(entries) == 2
    for path in [*entries, pytester.path / "ifbench-results.json"]:
        assert FAKE_KEY not in path.read_text(), path


def test_results_file(pytester, stub_env):
    stub_env.add_rule("", Reply(content="hello"))
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    pytester.runpytest("suites", *stub_args(stub_env))
    doc = json.loads((pytester.path / "ifbench-results.json").read_text())
    assert doc["model"] == "openai/stub"
    by_id = {r["instance"]: r for r in doc["instances"]}
    assert set(by_id) == {"hello-lower", "shout"}
    shout = by_id["shout"]
    assert shout["status"] == "failed" and shout["tier"] == 12
    assert shout["turns"][0]["messages"][-1] == {"role": "user", "content": "say hello in uppercase"}
    assert shout["turns"][0]["response"]["text"] == "hello"
    assert shout["checks"][0]["verdict"]["passed"] is False
    assert shout["tokens"]["completion"] >= 1


@pytest.mark.parametrize("workers", ["2"])
def test_xdist_results_are_complete(pytester, stub_env, workers):
    stub_env.add_rule("lowercase", Reply(content="hello there"))
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    write_suite(pytester.path, "suites/more.yaml", SUITE.replace("benchmark: demo", "benchmark: more"))
    # no cache: the two suites ask the same prompts, and a worker whose call was answered and kept first
    # answers the other's from the shared cache (3 calls instead of 4 on a loaded machine)
    result = pytester.runpytest("suites", *stub_args(stub_env), "-n", workers, "--ifbench-no-cache")
    result.assert_outcomes(passed=2, failed=4)
    assert stub_env.calls == 4
    doc = json.loads((pytester.path / "ifbench-results.json").read_text())
    assert len(doc["instances"]) == 4
    result.stdout.fnmatch_lines(["*ifbench summary*", "*demo*", "*more*"])


def test_xdist_workers_pay_once_for_the_same_request(pytester, stub_env):
    """Two suites ask the same two prompts and each worker runs one suite: with the response cache the
    worker that asks second waits for the first one's reply (or finds it kept): two calls, not four."""
    stub_env.latency = 0.5
    stub_env.add_rule("lowercase", Reply(content="hello there"))
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    write_suite(pytester.path, "suites/more.yaml", SUITE.replace("benchmark: demo", "benchmark: more"))
    result = pytester.runpytest("suites", *stub_args(stub_env), "-n", "2", "-v",
                                f"--ifbench-cache={pytester.path / 'cache'}")
    result.assert_outcomes(passed=2, failed=4)
    assert stub_env.calls == 2

    def ran_on(suite: str) -> set[str]:
        return {line.split("]")[0] for line in result.stdout.lines if line.startswith("[gw") and f"{suite}::" in line}

    assert len(ran_on("demo.yaml")) == len(ran_on("more.yaml")) == 1  # each suite on one worker...
    assert ran_on("demo.yaml") != ran_on("more.yaml")  # ...not the same one
    assert not list((pytester.path / "cache").rglob("*.inflight"))


def test_litellm_env_vars_still_work(pytester, stub_env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_BASE", stub_env.url)
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    args = [a for a in stub_args(stub_env) if not a.startswith("--api-base")]
    pytester.runpytest("suites", *args)
    assert stub_env.calls == 2


def test_xdist_workers_generate_in_the_background(pytester, stub_env):
    """Each worker prefetches the items queued to it instead of calling one by one."""
    stub_env.latency = 0.3
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(24))
    result = pytester.runpytest("suites", *stub_args(stub_env, "--ifbench-concurrency=8"), "-n", "2")
    result.assert_outcomes(passed=24)
    assert stub_env.calls == 24
    assert stub_env.peak_concurrency > 2, "workers must overlap their model calls"


def test_samples_give_pass_rates(pytester, stub_env):
    replies = iter(["hello", "HELLO", "hello"])
    stub_env.add_rule("", lambda body: Reply(content=next(replies)))
    write_suite(pytester.path, "suites/s.yaml", """
        ifbench: 1
        benchmark: sampled
        instances:
          - id: lower
            prompt: say hello in lowercase
            generation: {samples: 3, temperature: 0.7}
            checks: [{id: lower, verifier: ifbench.case, params: {mode: lower}}]
    """)
    result = pytester.runpytest("suites", *stub_args(stub_env))
    result.assert_outcomes(passed=1)
    assert stub_env.calls == 3
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    check = record["checks"][0]
    assert check["verdict"]["details"]["pass_rate"] == pytest.approx(2 / 3)
    assert record["samples"] == 3 and len(record["sample_responses"]) == 2
    pytester.runpytest("suites", *stub_args(stub_env))
    assert stub_env.calls == 3, "every sample is cached under its own index"


def test_naming_one_file_leaves_its_sibling_data_files_alone(pytester):
    """pytest collects a file argument through its directory and offers every sibling to the plugin: the
    importers read each data file beside the one named (a crashing one warned about a file nobody asked for)."""
    pytester.makeconftest("""
        def pytest_ifbench_suite_data(path, config):
            if path.name == "other.json":
                raise RuntimeError("read other.json")
    """)
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    (pytester.path / "suites" / "other.json").write_text("{}", encoding="utf-8")
    named = pytester.runpytest("suites/demo.yaml", "--collect-only", "-q")
    assert named.ret == 0 and "read other.json" not in named.stdout.str(), named.stdout.str()[-1500:]
    everything = pytester.runpytest("suites", "--collect-only", "-q")  # the directory named: it is read
    assert "read other.json" in everything.stdout.str()
