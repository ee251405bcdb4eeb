"""``ifbench compare``: two runs of the stub paired by instance, the known change, the gate, the refusals."""

from __future__ import annotations

import json
import math
import re

import pytest

from pytest_ifbench.cli.main import main as ifbench
from pytest_ifbench.reports import stats
from pytest_ifbench.testing import Reply
from tests._support import stub_args

#: 12 "format" instances whose one check group (lower + its bonus) the stub's echo passes; 8 "style"
#: instances that pass on any reply. The "new" run answers the format prompts in capitals: 12 flips.
FLIPPED, STEADY = 12, 8


def _suite(*, extra_check: bool = False) -> str:
    lines = ["ifbench: 1", "benchmark: cmp", "instances:"]
    for i in range(FLIPPED):
        more = ", {id: words, verifier: ifbench.word_count, params: {min: 1}}" if extra_check and i == 0 else ""
        lines += [f"  - id: f{i:02d}", "    category: format", f"    prompt: answer in lowercase please {i}",
                  "    checks: [{id: lower, verifier: ifbench.case, params: {mode: lower}},"
                  f" {{id: lower-bonus, verifier: ifbench.case, kind: bonus, params: {{mode: lower}}}}{more}]"]
    for i in range(STEADY):
        lines += [f"  - id: s{i:02d}", "    category: style", f"    prompt: anything {i}",
                  "    checks: [{id: any, verifier: ifbench.word_count, params: {min: 1}},"
                  " {id: any-bonus, verifier: ifbench.word_count, kind: bonus, params: {min: 1}}]"]
    return "\n".join(lines) + "\n"


@pytest.fixture
def runs(pytester, stub_server):
    suite = pytester.path / "suites" / "cmp.yaml"
    suite.parent.mkdir()
    suite.write_text(_suite(), encoding="utf-8")

    def run(name: str, *extra: str) -> str:
        pytester.runpytest("suites", *stub_args(stub_server, f"--ifbench-results={name}", *extra))
        return str(pytester.path / name)

    made = {"base": run("base.json"), "same": run("same.json"), "hot": run("hot.json", "--ifbench-temperature=0.9"),
            "subset": run("subset.json", "-k", "not s07")}
    suite.write_text(_suite(extra_check=True), encoding="utf-8")
    made["changed"] = run("changed.json")
    suite.write_text(_suite(), encoding="utf-8")
    stub_server.add_rule("lowercase", Reply(content="ANSWER IN CAPITALS"))
    made["new"] = run("new.json", "--model=openai/new-model")
    return made


def _compare(*args: str) -> int:
    return ifbench(["compare", *args])


def test_a_flipped_check_group_gives_the_known_change_and_fails_the_gate(runs, pytester, capsys):
    out_md = pytester.path / "report.md"
    assert _compare(runs["base"], runs["new"], "--out", str(out_md)) == 0, "no gate without --fail-on-regression"
    text = capsys.readouterr().out
    # ISR and CSR drop by 12/20 = 60 points; McNemar on 12 losses, 0 gains: p = 2 / 2**12
    assert stats.sign_test(0, FLIPPED) == pytest.approx(2 / 2 ** 12)
    lines = [line.split() for line in text.splitlines()]
    isr = next(line for line in lines if line[:2] == ["all", "ISR"])
    assert isr[2:6] == ["20", "100.0%", "40.0%", "-60.0"], isr
    assert isr[-5:] == ["<0.001", "exact", "McNemar", "(+0/-12)", "worse"], isr
    csr = next(line for line in lines if line[:1] == ["CSR"] and "-60.0" in line)
    assert csr[-1] == "worse" and "<0.001" in csr
    assert "category=style" in text and "passed -> failed (12)" in text
    assert "failed -> passed" not in text
    for i in range(FLIPPED):
        assert f"suites/cmp.yaml::f{i:02d}  failed: lower, lower-bonus" in text
    assert "significant regression at alpha 0.05 (Holm over 3 tests): cmp ISR -60.0 pts" in text
    report = out_md.read_text()
    assert "| all | ISR | 20 | 100.0% | 40.0% | -60.0 pts" in report and "**significant regression" in report
    assert _compare(runs["base"], runs["new"], "--fail-on-regression") == 1
    # the other way round it is an improvement: nothing to gate on
    assert _compare(runs["new"], runs["base"], "--fail-on-regression") == 0
    assert "failed -> passed (12)" in capsys.readouterr().out
    # a stricter level still sees it (p = 0.0005 each for ISR, CSR and score: 0.0015 adjusted over the three), a
    # level below the adjusted p does not
    assert _compare(runs["base"], runs["new"], "--fail-on-regression", "--alpha", "0.002") == 1
    assert _compare(runs["base"], runs["new"], "--fail-on-regression", "--alpha", "0.001") == 0


