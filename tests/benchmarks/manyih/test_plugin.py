"""ManyIH end to end: items and subtests, compat option and flag, official files, metrics and reports."""

from __future__ import annotations

import json

from pytest_ifbench.benchmarks.manyih import generate as generator
from pytest_ifbench.benchmarks.manyih import metrics as metrics
from pytest_ifbench.benchmarks.manyih import plugin
from pytest_ifbench.testing import Reply
from tests._support import stub_args, write_suite
from tests.benchmarks.manyih.test_generator import _official_sample

SOLUTION = """Here it is:
```python
def second_largest(values):
    largest = None
    runner_up = None
    for value in values:
        if largest is None or value > largest:
            if largest is not None:
                runner_up = largest
            largest = value
        elif value != largest and (runner_up is None or value > runner_up):
            runner_up = value
    return runner_up
```
"""


def test_generated_suite_runs_with_subtests_and_tables(pytester, stub_env):
    stub_env.add_rule("", Reply(content=SOLUTION))
    suite = pytester.path / "suites" / "manyih.yaml"
    assert generator.main(["coding", "--limit", "1", "--tiers", "8,12", "--out", str(suite)]) == 0
    result = pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-full", "-q",
                                "--ifbench-results=results.json")
    data = json.loads((pytester.path / "results.json").read_text())
    records = data["instances"]
    assert len(records) == 5 and stub_env.calls == 5
    for record in records:
        scored = [c for c in record["checks"] if c["scored"]]
        assert len(scored) == 7 and scored[0]["id"] == "tests" and scored[0]["passed"]
        suppressed = [c for c in record["checks"] if not c["scored"]]
        assert len(suppressed) == record["tier"] - 6
        assert all(c["verdict"] is not None for c in suppressed), "suppressed instructions are still evaluated"
    passed_subtests = sum(c["passed"] for r in records for c in r["checks"] if c["scored"])
    result.stdout.fnmatch_lines([
        f"*{passed_subtests} subtests passed*",
    ])
    result.stdout.fnmatch_lines([
        "*manyih coding: accuracy (Table 1a)*", "*all*4*0*", "*tier=8*", "*tier=12*", "*ppi=ordinal*",
        "*ppi=scalar, perturbed*1*",
        "*ordinal vs scalar on the same samples (Table 1b)*", "*all*2*",
        "*scalar privilege perturbation*", "*all*1*",
        "*manyih coding: by style group*",
    ])


COMPAT_SUITE = """
ifbench: 1
benchmark: manyih
{options}
instances:
  - id: licensed
    prompt: Write code.
    response: "```python\\nlicense_count = 1\\n```"
    checks:
      - {{id: inherits, verifier: manyih.license_none}}
      - {{id: explicit-paper, verifier: manyih.license_none, params: {{compat: paper}}}}
"""


class _Config:
    def __init__(self, flag):
        self.flag = flag

    def getoption(self, name):
        assert name == "manyih_compat"
        return self.flag


def _compat_params(path, flag):
    data = plugin.BENCHMARK.pytest_ifbench_suite_data(path, _Config(flag))
    if data is None:
        return None
    return {c["id"]: (c.get("params") or {}).get("compat") for c in data["instances"][0]["checks"]}


def test_compat_suite_option_and_flag_set_the_parameter(tmp_path):
    option = write_suite(tmp_path, "option.yaml", COMPAT_SUITE.format(options="options: {compat: reference}"))
    plain = write_suite(tmp_path, "plain.yaml", COMPAT_SUITE.format(options=""))
    assert _compat_params(option, None) == {"inherits": "reference", "explicit-paper": "paper"}
    assert _compat_params(option, "paper") == {"inherits": "paper", "explicit-paper": "paper"}
    assert _compat_params(plain, None) is None, "nothing to apply: the core loads the file itself"
    assert _compat_params(plain, "reference") == {"inherits": "reference", "explicit-paper": "reference"}


