"""Allure reporting (``pytest_ifbench/reports/allure.py``, ``allure_render.py``): the ``*-result.json``
files a run writes.

One run of a suite with a passing, a failing, a judged, a per-turn and an errored
instance, with and without xdist, read back from the alluredir.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_ifbench._types import CheckSpec, Verdict
from pytest_ifbench._verify import CheckOutcome
from pytest_ifbench.reports import allure as _allure
from pytest_ifbench.reports import allure_render as _allure_render
from pytest_ifbench.testing import Fault, Reply
from tests._support import FAKE_KEY, stub_args, write_suite

SUITE = """
ifbench: 1
benchmark: demo
defaults:
  generation: {max_tokens: 50}
instances:
  - id: hello-lower
    category: format
    prompt: say hello in lowercase
    checks:
      - {id: lower, verifier: ifbench.case, params: {mode: lower}}
      - {id: short, verifier: ifbench.word_count, params: {max: 5}}
  - id: shout
    category: style
    tier: 2
    system: Be loud.
    prompt: write add() and shout
    checks:
      - {id: upper, verifier: ifbench.case, params: {mode: upper}}
      - {id: tiny-lines, verifier: ifbench.ruff, params: {select: [E501], settings: {line-length: 10}}}
      - {id: has-def, verifier: ifbench.regex, params: {pattern: 'def add', target: code}}
      - {id: accepted, verifier: ifbench.word_count, params: {max: 1}}
      - {id: quiet, verifier: ifbench.word_count, params: {max: 1000}, scored: false}
  - id: judged
    category: judged
    prompt: politely refuse
    checks:
      - {id: polite, verifier: ifbench.judge, params: {criterion: The reply is polite.}}
      - {id: brief, verifier: ifbench.judge, params: {criterion: The reply is one sentence.}}
  - id: dialogue
    scaffold: Claude Code
    protocol: multi_turn
    protocol_options: {subtests: turn}
    turns:
      - user: first turn please
        checks:
          - {id: lower, verifier: ifbench.case, params: {mode: lower}}
      - user: second turn please
        checks:
          - {id: lower, verifier: ifbench.case, params: {mode: lower}}
          - {id: one-word, verifier: ifbench.word_count, params: {max: 1}}
  - id: broken
    category: format
    markers: [flaky_api]
    prompt: this one errors
    checks:
      - {id: lower, verifier: ifbench.case, params: {mode: lower}}
"""

CODE_REPLY = f"HERE IS ADD, KEY {FAKE_KEY}:\n```python\ndef add(a, b):\n    return a + b\n```"
JUDGE_REPLY = json.dumps({"checks": [
    {"id": "polite", "verdict": "pass", "reasoning": "Courteous throughout."},
    {"id": "brief", "verdict": "fail", "reasoning": "It rambles over three sentences."},
]})


def _script(server) -> None:
    server.add_rule("^TASK GIVEN TO THE MODEL", Reply(content=JUDGE_REPLY))
    server.add_rule("lowercase", Reply(content="hello there"))
    server.add_rule("shout", Reply(content=CODE_REPLY))
    server.add_rule("refuse", Reply(content="Sorry, we cannot do that. We hope you understand. Thanks."))
    server.add_rule("first turn", Reply(content="fine"))
    server.add_rule("second turn", Reply(content="Not Fine At All"))
    server.inject_faults(Fault(kind="status", status=503, message="upstream overloaded"), match="errors")


#: A plugin that decides differently (like the baseline): the failed check 'accepted' passes.
CONFTEST = """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_ifbench_report_check(item, name, outcomes):
    return True if name == "accepted" else None