def test_two_identical_runs_change_nothing(runs, capsys):
    assert _compare(runs["base"], runs["same"], "--fail-on-regression") == 0
    text = capsys.readouterr().out
    rows = [row for line in text.splitlines() if {"ISR", "CSR", "score"} & set((row := line.split())[:2])]
    # Δ = 0, p = 1; no spread is no proof of an exact zero: the interval is the Wilson band of 0 of n
    # instances moving (n = 20 overall, 12 and 8 per category), never a zero width
    assert len(rows) == 9 and all(re.search(r"\+0\.0 pts ±0\.0 \[-(\d+\.\d), \+\1\] 1\.000", " ".join(row))
                                  for row in rows), rows
    assert "+0.0 pts ±0.0 [-16.1, +16.1] 1.000" in " ".join(rows[0])
    assert not {"worse", "better"} & {row[-1] for row in rows}
    assert "passed -> failed" not in text and "failed -> passed" not in text and "only in" not in text
    assert "no significant regression at alpha 0.05" in text


def test_instances_only_in_one_run_are_reported_apart(runs, capsys):
    assert _compare(runs["base"], runs["subset"], "--fail-on-regression") == 0
    text = capsys.readouterr().out
    assert f"only in {runs['base']} (1, not compared):\n  suites/cmp.yaml::s07" in text
    assert next(line.split() for line in text.splitlines() if line.split()[:2] == ["all", "ISR"])[2] == "19"


