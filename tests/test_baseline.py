"""Baselines (``--ifbench-baseline``): regressions fail, improvements and known failures pass.

The main scenario runs without xdist and with ``-n 2``: the snapshots are
syrupy's, so their storage, updates and unused-snapshot report must survive
the workers. It scores pre-recorded replies (``--ifbench-responses``), which
changes the replies between runs without a model; the pass-rate and error
cases go through the stub server, since they need samples and failing calls.
"""

from __future__ import annotations

import json
from functools import partial

import pytest

from pytest_ifbench.reports.baseline_compare import compare
from pytest_ifbench.testing import Fault, Reply
from tests._support import stub_args, write_suite


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch):
    """syrupy tells xdist workers by $PYTEST_XDIST_WORKER: when these tests run under
    xdist, the runs they start would inherit it and skip syrupy's report."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


SUITE = """
ifbench: 1
benchmark: demo
instances:
  - id: alpha-one
    prompt: alpha
    checks:
      - {id: lower, verifier: ifbench.case, params: {mode: lower}}
      - {id: short, verifier: ifbench.word_count, params: {max: 3}}
  - id: alpha-two
    prompt: bravo
    markers: [slow]
    checks:
      - {id: lower, verifier: ifbench.case, params: {mode: lower}}
      - {id: hello, verifier: ifbench.keywords, params: {include: [hello]}}
  - id: echo
    prompt: echo
    checks:
      - {id: lower, verifier: ifbench.case, params: {mode: lower}}
      - {id: short, verifier: ifbench.word_count, params: {max: 3}}
"""
CHARLIE = """
  - id: charlie
    prompt: charlie
    checks:
      - {id: lower, verifier: ifbench.case, params: {mode: lower}}