def test_compat_changes_verdicts_end_to_end(pytester):
    write_suite(pytester.path, "suites/option.yaml", COMPAT_SUITE.format(options="options: {compat: reference}"))
    write_suite(pytester.path, "suites/plain.yaml", COMPAT_SUITE.format(options="").replace("licensed", "plain"))
    verdicts = {}
    for flag in ((), ("--manyih-compat=reference",)):
        pytester.runpytest("suites", "-p", "no:cacheprovider", "--ifbench-results=r.json", *flag)
        for record in json.loads((pytester.path / "r.json").read_text())["instances"]:
            for check in record["checks"]:
                verdicts[(flag != (), record["instance"], check["id"])] = check["passed"]
    assert verdicts == {
        (False, "licensed", "inherits"): False, (False, "licensed", "explicit-paper"): True,
        (False, "plain", "inherits"): True, (False, "plain", "explicit-paper"): True,
        (True, "licensed", "inherits"): False, (True, "licensed", "explicit-paper"): False,
        (True, "plain", "inherits"): False, (True, "plain", "explicit-paper"): False,
    }


def test_bad_compat_option_is_a_collection_error(pytester):
    write_suite(pytester.path, "suites/compat.yaml", COMPAT_SUITE.format(options="options: {compat: authors}"))
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--ifbench-results=")
    result.stdout.fnmatch_lines(["*compat.yaml: options.compat: expected paper or reference, got 'authors'*"])
    assert result.ret != 0


def test_official_file_is_collected_and_reports_suppressed(pytester):
    (pytester.path / "coding.json").write_text(json.dumps({"data": [_official_sample()]}))
    reply = "```python\ndef twice(n):\n\tif n:\n\t\treturn 2 * n\n\treturn 0\n```"
    (pytester.path / "replies.jsonl").write_text(json.dumps({"id": "coding-7-ordinal", "response": reply}) + "\n")
    result = pytester.runpytest("coding.json", "-p", "no:cacheprovider", "--ifbench-results=",
                                "--ifbench-responses=replies.jsonl", "--ifbench-full", "-rA")
    result.stdout.fnmatch_lines([
        "*manyih instructions*",
        "*P1 z=90*winner*indent_2*FAIL*",
        "*P4 z=40*suppressed (not scored)*indent_tab*followed: yes*",
        "*tests*pass*",
    ])
    result.assert_outcomes(failed=3)


def test_if_constraints_run_in_the_sandbox(pytester):
    write_suite(pytester.path, "suites/if.yaml", """
        ifbench: 1
        benchmark: manyih
        instances:
          - id: if-demo
            markers: [subset_if, ppi_scalar]
            metadata: {subset: if, sample: if-demo, ppi: scalar}
            prompt: Say hi.
            response: "Hi there! SELECT 1;"
            checks:
              - id: greets
                verifier: manyih.if_code
                params: {code: "def check_following(response):\\n    return response.startswith('Hi')"}
              - id: broken
                verifier: manyih.if_code
                params: {code: "def check_following(response):\\n    return 1 / 0"}
              - id: not-bool
                verifier: manyih.if_code
                params: {code: "def check_following(response):\\n    return 'yes'"}
              - id: suppressed
                verifier: manyih.if_code
                scored: false
                params:
                  code: "import os\\ndef check_following(response):\\n    return os.getenv('OPENAI_API_KEY') is None"
    """)
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--ifbench-results=r.json")
    record = json.loads((pytester.path / "r.json").read_text())["instances"][0]
    verdicts = {c["id"]: (c["passed"], c["verdict"]["evidence"]) for c in record["checks"]}
    assert verdicts["greets"][0] and not verdicts["broken"][0] and not verdicts["not-bool"][0]
    assert "ZeroDivisionError" in verdicts["broken"][1] and "not a bool" in verdicts["not-bool"][1]
    assert verdicts["suppressed"][0], "the sandbox has no API keys"
    result.stdout.fnmatch_lines(["*manyih instruction following: accuracy*",
                                 "*all*1*0*0.0% ±0.0 [[]0.0, 79.3]*33.3%*1*100.0%*"])  # [[] is a literal [ here


# ---------------------------------------------------------------------------- metrics on records


def _record(sample: str, ppi: str, tier: int, tests: bool, styles: list[bool], *, perturbed: bool = False,
            suppressed: tuple[bool, ...] = ()) -> dict:
    checks = [{"id": "tests", "scored": True, "passed": tests, "metadata": {"role": "tests"}}]
    checks += [{"id": f"s{i}", "scored": True, "passed": p, "metadata": {"role": "style", "group": "g",
                                                                         "privilege": 50 + i}}
               for i, p in enumerate(styles)]
    checks += [{"id": f"x{i}", "scored": False, "passed": p, "metadata": {"role": "style", "group": "g",
                                                                          "privilege": i}}
               for i, p in enumerate(suppressed)]
    return {"benchmark": "manyih", "status": "passed", "tier": tier, "markers": [],
            "metadata": {"subset": "coding", "sample": sample, "ppi": ppi, "perturbed": perturbed},
            "checks": checks}