"""


def _run(pytester, server, *extra: str) -> tuple[Path, dict[str, dict]]:
    _script(server)
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    pytester.makeconftest(CONFTEST)
    alluredir = pytester.path / "allure-results"
    result = pytester.runpytest(
        "suites", *stub_args(server, "--ifbench-max-attempts=1"),
        f"--alluredir={alluredir}", *extra)
    result.assert_outcomes(passed=1, failed=3 + 4, errors=1)  # 3 instances + their 4 failed subtests
    results = {}
    for path in alluredir.glob("*-result.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["name"] not in results, f"two results for {data['name']}"
        results[data["name"]] = data
    assert set(results) == {"hello-lower", "shout", "judged", "dialogue", "broken"}
    return alluredir, results


def _labels(result: dict, name: str) -> list[str]:
    return [label["value"] for label in result["labels"] if label["name"] == name]


def _params(result: dict) -> dict[str, str]:
    return {p["name"]: p["value"] for p in result.get("parameters", [])}


def _attachment(alluredir: Path, owner: dict, name: str) -> str:
    (found,) = [a for a in owner.get("attachments", []) if a["name"] == name]
    assert found["type"] == "text/plain"
    return (alluredir / found["source"]).read_text(encoding="utf-8")


TIMING = ("generation", "agent run", "verification")


def _check_steps(result: dict) -> list[dict]:
    """The steps after the instance's timing steps (generation or agent run, then verification)."""
    steps = result.get("steps", [])
    timing = [s["name"] for s in steps[:2] if s["name"] in TIMING]
    assert timing in ([], ["generation", "verification"], ["agent run", "verification"]), timing
    assert not any(s["name"] in TIMING for s in steps[len(timing):])
    return steps[len(timing):]


def _steps(result: dict) -> list[tuple[str, str]]:
    return [(step["name"].split(":")[0], step["status"]) for step in _check_steps(result)]


@pytest.mark.parametrize("workers", [None, "2"], ids=["serial", "xdist"])
def test_allure_results(pytester, stub_env, workers):
    # under xdist, also: --ifbench-allure-attachments=failed leaves passed instances without files
    extra = ["-n", workers, "--ifbench-allure-attachments=failed"] if workers else []
    alluredir, results = _run(pytester, stub_env, *extra)
    passed, failed, judged = results["hello-lower"], results["shout"], results["judged"]
    dialogue, broken = results["dialogue"], results["broken"]
    assert [r["status"] for r in (passed, failed, judged, dialogue, broken)] == [
        "passed", "failed", "failed", "failed", "broken"]

    # labels: epic = benchmark, feature = category, story = scaffold / tier, a tag per marker
    assert _labels(failed, "epic") == ["demo"] and _labels(failed, "feature") == ["style"]
    assert _labels(failed, "story") == ["tier 2"]
    assert _labels(dialogue, "story") == ["Claude Code"]
    assert {"ifbench", "demo", "category_style", "tier_2", "protocol_single_turn"} <= set(_labels(failed, "tag"))
    assert {"scaffold_claude_code", "protocol_multi_turn"} <= set(_labels(dialogue, "tag"))
    # parameters: model, judges, protocol (judges stay out of the history id where nothing is judged)
    assert _params(failed) == {"model": "openai/stub", "judges": "openai/stub", "protocol": "single_turn"}
    assert [p.get("excluded") for p in failed["parameters"]] == [None, True, None]
    assert [p.get("excluded") for p in judged["parameters"]] == [None, None, None]
    assert _params(dialogue)["protocol"] == "multi_turn"

    # one step per scored check, each with its own status; unscored checks are skipped steps
    assert _steps(passed) == [("lower", "passed"), ("short", "passed")]
    assert _steps(failed) == [("upper", "failed"), ("tiny-lines", "failed"), ("has-def", "passed"),
                              ("accepted", "passed"), ("quiet (not scored)", "skipped")]
    upper, tiny, has_def, accepted, _ = _check_steps(failed)
    assert {"name": "verdict", "value": "not met, accepted"} in accepted["parameters"]
    assert upper["statusDetails"]["message"].startswith("check 'upper' failed")
    assert "Traceback" not in json.dumps(upper) and "CheckFailed" not in json.dumps(upper)
    assert {"name": "verifier", "value": "ifbench.case(mode='upper')"} in upper["parameters"]
    assert "letters in the wrong case" in _attachment(alluredir, upper, "evidence")
    evidence = _attachment(alluredir, tiny, "evidence")
    assert "E501 Line too long" in evidence and '"violations"' in evidence  # failure text + details
    assert not has_def.get("attachments"), "passing checks carry no attachment"
    assert not any(s.get("attachments") for s in _check_steps(passed))
    assert failed["statusDetails"]["message"] == "[check failed] 2 of 4 checks failed: upper, tiny-lines"

    # attachments of the instance: what was sent, the reply (redacted), the extracted code
    sent = _attachment(alluredir, failed, "messages sent")
    assert sent == "── system ──\nBe loud.\n\n── user ──\nwrite add() and shout"
    reply = _attachment(alluredir, failed, "model reply")
    assert reply.startswith("HERE IS ADD, KEY [REDACTED]:") and "model: openai/stub" in reply
    assert _attachment(alluredir, failed, "extracted code") == "def add(a, b):\n    return a + b\n"
    assert {a["name"] for a in passed.get("attachments", [])} == (set() if workers else {"messages sent",
                                                                                         "model reply"})

    # judged checks: the judges' reasoning, and the failed verdict as a failed step
    assert _steps(judged) == [("polite", "passed"), ("brief", "failed")]
    reasoning = _attachment(alluredir, judged, "judge reasoning")
    assert "brief: FAIL (0 of 1 judge(s))" in reasoning and "It rambles over three sentences." in reasoning
    assert "It rambles" in _attachment(alluredir, _check_steps(judged)[1], "evidence")

    # per-turn subtests: a step per turn, a sub-step per check with its own status
    assert _steps(dialogue) == [("turn1", "passed"), ("turn2", "failed")]
    turn2 = _check_steps(dialogue)[1]
    assert [(s["name"].split(":")[0], s["status"]) for s in turn2["steps"]] == [
        ("turn2.lower", "failed"), ("turn2.one-word", "failed")]
    assert "4 words (required 0..1)" in _attachment(alluredir, turn2["steps"][1], "evidence")
    trajectory = _attachment(alluredir, dialogue, "trajectory")
    assert trajectory.index("first turn please") < trajectory.index("fine") < trajectory.index("Not Fine At All")

    # the errored instance: labels, the error text, the messages it would have sent
    assert _labels(broken, "epic") == ["demo"] and _labels(broken, "feature") == ["format"]
    assert "flaky_api" in _labels(broken, "tag") and _params(broken)["model"] == "openai/stub"
    message = broken["statusDetails"]["message"]
    assert message.startswith("[model error] model 'openai/stub' failed after 1 attempt(s) (HTTP 503)")
    assert "upstream overloaded" in _attachment(alluredir, broken, "error")
    assert "this one errors" in _attachment(alluredir, broken, "messages (not sent: the instance errored)")
    assert "Traceback" not in json.dumps(broken)

    # session files, once (the controller writes them under xdist), and no key anywhere
    environment = (alluredir / "environment.properties").read_text(encoding="utf-8")
    assert "model=openai/stub\n" in environment and "judges=openai/stub\n" in environment
    assert "pytest-ifbench=" in environment and "verifier\\ ifbench.ruff=1\n" in environment
    assert re.search(r"suite\\ suites/demo.yaml=sha256:[0-9a-f]{64}\n", environment)
    if workers:
        assert "xdist\\ workers=2\n" in environment
    names = [c["name"] for c in json.loads((alluredir / "categories.json").read_text())]
    assert names == ["Model/API error", "Judge error", "Sandbox timeout", "Verifier error", "Check failed"]
    assert json.loads((alluredir / "allurerc.json").read_text())["categories"][0]["name"] == "Model/API error"
    for path in alluredir.iterdir():
        assert FAKE_KEY not in path.read_text(encoding="utf-8", errors="replace"), path.name


