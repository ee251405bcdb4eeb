"""Options that did nothing, or took any value, without a word.

* ``--ifbench-baseline-gate``, ``--ifbench-baseline-tolerance`` and ``--ifbench-baseline-alpha`` imply
  ``--ifbench-baseline`` (as ``--ifbench-baseline-dir`` does), and a bad tolerance is a usage error with or
  without it;
* ``--ifbench-concurrency`` and the integer options beside it refuse negative (or, where 0 means nothing,
  zero) values;
* the "no --judge-model" warning names the judge that ran when recorded replies were scored.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from pytest_ifbench.cli.main import main
from pytest_ifbench.testing import Reply
from tests._support import stub_args, write_suite


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch):
    """syrupy tells xdist workers by $PYTEST_XDIST_WORKER: the runs these tests start must not inherit it."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


#: Three instances of one check each: 'lower' passes on a lowercase reply.
THREE = "ifbench: 1\nbenchmark: three\ninstances:\n" + "".join(
    f"  - id: q{i}\n    prompt: q{i}\n    checks: [{{id: lower, verifier: ifbench.case, params: {{mode: lower}}}}]\n"
    for i in range(3))


def _score(pytester, replies: dict[str, str], *extra: str):
    """Run ``suites`` on pre-recorded ``replies`` (instance id -> text), in a subprocess (syrupy's session)."""
    lines = [json.dumps({"id": key, "response": text}) for key, text in replies.items()]
    (pytester.path / "replies.jsonl").write_text("\n".join(lines) + "\n")
    return pytester.runpytest_subprocess("suites", "-p", "no:cacheprovider", "--ifbench-responses=replies.jsonl",
                                         "--ifbench-summary=", "--ifbench-results=", *extra)


@pytest.mark.parametrize("setting", ["--ifbench-baseline-gate=paired", "--ifbench-baseline-tolerance=0.5",
                                     "--ifbench-baseline-alpha=0.1"])
def test_a_setting_of_the_baseline_gate_implies_the_baseline(pytester, setting):
    write_suite(pytester.path, "suites/three.yaml", THREE)
    passing = {f"q{i}": "fine" for i in range(3)}
    result = _score(pytester, passing, setting, "--snapshot-update")
    assert result.ret == 0, result.stdout.str()
    assert sorted(p.name for p in (pytester.path / "suites" / "__baselines__" / "three").glob("*.json")) == [
        "q0.json", "q1.json", "q2.json"], "the baseline was recorded"
    # the next run compares with it, and the gate asked for is the one applied
    result = _score(pytester, {**passing, "q1": "NOT FINE"}, setting)
    out = result.stdout.str()
    assert "baseline: " in out, out
    if setting.endswith("paired"):
        assert result.ret == 0, out  # one flip is no evidence for the paired test
        result.stdout.fnmatch_lines(["baseline: 0 regressions, 1 drop, * (paired test, alpha 0.05)",
                                     "paired gate: no significant regression at alpha 0.05*"])
    else:
        assert result.ret == 1, out
        result.stdout.fnmatch_lines(["*regression: suites/three.yaml::q1 check 'lower' passed in the baseline, "
                                     "fails now*"])


def test_alpha_of_a_results_comparison_asks_for_no_baseline(pytester):
    """``--ifbench-baseline-alpha`` is also the level of ``--baseline-results``: with it, no baseline is implied
    (nothing recorded beside the suite); without it, the baseline is (the run above)."""
    write_suite(pytester.path, "suites/three.yaml", THREE)
    passing = {f"q{i}": "fine" for i in range(3)}
    assert _score(pytester, passing, "--ifbench-results=base.json").ret == 0
    result = _score(pytester, passing, "--baseline-results=base.json", "--ifbench-baseline-alpha=0.1",
                    "--snapshot-update")
    assert result.ret == 0, result.stdout.str()
    assert not (pytester.path / "suites" / "__baselines__").exists()
    result = _score(pytester, passing, "--ifbench-baseline-alpha=0.1", "--snapshot-update")
    assert result.ret == 0 and (pytester.path / "suites" / "__baselines__" / "three").is_dir()