def test_metric_formulas():
    records = [
        _record("a", "ordinal", 12, True, [True, True]),
        _record("a", "scalar", 12, True, [True, False]),
        _record("a", "scalar", 12, True, [True, True], perturbed=True),
        _record("b", "ordinal", 12, False, [True, True], suppressed=(True,)),
        _record("b", "scalar", 12, False, [True, True]),
        _record("b", "scalar", 12, True, [True, True], perturbed=True),
        _record("c", "ordinal", 6, True, [True]) | {"status": "error"},
    ]
    table_1a, table_1b, perturbation, by_style = plugin.BENCHMARK.pytest_ifbench_metrics("manyih", records)
    rows = {row[0]: row for row in table_1a.rows}
    # Acc, Acc_test, Acc_style: Wilson over the instances
    assert rows["all"] == ("all", 5, 1, "25.0% ±21.7 [4.6, 69.9]", "50.0% ±25.0 [15.0, 85.0]",
                           "75.0% ±21.7 [30.1, 95.4]")
    assert rows["ppi=scalar, perturbed"][3:] == ("100.0% ±0.0 [34.2, 100.0]",) * 3
    # Table 1b: Acc per side (Wilson), Δ paired by sample (paired-t, in points; no spread over the 2 pairs: the
    # Wilson band of 0 or 2 of 2 pairs moving, never a zero width)
    assert table_1b.rows[0] == ("all", 2, "50.0% ±35.4 [9.5, 90.5]", "0.0% ±0.0 [0.0, 65.8]",
                                "-50.0 ±50.0 [-100.0, +100.0]", "+0.0 ±0.0 [-65.8, +65.8]",
                                "-50.0 ±50.0 [-100.0, +100.0]")
    assert "Δ: mean of the paired differences +- t(n-1) x SE over the pairs" in table_1b.notes[-1]
    assert perturbation.rows[0] == ("all", 2, "0.0% ±0.0 [0.0, 65.8]", "100.0% ±0.0 [34.2, 100.0]",
                                    "+100.0 ±0.0 [+34.2, +100.0]", "+50.0 ±50.0 [-100.0, +100.0]",
                                    "+50.0 ±50.0 [-100.0, +100.0]", "100.0% ±0.0 [34.2, 100.0]",
                                    "50.0% ±35.4 [9.5, 90.5]", "50.0% ±35.4 [9.5, 90.5]")
    # style checks pooled over the instances, clustered by instance (5 instances, 11 of 12 winning passed)
    assert by_style.rows == (("g", 12, "91.7% ±8.3 [70.2, 100.0]", 1, "100.0% ±inf [0.0, 100.0]"),)
    assert plugin.BENCHMARK.pytest_ifbench_metrics("other", records) is None


def test_plot_by_tier(tmp_path):
    records = [_record("a", "ordinal", 6, True, [True]), _record("a", "ordinal", 12, True, [False]),
               _record("a", "scalar", 12, True, [True])]
    (path,) = plugin.BENCHMARK.pytest_ifbench_plots("manyih", records, tmp_path)
    assert path.name == "manyih_accuracy_by_tier.png" and path.read_bytes()[:4] == b"\x89PNG"
    assert plugin.BENCHMARK.pytest_ifbench_plots("other", records, tmp_path) is None


def test_an_instance_with_an_undecided_check_is_an_error_as_in_the_core():
    """A check whose verifier raised has no decision: the core's metrics leave the instance out and count it
    as an error; ManyIH scored it with the check as failed."""
    undecided = _record("b", "ordinal", 12, True, [True, False])
    undecided["checks"][-1]["error"] = "verifier manyih.style raised RuntimeError: boom"
    undecided["status"] = "failed"
    records = [_record("a", "ordinal", 12, True, [True, True]), undecided]
    table_1a = plugin.BENCHMARK.pytest_ifbench_metrics("manyih", records)[0]
    all_row = next(row for row in table_1a.rows if row[0] == "all")
    assert all_row[1:3] == (2, 1) and all_row[3].startswith("100.0%"), all_row