def test_blocked_with_no_ifbench_allure(pytester):
    """``-p no:ifbench_allure`` leaves allure-pytest's plain results: no steps, labels or attachments."""
    suite = SUITE.split("  - id: shout")[0].replace("    prompt: say hello in lowercase\n",
                                                      "    prompt: say hello in lowercase\n    response: hi\n")
    write_suite(pytester.path, "suites/demo.yaml", suite)
    alluredir = pytester.path / "plain"
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", f"--alluredir={alluredir}",
                                "-p", "no:ifbench_allure")
    result.assert_outcomes(passed=1)
    (path,) = alluredir.glob("*-result.json")
    data = json.loads(path.read_text())
    assert not data.get("steps") and not _labels(data, "epic") and not data.get("attachments")
    assert not (alluredir / "environment.properties").exists()


def test_active_only_with_alluredir(pytester):
    assert not pytester.parseconfigure().pluginmanager.has_plugin("ifbench-allure-reporter")
    config = pytester.parseconfigure(f"--alluredir={pytester.path / 'out'}")
    assert config.pluginmanager.has_plugin("ifbench-allure-reporter")


# -- pure functions -------------------------------------------------------------------


def _outcome(verifier: str, evidence: str = "", error: str | None = None) -> CheckOutcome:
    verdict = None if error else Verdict(passed=False, evidence=evidence)
    return CheckOutcome(check=CheckSpec(id="c", verifier=verifier), verdict=verdict, error=error)


