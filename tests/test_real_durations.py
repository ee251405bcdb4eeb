"""An instance's real time in Allure and JUnit: generation (or the agent's run) + verification.

Generation runs in the background, concurrently, before an instance's turn comes: the verification
phase alone (what pytest times as the call) is milliseconds however long the model took. The stub
server answers each instance after a set latency, so the real time is known from below.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from pytest_ifbench.reports.allure_render import timing_steps
from pytest_ifbench.testing import Reply
from tests._support import demo_suite, stub_args, write_suite

#: Seconds the stub waits before each reply.
LATENCY = 1.2
INSTANCES = [
    {"id": f"slow-{i}", "prompt": f"slow question {i}",
     "checks": [{"id": "any", "verifier": "ifbench.word_count", "params": {"min": 1}}]}
    for i in range(3)
]


def _run(pytester, server, *extra: str):
    server.add_rule("slow question", Reply(content="a slow answer", latency=LATENCY))
    write_suite(pytester.path, "suites/slow.yaml", demo_suite(*INSTANCES))
    alluredir, junit = pytester.path / "allure-results", pytester.path / "junit.xml"
    result = pytester.runpytest("suites", *stub_args(server), f"--alluredir={alluredir}",
                                f"--junitxml={junit}", *extra)
    result.assert_outcomes(passed=3)
    return alluredir, junit


def test_allure_and_junit_show_generation_plus_verification(pytester, stub_env):
    alluredir, junit = _run(pytester, stub_env)
    results = [json.loads(p.read_text(encoding="utf-8")) for p in alluredir.glob("*-result.json")]
    assert sorted(r["name"] for r in results) == ["slow-0", "slow-1", "slow-2"]
    for result in results:
        # The three replies were generated concurrently: before, the later instances showed only the
        # milliseconds of their verification.
        assert result["stop"] - result["start"] >= 1000 * LATENCY, result["name"]
        generation, verification = result["steps"][:2]
        assert generation["name"] == "generation" and verification["name"] == "verification"
        assert generation["stop"] - generation["start"] >= 1000 * LATENCY
        assert generation["start"] == result["start"] and verification["start"] == generation["stop"]
        seconds = {p["name"]: float(p["value"]) for p in generation["parameters"]}["seconds"]
        assert LATENCY <= seconds < LATENCY + 5
        assert verification["stop"] - verification["start"] < 1000  # a word count
        assert result["steps"][2]["name"].startswith("any")

    cases = {c.get("name"): float(c.get("time")) for c in ET.parse(junit).getroot().iter("testcase")}
    assert set(cases) == {"slow-0", "slow-1", "slow-2"}
    assert all(LATENCY <= t < LATENCY + 5 for t in cases.values()), cases


def test_syrupy_fixture_stays_out_of_the_instances_set_up(pytester, stub_env):
    alluredir, _ = _run(pytester, stub_env)
    uuids = {json.loads(p.read_text(encoding="utf-8"))["uuid"] for p in alluredir.glob("*-result.json")}
    fixtures = {}
    for path in alluredir.glob("*-container.json"):
        container = json.loads(path.read_text(encoding="utf-8"))
        for before in container.get("befores", []):
            fixtures.setdefault(before["name"], set()).update(set(container.get("children", [])) & uuids)
    assert "_syrupy_apply_ide_patches" not in fixtures, fixtures


def test_timing_steps_split_an_agent_run():
    record = {"agent": {"model_seconds": 21.5, "tool_seconds": 8.25, "steps": 7, "stop_reason": "final"},
              "durations": {"generation": 30.0, "verification": 0.081}, "samples": 1}
    (run_name, run_seconds, run_params), (verify_name, verify_seconds, _) = timing_steps(record, 30.0)
    assert (run_name, run_seconds, verify_name, verify_seconds) == ("agent run", 30.0, "verification", 0.081)
    assert dict(run_params) == {"seconds": "30.000", "model seconds": "21.500", "tool seconds": "8.250",
                                "steps": "7", "stopped": "final"}
    sampled = timing_steps({"samples": 3, "durations": {}}, 2.0)
    assert [name for name, _, _ in sampled] == ["generation"]
    assert ("samples", "3 (concurrent: the longest)") in sampled[0][2]


def test_waiting_for_a_slot_is_not_generation_time(pytester, stub_env):
    """One call at a time: the third instance waits two replies for its slot, and its generation time,
    the results file's and JUnit's, is still its own reply's (jobs start well ahead of their items)."""
    alluredir, junit = _run(pytester, stub_env, "--ifbench-concurrency=1", "--ifbench-results=results.json")
    records = json.loads((pytester.path / "results.json").read_text())["instances"]
    generation = {r["instance"]: r["durations"]["generation"] for r in records}
    assert set(generation) == {"slow-0", "slow-1", "slow-2"}
    assert all(LATENCY <= seconds < 2 * LATENCY for seconds in generation.values()), generation
    cases = {c.get("name"): float(c.get("time")) for c in ET.parse(junit).getroot().iter("testcase")}
    assert all(LATENCY <= t < 2 * LATENCY for t in cases.values()), cases