def test_a_setting_only_an_unpaired_instance_used_is_no_difference(runs, pytester, capsys):
    """The base's s07 (which the subset run leaves out) has settings of its own, as an instance with a suite
    ``generation:`` has: the runs still compare; it was "differ in generation settings for cmp" (a killed
    shard's merge against a whole run, found by a user)."""
    data = json.loads((pytester.path / "base.json").read_text())
    (own,) = [record for record in data["instances"] if record["instance"] == "s07"]
    own["generation"] = {**own["generation"], "max_tokens": 256}
    shared = data["generation"]["cmp"][0]
    data["generation"]["cmp"] = [[shared[0], shared[1] - 1], ["temperature 0.0, max_tokens 256", 1]]
    (pytester.path / "own.json").write_text(json.dumps(data))
    code = _compare(str(pytester.path / "own.json"), runs["subset"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert f"only in {pytester.path / 'own.json'} (1, not compared):\n  suites/cmp.yaml::s07" in printed.out


@pytest.mark.parametrize("other, words", [
    ("hot", "differ in generation settings for suites/cmp.yaml::f00: temperature 0.0 vs 0.9"),
    ("changed", "hold suites/cmp.yaml::f00 with different checks (the suite changed)"),
])
def test_runs_that_differ_beyond_the_model_are_refused(runs, capsys, other, words):
    assert _compare(runs["base"], runs[other]) == 2
    err = capsys.readouterr().err
    assert "ifbench compare: refused:" in err and words in err and "--force" in err, err
    assert _compare(runs["base"], runs[other], "--force") == 0


@pytest.mark.parametrize("key, value, words", [
    ("plugin_version", "0.0.1", "differ in plugin version"),
    ("judges", ["openai/judge-a", "openai/judge-b"], "differ in judges"),
    ("instances", [], "share no instance"),
])
def test_metadata_differences_are_refused(runs, pytester, capsys, key, value, words):
    data = json.loads((pytester.path / "same.json").read_text())
    data[key] = value
    if key == "judges":  # the panel matters once a check was judged (unjudged runs may differ in judges)
        data["instances"][0]["judge_calls"] = [{"model": "openai/judge-a"}]
    (pytester.path / "edited.json").write_text(json.dumps(data))
    assert _compare(runs["base"], str(pytester.path / "edited.json")) == 2
    err = capsys.readouterr().err
    assert words in err and "edited.json" in err and "base.json" in err


def test_not_a_results_file_is_refused(pytester, capsys):
    (pytester.path / "x.json").write_text('{"a": 1}')
    assert _compare(str(pytester.path / "x.json"), str(pytester.path / "x.json")) == 2
    assert "not a pytest-ifbench results file" in capsys.readouterr().err


def test_paired_bootstrap_is_reproducible_and_zero_for_no_change():
    same = stats.paired_bootstrap([1.0, 0.5, 0.0], [1.0, 0.5, 0.0])
    assert same[0].value == 0 and same[1] == 1.0 and (same[0].low, same[0].high) == pytest.approx((-0.5615, 0.5615),
                                                                                                      abs=1e-4)
    a = stats.paired_bootstrap([1.0] * 10, [0.0] * 6 + [1.0] * 4)
    assert a == stats.paired_bootstrap([1.0] * 10, [0.0] * 6 + [1.0] * 4)
    assert a[0].value == pytest.approx(-0.6) and a[1] < 0.01 and a[0].high < 0


def test_one_pair_has_no_spread_to_estimate_for_a_mean_as_for_a_share():
    """A category with one instance that went from failed to passed: the ISR change was `±inf [-100, +100]`
    and the CSR change `±0.0 [+20.7, +100]` (the no-spread rule of many units that all moved alike)."""
    change, p = stats.paired_bootstrap([0.5], [1.0])
    assert (change.value, change.se, change.low, change.high, change.n, p) == (0.5, math.inf, -1.0, 1.0, 1, 1.0)
    isr = stats.mean([1.0], bounds=(-1.0, 1.0), method="paired-t")
    assert (isr.se, isr.low, isr.high) == (change.se, change.low, change.high)
    assert stats.paired_bootstrap([2.0], [3.0], bounds=None)[0].low == -math.inf


def _run_against(pytester, stub_server, base: str, *extra: str):
    """The "new" run (capitals for the format prompts) as a pytest run compared with ``base`` at its end; in a
    subprocess, so the output checked is the run's own."""
    return pytester.runpytest_subprocess("suites", *stub_args(stub_server, "--model=openai/new-model",
                                                              f"--baseline-results={base}", *extra))


def test_baseline_results_compares_the_run_at_its_end(runs, pytester, stub_server):
    summary = pytester.path / "summary.md"
    result = _run_against(pytester, stub_server, runs["base"], "--ifbench-results=again.json",
                          f"--ifbench-summary={summary}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # its 12 failing instances; no gate asked for
    result.stdout.fnmatch_lines([
        "*= ifbench compare =*",
        f"base: {runs['base']} (model openai/stub, 20 instances); "
        "new: again.json (model openai/new-model, 20 instances)",
        "*all * ISR * 20 * 100.0% * 40.0% * -60.0 pts * <0.001 * exact McNemar (+0/-12) * worse",
        "passed -> failed (12):",
        "  suites/cmp.yaml::f00  failed: lower, lower-bonus",
    ])
    out = result.stdout.str()
    assert "significant regression at alpha 0.05 (Holm over 3 tests): cmp ISR -60.0 pts" in out
    assert "the run fails" not in out
    # the same comparison as `ifbench compare BASE NEW` on the file this run wrote
    assert _compare(runs["base"], str(pytester.path / "again.json"), "--fail-on-regression") == 1
    text = summary.read_text(encoding="utf-8")
    assert (f"compared with {runs['base']} (model openai/stub): significant regression at alpha 0.05 (Holm over 3 "
            "tests)") in text
    assert "cmp ISR (20 paired): 100.0% -> 40.0%, -60.0 pts" in text and "exact McNemar, +0/-12) worse" in text
    assert "passed -> failed (12): suites/cmp.yaml::f00" in text


def test_fail_on_regression_makes_the_exit_status_the_gates(runs, pytester, stub_server):
    # a significant drop fails the run...
    result = _run_against(pytester, stub_server, runs["base"], "--ifbench-fail-on-regression")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["--ifbench-fail-on-regression: the run fails (exit 1)"])
    # ... no change passes it, although 12 instances failed their checks (in both runs; 36 = 12 + their 24 subtests)
    result = _run_against(pytester, stub_server, runs["new"], "--ifbench-fail-on-regression")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["no significant regression at alpha 0.05",
                                 "*= 36 failed, 8 passed in *"])
    assert _run_against(pytester, stub_server, runs["new"]).ret == pytest.ExitCode.TESTS_FAILED, "only as the gate"
    # a refused comparison cannot pass the gate
    result = _run_against(pytester, stub_server, runs["hot"], "--ifbench-fail-on-regression")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        f"compared with {runs['hot']}: refused: * differ in generation settings for suites/cmp.yaml::f00: *",
        "--ifbench-fail-on-regression: the run fails (exit 1)",
    ])