def test_failure_kinds_pick_the_category():
    from pytest_ifbench._composition import default_registry

    item = SimpleNamespace(state=SimpleNamespace(registry=default_registry()))
    reporter = _allure.AllureReporter(SimpleNamespace())
    kind = reporter._kind
    assert kind(item, [_outcome("ifbench.case", "3 letters")]) == "check failed"
    assert kind(item, [_outcome("ifbench.unit_tests", "0/2 tests passed (limit: timeout)")]) == "sandbox timeout"
    assert kind(item, [_outcome("ifbench.unit_tests", "1/2 tests passed; test_1: AssertionError")]) == "check failed"
    assert kind(item, [_outcome("ifbench.judge", error="no judge verdict was produced")]) == "judge error"
    assert kind(item, [_outcome("ifbench.case", error="verifier raised")]) == "verifier error"


@pytest.mark.parametrize("tag", [c["tag"] for c in _allure_render.CATEGORIES])
def test_categories_match_their_messages_only(tag):
    """Allure 2 matches the whole message (Java ``matches``), Allure 3 searches it: both must agree."""
    by_tag = {c["tag"]: c for c in _allure_render.CATEGORIES}
    for category in _allure_render.categories():
        regex = category["messageRegex"]
        mine = category["name"] == by_tag[tag]["name"]
        message = f"[{tag}] 2 of 3 checks failed: a, b\nsecond line"
        assert bool(re.fullmatch(regex, message)) is mine
        assert bool(re.search(regex, message)) is mine


def test_environment_properties_escape_keys_and_values():
    text = _allure_render.environment_properties({"suite a:b=c.yaml": "x\ny", "model": "openai/gpt-4o"})
    assert text == "suite\\ a\\:b\\=c.yaml=x\\ny\nmodel=openai/gpt-4o\n"


def test_renderers():
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": [{"type": "text", "text": "U"}]},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}]
    text = _allure_render.render_messages(messages)
    assert text.startswith("── system ──\nS\n\n── user ──\nU\n\n── assistant ──\n[tool calls]")
    reply = _allure_render.render_response({"text": "", "reasoning": "hmm", "model": "m", "prompt_tokens": 3,
                                            "completion_tokens": 4, "cached": True, "attempts": 2})
    assert reply.startswith("(empty reply)\n\n── reasoning (stripped before verification) ──\nhmm")
    assert reply.endswith("── model: m · tokens in/out: 3/4 · cached · attempts: 2 ──")


def test_half_an_emoji_in_a_reply_is_a_failed_check_not_an_error(pytester, stub_env):
    """A provider that cuts an emoji in two sends a lone surrogate (valid JSON, not UTF-8): the instance
    is decided as usual; it errored with UnicodeEncodeError when Allure wrote the reply."""
    stub_env.default = lambda body: Reply(content="a cut emoji \ud83d here")
    write_suite(pytester.path, "s.yaml", """
        ifbench: 1
        benchmark: cut
        instances:
          - id: one
            prompt: say something
            checks:
              - {id: kw, verifier: ifbench.keywords, params: {include: [zebra]}}
        """)
    result = pytester.runpytest("s.yaml", *stub_args(stub_env), "--alluredir=allure")
    result.assert_outcomes(failed=2)  # the check and the instance; no error
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    assert record["status"] == "failed" and record["turns"][0]["response"]["text"] == "a cut emoji \ufffd here"
    for path in (pytester.path / "allure").iterdir():
        path.read_bytes().decode("utf-8")


def test_the_judges_block_names_each_vote_and_each_judge_that_left_the_check_out():
    checks = [{"id": "short", "passed": False, "description": "is short", "verdict": {"details": {
        "judges": [{"judge": "a", "passed": False, "reasoning": "too long"},
                   {"judge": "b", "result": "not_applicable", "passed": False, "applicable": False, "reasoning": "-"}],
        "omitted": ["c"]}}}]
    assert _allure_render.render_judges(checks).splitlines() == [
        "short: FAIL (0 of 2 judge(s))", "  criterion: is short", "  [a] fail: too long", "  [b] not_applicable: -",
        "  [c] left this check out; the others decided it"]