"""
DELTA = CHARLIE.replace("charlie", "delta")


def _score(pytester, replies: dict[str, str], *extra: str, where: tuple[str, ...] = ("suites",),
           subprocess: bool = False):
    """Run the suites on pre-recorded ``replies`` (instance id -> text)."""
    lines = [json.dumps({"id": key, "response": text}) for key, text in replies.items()]
    (pytester.path / "replies.jsonl").write_text("\n".join(lines) + "\n")
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    return run(*where, "-p", "no:cacheprovider", "--ifbench-responses=replies.jsonl", "--ifbench-summary=", *extra)


def _stored(directory) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text())["checks"] for p in sorted(directory.glob("*.json"))}


@pytest.mark.parametrize("xdist", [pytest.param([], id="no-xdist"), pytest.param(["-n", "2"], id="n2")])
def test_record_compare_update(pytester, xdist):
    baselines = pytester.path / "suites" / "__baselines__" / "demo"
    write_suite(pytester.path, "suites/demo.yaml", SUITE + CHARLIE)
    # alpha-two misses 'hello' and echo is too long (failures); everything else passes
    long = "this one is far too long"
    result = _score(pytester, {"alpha-one": "all fine", "alpha-two": "bye now", "echo": long, "charlie": "ok"},
                    "--ifbench-baseline", "--snapshot-update", *xdist)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*4 snapshots generated*"])
    assert _stored(baselines) == {
        "alpha-one": {"lower": {"passed": True}, "short": {"passed": True}},
        "alpha-two": {"hello": {"passed": False}, "lower": {"passed": True}},
        "charlie": {"lower": {"passed": True}},
        "echo": {"lower": {"passed": True}, "short": {"passed": False}},
    }

    # alpha-one regresses, alpha-two improves, echo is unchanged (a known failure passes),
    # delta is new, charlie is gone (its snapshot is unused)
    write_suite(pytester.path, "suites/demo.yaml", SUITE + DELTA)
    second = {"alpha-one": "NOT fine", "alpha-two": "hello there", "echo": long, "delta": "UPPER"}
    result = _score(pytester, second, "--ifbench-baseline", *xdist)
    assert result.ret == 1, result.stdout.str()
    result.assert_outcomes(passed=3, failed=2)  # alpha-one and its failed subtest
    out = result.stdout.str()
    assert ("regression: suites/demo.yaml::alpha-one check 'lower' passed in the baseline, fails now: "
            "3 letters in the wrong case") in out
    result.stdout.fnmatch_lines([
        "*1 snapshot failed. 2 snapshots passed. 1 snapshot unused.*",
        "*Re-run pytest with --snapshot-update to delete unused snapshots*",
    ])
    result.stdout.fnmatch_lines([
        "baseline: 1 regression, 1 improvement, 1 known failure, 1 new instance*",
        "  regression   suites/demo.yaml::alpha-one [[]lower[]] passed in the baseline, fails now",
        "  improvement  suites/demo.yaml::alpha-two [[]hello[]] failed in the baseline, passes now",
        "  new          suites/demo.yaml::delta",
    ])
    assert "delta" not in _stored(baselines), "a comparison never writes"

    # accept the current run: the regression and delta are recorded, charlie's snapshot deleted
    result = _score(pytester, second, "--ifbench-baseline", "--snapshot-update", *xdist)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*1 snapshot passed. 1 snapshot generated. 2 snapshots updated. "
                                 "1 unused snapshot deleted.*"])
    assert _stored(baselines) == {
        "alpha-one": {"lower": {"passed": False}, "short": {"passed": True}},
        "alpha-two": {"hello": {"passed": True}, "lower": {"passed": True}},
        "delta": {"lower": {"passed": False}},
        "echo": {"lower": {"passed": True}, "short": {"passed": False}},
    }
    if xdist:
        return

    # the accepted run passes; deselected instances keep their baselines (not "unused"), even
    # with -k on a marker and no path (syrupy matches -k against snapshot names only) and
    # although alpha-two's id shares its prefix with alpha-one's
    result = _score(pytester, second, "--ifbench-baseline", "-k", "not slow", "--snapshot-update", where=())
    assert result.ret == 0, result.stdout.str()
    assert "unused" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*3 snapshots passed.", "baseline updated: 0 instances written*"])
    # without --ifbench-baseline the baselines are none of syrupy's business
    result = _score(pytester, second, "--snapshot-update")
    assert "snapshot" not in result.stdout.str(), result.stdout.str()
    assert set(_stored(baselines)) == {"alpha-one", "alpha-two", "delta", "echo"}


def test_pass_rates_tolerance_custom_dir_and_errors(pytester, stub_env):
    write_suite(pytester.path, "suites/s.yaml", """
        ifbench: 1
        benchmark: sampled
        instances:
          - id: sampled
            prompt: sampled
            generation: {samples: 4, temperature: 0.7}
            checks: [{id: lower, verifier: ifbench.case, params: {mode: lower}}]
          - id: steady
            prompt: steady
            checks: [{id: lower, verifier: ifbench.case, params: {mode: lower}}]
    """)
    # record with another model whose every sample passes (recorded responses hold no samples), so the rate is 1.0
    stub_env.add_rule("sampled", Reply(content="fine"))
    stub_env.add_rule("steady", Reply(content="ok"))
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--model=openai/recorder",
                                f"--api-base={stub_env.url}", "--ifbench-no-cache", "--ifbench-summary=",
                                "--ifbench-baseline-dir=base", "--snapshot-update")
    assert result.ret == 0, result.stdout.str()
    stub_env.reset()
    stored = _stored(pytester.path / "base" / "suites" / "s")
    assert stored == {"sampled": {"lower": {"passed": True, "rate": 1.0}}, "steady": {"lower": {"passed": True}}}
    assert not (pytester.path / "suites" / "__baselines__").exists()

    # 2 of 4 samples pass: the check still passes by majority, but its rate fell by 0.5 > 0.25;
    # steady errors: it is not scored and its baseline is kept (not reported unused)
    replies = iter(["fine", "FINE", "fine", "FINE"])
    stub_env.add_rule("sampled", lambda body: Reply(content=next(replies)))
    stub_env.inject_faults(Fault(kind="status", status=500, message="boom"), match="steady")
    args = stub_args(stub_env, "--ifbench-no-cache", "--ifbench-max-attempts=1", "--ifbench-summary=",
                     "--ifbench-baseline-dir=base")
    result = pytester.runpytest("suites", *args)
    assert result.ret == 1, result.stdout.str()
    result.assert_outcomes(failed=2, errors=1)
    result.stdout.fnmatch_lines([
        "*regression: suites/s.yaml::sampled check 'lower' pass rate 100% in the baseline, 50% now "
        "(tolerance 25%): passed in 2/4 samples*",
        "*ERROR*steady*",
    ])
    assert "unused" not in result.stdout.str()
    result.stdout.fnmatch_lines([
        "baseline: 1 regression, 0 improvements, 0 known failures, 0 new instances, "
        "1 errored instance (baseline kept) (tolerance 0.25)",
        "*note: 1 instance recorded with another model (openai/recorder -> openai/stub); "
        "keep one baseline per model (--ifbench-baseline-dir)",
    ])


def test_unreached_turns_regress(pytester):
    write_suite(pytester.path, "suites/talk.yaml", """
        ifbench: 1
        benchmark: talk
        instances:
          - id: chat
            protocol: multi_turn
            protocol_options: {patience: 1}
            turns:
              - user: one
                checks: [{id: lower, verifier: ifbench.case, params: {mode: lower}}]
              - user: two
                checks: [{id: lower, verifier: ifbench.case, params: {mode: lower}}]
    """)

    def score(replies, *extra):
        (pytester.path / "r.jsonl").write_text(json.dumps({"id": "chat", "responses": replies}) + "\n")
        return pytester.runpytest("suites", "-p", "no:cacheprovider", "--ifbench-responses=r.jsonl",
                                  "--ifbench-summary=", "--ifbench-baseline", *extra)

    assert score(["a", "b"], "--snapshot-update").ret == 0
    result = score(["A", "b"])
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "*regression: suites/talk.yaml::chat check 'turn1.lower' passed in the baseline, fails now*",
        "*regression: suites/talk.yaml::chat check 'turn2.lower' passed in the baseline (100%), not reached now "
        "(dialogue ended: patience_exhausted)*",
    ])


def test_compare_rules():
    def entries(**checks):
        return {"checks": {k: v if isinstance(v, dict) else {"passed": v} for k, v in checks.items()}}

    base = entries(a=True, b=False, c=True, d={"passed": True, "rate": 0.75}, gone=True, left=True)
    now = entries(a=False, b=True, c=True, d={"passed": False, "rate": 0.5}, new=False)
    result = compare("x::y", base, now, 0.25, expected=["a", "b", "c", "d", "new", "left"])
    assert set(result.regressions) == {"a"}
    assert set(result.improvements) == {"b"}
    assert set(result.known_failures) == {"d"}, "a drop within the tolerance is not a regression"
    assert result.new_checks == ["new"]
    assert set(result.unreached) == {"left"}, "checks removed from the suite are not regressions"
    strict = compare("x::y", base, now, 0.2, expected=[])
    assert set(strict.regressions) == {"a", "d"}
    assert "pass rate 75% in the baseline, 50% now (tolerance 20%)" in strict.regressions["d"]
    # a boolean baseline against a sampled check compares 1.0 with the rate
    mixed = compare("x::y", entries(a=True), entries(a={"passed": True, "rate": 0.6}), 0.25, expected=[])
    assert set(mixed.regressions) == {"a"}


#: Ten instances of one check each, for the paired gate: 'lower' passes on a lowercase reply.
TEN = "ifbench: 1\nbenchmark: ten\ninstances:\n" + "".join(
    f"  - id: q{i}\n    prompt: q{i}\n    checks: [{{id: lower, verifier: ifbench.case, params: {{mode: lower}}}}]\n"
    for i in range(10))


@pytest.mark.parametrize("xdist", [pytest.param([], id="no-xdist"), pytest.param(["-n", "2"], id="n2")])
def test_paired_gate_fails_on_a_significant_drop_not_on_one_flip(pytester, xdist):
    # In subprocesses: in-process runs after a failed one sometimes lost their whole output to the outer capture.
    score = partial(_score, subprocess=True)
    write_suite(pytester.path, "suites/ten.yaml", TEN)
    passing = {f"q{i}": "fine" for i in range(10)}
    assert score(pytester, passing, "--ifbench-baseline", "--snapshot-update").ret == 0
    one_flip = {**passing, "q3": "NOT FINE"}

    # the fixed tolerance fails the run on one flipped verdict out of ten...
    result = score(pytester, one_flip, "--ifbench-baseline", *xdist)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*regression: suites/ten.yaml::q3 check 'lower' passed in the baseline, fails now*"])

    # ... the paired test does not: 1 loss, 0 gains is no evidence (exact McNemar p = 1.0)
    result = score(pytester, one_flip, "--ifbench-baseline", "--ifbench-baseline-gate=paired", *xdist)
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines([
        "baseline: 0 regressions, 1 drop, 0 improvements, 0 known failures, 0 new instances (paired test, alpha 0.05)",
        "paired gate: no significant regression at alpha 0.05 (2 tests left out: too few instances changed to reach "
        "alpha)",
        "  ten ISR (10 paired): 100.0% -> 90.0%, -10.0 pts *, p 1.000 (exact McNemar, +0/-1)",
        "  ten CSR (10 paired): 100.0% -> 90.0%, -10.0 pts *, p 1.000 (sign-flip permutation)",
        "  drop         suites/ten.yaml::q3 [[]lower[]] passed in the baseline, fails now",
    ])

    # seven of ten flipped: significant (p = 2/2^7), the run fails although every subtest passed
    seven = {**passing, **{f"q{i}": "NOT FINE" for i in range(7)}}
    result = score(pytester, seven, "--ifbench-baseline", "--ifbench-baseline-gate=paired", *xdist)
    assert result.ret == 1, result.stdout.str()
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines([
        "paired gate: significant regression at alpha 0.05 (Holm over 2 tests), the run fails: ten ISR -70.0 pts * "
        "(p 0.016, adjusted 0.031), ten CSR -70.0 pts * (p 0.016, adjusted 0.031)",
        "  ten ISR (10 paired): 100.0% -> 30.0%, -70.0 pts *, p 0.016 (exact McNemar, +0/-7) worse",
    ])
    # a stricter level lets it through: the gate reads --ifbench-baseline-alpha
    result = score(pytester, seven, "--ifbench-baseline", "--ifbench-baseline-gate=paired",
                    "--ifbench-baseline-alpha=0.01", *xdist)
    assert result.ret == 0, result.stdout.str()
    # updating records the run and never gates
    result = score(pytester, seven, "--ifbench-baseline", "--ifbench-baseline-gate=paired", "--snapshot-update")
    assert result.ret == 0 and "paired gate" not in result.stdout.str()


def test_paired_gate_bad_level(pytester):
    write_suite(pytester.path, "suites/ten.yaml", TEN)
    result = _score(pytester, {}, "--ifbench-baseline", "--ifbench-baseline-gate=paired", "--ifbench-baseline-alpha=1",
                    subprocess=True)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ifbench-baseline-alpha must be between 0 and 1 (exclusive), got 1.0*"])


def test_instance_pair_counts_unreached_checks_as_failed():
    from pytest_ifbench.reports.baseline_compare import instance_pair

    base = {"checks": {"a": {"passed": True}, "b": {"passed": True, "rate": 0.75}, "gone": {"passed": False}}}
    now = {"checks": {"a": {"passed": True}, "new": {"passed": False}}}
    assert instance_pair(base, now, expected=["a", "b", "new"]) == {"base": [True, 0.875], "new": [False, 0.5]}
    assert instance_pair(base, now, expected=["new"]) == {}