def test_baseline_results_bad_input_stops_before_the_run(pytester, stub_server):
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "cmp.yaml").write_text(_suite(), encoding="utf-8")
    (pytester.path / "x.json").write_text('{"a": 1}')
    result = _run_against(pytester, stub_server, "x.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--baseline-results: *x.json: not a pytest-ifbench results file*"])
    result = _run_against(pytester, stub_server, "missing.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--baseline-results: *missing.json: cannot read*"])
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_server, "--ifbench-fail-on-regression"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ifbench-fail-on-regression needs --baseline-results BASE.json*"])
    assert not stub_server.requests, "nothing was paid for"


def test_compare_holds_a_view_per_instance_not_the_records(runs, pytester, capsys):
    """Two runs of 600 instances whose records carry 40 KB of prompt each: compare reads each record
    once and keeps its compact view (it held both runs whole: more than the files' size)."""
    import tracemalloc

    data = json.loads((pytester.path / "base.json").read_text())
    records = data["instances"]
    big = []
    for copy in range(30):
        for record in records:
            turns = [{**turn, "messages": [{"role": "user", "content": f"{copy} " + "p" * 40_000}]}
                     for turn in record["turns"]]
            big.append({**record, "nodeid": f"{record['nodeid']}-{copy}", "turns": turns})
    paths = []
    for name in ("big-base.json", "big-new.json"):
        path = pytester.path / name
        path.write_text(json.dumps({**data, "instances": big}))
        paths.append(str(path))
    size = sum(pytester.path.joinpath(name).stat().st_size for name in ("big-base.json", "big-new.json"))
    assert _compare(runs["base"], runs["base"]) == 0  # what compare imports is not counted
    tracemalloc.start()
    try:
        assert _compare(*paths) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "600 instances" in capsys.readouterr().out
    assert size > 48_000_000 and peak < 12_000_000, f"peak {peak:,} bytes for {size:,} bytes of results"


def _dialogue(turns: int) -> str:
    asks = ("Name a colour.", "Name an animal.", "Name a country.")[:turns]
    lines = ["ifbench: 1", "benchmark: talk", "instances:", "  - id: d", "    protocol: multi_turn",
             "    protocol_options: {patience: 1}", "    turns:"]
    for ask in asks:
        lines += [f"      - user: {ask} One word.",
                  "        checks: [{id: one-word, verifier: ifbench.word_count, params: {min: 1, max: 1}}]"]
    return "\n".join(lines) + "\n"


def test_a_dialogue_one_run_ended_early_compares_its_unreached_turns_as_failed(pytester, stub_server, capsys):
    """Patience ended the new run's dialogue after turn 1: its record holds turn 1's check only. That was refused
    as "different checks (the suite changed)", so no EvolIF-style dialogue compared between two models. A suite
    that changed (a turn added, every turn run) is still refused."""
    suite = pytester.path / "suites" / "talk.yaml"
    suite.parent.mkdir()
    suite.write_text(_dialogue(3), encoding="utf-8")

    def run(name: str, *extra: str) -> str:
        pytester.runpytest("suites", *stub_args(stub_server, f"--ifbench-results={name}", *extra))
        return str(pytester.path / name)

    stub_server.add_rule("One word", Reply(content="Blue"))
    base = run("base.json")
    stub_server.reset()
    stub_server.add_rule("One word", Reply(content="It would have to be blue, I think"))
    early = run("early.json", "--model=openai/new-model", "--ifbench-cache=other")
    records = {name: json.loads((pytester.path / name).read_text())["instances"][0] for name in ("base.json",
                                                                                             "early.json")}
    assert len(records["base.json"]["checks"]) == 3 and len(records["early.json"]["checks"]) == 1
    assert records["early.json"]["ended"] == "patience_exhausted"
    assert _compare(base, early) == 0, capsys.readouterr().err
    capsys.readouterr()

    suite.write_text(_dialogue(2), encoding="utf-8")
    stub_server.reset()
    stub_server.add_rule("One word", Reply(content="Blue"))
    shorter = run("shorter.json", "--ifbench-cache=third")
    assert _compare(base, shorter) == 2
    assert "with different checks (the suite changed)" in capsys.readouterr().err