@pytest.mark.parametrize("value", ["2", "-0.1"])
def test_a_bad_tolerance_is_a_usage_error_without_the_baseline_too(pytester, value):
    write_suite(pytester.path, "suites/three.yaml", THREE)
    result = _score(pytester, {}, f"--ifbench-baseline-tolerance={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --ifbench-baseline-tolerance must be between 0 and 1, got {float(value)}"])


@pytest.mark.parametrize(("option", "bad", "allowed"), [
    ("--ifbench-concurrency", "-3", "0 (auto) or more"),
    ("--ifbench-concurrency", "-1", "0 (auto) or more"),
    ("--ifbench-max-attempts", "0", "1 or more"),
    ("--ifbench-max-attempts", "-2", "1 or more"),
    ("--ifbench-agent-concurrency", "0", "1 or more"),
    ("--ifbench-agent-concurrency", "-1", "1 or more"),
])
def test_a_count_below_its_least_is_a_usage_error_naming_the_option(pytester, option, bad, allowed):
    result = pytester.runpytest("-p", "no:cacheprovider", f"{option}={bad}", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*argument {option}: must be {allowed}, got {int(bad)}"])


def test_concurrency_zero_is_still_auto_and_a_negative_one_is_refused(pytester, stub_env):
    write_suite(pytester.path, "suites/three.yaml", THREE)
    result = pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-concurrency=0", "--ifbench-results=")
    result.assert_outcomes(passed=3)
    result = pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-concurrency=-3", "--ifbench-results=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


#: A stand-in for the embedded model (``local/``): judges every check passed, at once.
FAKE_LOCAL_JUDGE = """
    import json

    from pytest_ifbench import Provider, chat_reply

    class Judge:
        async def acompletion(self, *, model, messages, timeout, **params):
            verdict = {"checks": [{"id": "polite", "verdict": "pass", "reasoning": "it is"}]}
            return chat_reply({"choices": [{"message": {"role": "assistant", "content": json.dumps(verdict)},
                                            "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": 3, "completion_tokens": 4}})

    def pytest_ifbench_model_providers(providers):
        providers.add(Provider(name="fake-local", prefix="local/", transport=lambda model, api_base, extra: Judge(),
                               concurrency=1, needs_litellm=False, free=True))
"""

JUDGED = """
    ifbench: 1
    benchmark: judged
    instances:
      - id: a
        prompt: write a poem
        checks: [{id: polite, verifier: ifbench.judge, params: {criterion: "is polite"}}]
"""


def test_score_names_the_embedded_judge_of_recorded_responses(pytester, capsys):
    pytester.makeconftest(textwrap.dedent(FAKE_LOCAL_JUDGE))
    suite = write_suite(pytester.path, "suites/judged.yaml", JUDGED)
    (pytester.path / "pr.jsonl").write_text(json.dumps({"id": "a", "response": "Roses are red."}) + "\n")
    code = main(["score", "--suite", str(suite), "--responses", "pr.jsonl", "--results=", "--",
                 "-p", "no:cacheprovider", "--ifbench-summary=", "--ifbench-no-cache"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert ("warning: no --judge-model given: the embedded model local/smollm2 judged the recorded responses; "
            "pass --judge-model for comparable judged scores") in out.splitlines(), out
    assert "judged its own answers" not in out


def test_recorded_responses_judged_by_the_model_given_say_so(pytester, stub_env):
    write_suite(pytester.path, "suites/judged.yaml", JUDGED)
    stub_env.add_rule("REQUIREMENTS", Reply(content=json.dumps(
        {"checks": [{"id": "polite", "verdict": "pass", "reasoning": "it is"}]})))
    (pytester.path / "pr.jsonl").write_text(json.dumps({"id": "a", "response": "Roses are red."}) + "\n")
    result = pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-responses=pr.jsonl", "--ifbench-results=",
                                "--ifbench-no-cache")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["warning: no --judge-model given: openai/stub (--model) judged the recorded "
                                 "responses; pass --judge-model for comparable judged scores"])
