"""A check the judge left out of its answer is an error in every report, never a failure, a zero or a pass.

Such an instance's record says ``status: "failed"`` (its undecided check carries an ``error``, no verdict);
:func:`~pytest_ifbench.reports.metrics.errored` knows it errored. The readers that tested ``status ==
"error"`` alone counted it as the model's failure: the summary's totals (0 errors) and "most failed checks",
the ISR/CSR plot, the terminal's "errored" line, and the baseline, which called the check a regression,
stored it as failed on an update, and paired it as failed.
"""

from __future__ import annotations

import json
import re

import pytest

from pytest_ifbench.reports.summary_file import pytest_ifbench_plots
from pytest_ifbench.testing import Reply
from tests._support import HELLO_LOWER, SHOUT, demo_suite, stub_args, write_suite
from tests.test_silent_holes import verdicts

LEFT_OUT = "judge openai/stub left this check out of its answer"
JUDGED = {"id": "j", "prompt": "hi", "checks": [
    {"id": "polite", "verifier": "ifbench.judge", "params": {"criterion": "is polite"}},
    {"id": "brief", "verifier": "ifbench.judge", "params": {"criterion": "is brief"}}]}


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch):
    """syrupy tells xdist workers by $PYTEST_XDIST_WORKER: the baseline runs must not inherit it."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


def _judge(stub_env, answer: dict[str, str]) -> None:
    """The judge answers ``answer`` (check id -> verdict), leaving out any other check, asked again too;
    the model says "hello there" (HELLO_LOWER passes, SHOUT fails)."""
    stub_env.reset()
    stub_env.add_rule("REQUIREMENTS", verdicts(answer))
    stub_env.add_rule("it leaves out", verdicts(answer))
    stub_env.add_rule("", Reply(content="hello there"))


def _run(pytester, stub_env, *extra: str):
    return pytester.runpytest("suites", *stub_args(stub_env, "--judge-model=openai/stub", "--ifbench-no-cache",
                                                   "-rA", *extra))


def _record(nodeid: str, **checks: bool | None) -> dict:
    """A record as the plugin writes it: check id -> passed (None: left undecided by the judge)."""
    return {"nodeid": nodeid, "benchmark": "demo", "status": "failed" if None in checks.values() or not all(
        checks.values()) else "passed", "error": None,
            "checks": [{"id": name, "check": name, "verifier": "ifbench.judge", "scored": True,
                        "passed": bool(passed), "error": LEFT_OUT if passed is None else None}
                       for name, passed in checks.items()]}


def test_the_summary_and_the_terminal_count_an_undecided_check_as_an_error(pytester, stub_env):
    write_suite(pytester.path, "suites/demo.yaml", demo_suite(HELLO_LOWER, SHOUT, JUDGED))
    _judge(stub_env, {"polite": "pass"})  # 'brief' left out
    result = _run(pytester, stub_env, "--ifbench-summary=sum.md")
    text = (pytester.path / "sum.md").read_text()
    totals = text.split("## Totals", 1)[1]
    assert re.search(r"^\| demo \| 3 \| 1 \|", totals, re.M), totals[:400]
    failed = text.split("most failed checks", 1)[1].split("\n#", 1)[0]
    assert "| upper |" in failed and "brief" not in failed, failed
    result.stdout.fnmatch_lines([f"1 instance(s) errored and are excluded from ISR/CSR; first: suites/demo.yaml::j: "
                                 f"*{LEFT_OUT}*"])


def test_the_plot_leaves_an_instance_with_an_undecided_check_out_of_its_rates(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    drawn: list[Figure] = []
    monkeypatch.setattr(Figure, "savefig", lambda figure, path: drawn.append(figure))
    assert pytest_ifbench_plots("demo", [_record("j", polite=True, brief=None)], tmp_path) is None, \
        "no instance could be scored: nothing to draw (it drew ISR and CSR 0%)"
    pytest_ifbench_plots("demo", [_record("ok", polite=True), _record("j", polite=True, brief=None)], tmp_path)
    [figure] = drawn
    heights = [bar.get_height() for bar in figure.axes[0].patches]
    assert heights == [1.0, 1.0], "ISR and CSR over the one scored instance"


def _stored(pytester) -> dict:
    [path] = (pytester.path / "suites" / "__baselines__" / "demo").glob("*.json")
    return json.loads(path.read_text())["checks"]


@pytest.mark.parametrize("stored", ["pass", "fail"])
def test_the_baseline_neither_compares_nor_stores_an_undecided_check(pytester, stub_env, stored):
    """Compared with a baseline where it passed, the undecided check was a regression ("passed in the
    baseline, fails now"); where it failed, a known failure that passes its subtest; an update stored it as
    failed, and passed it. It is an error each time, and its stored entry stays as it was."""
    write_suite(pytester.path, "suites/demo.yaml", demo_suite(JUDGED))
    _judge(stub_env, {"polite": "pass", "brief": stored})
    result = _run(pytester, stub_env, "--ifbench-baseline", "--snapshot-update")
    assert _stored(pytester) == {"polite": {"passed": True}, "brief": {"passed": stored == "pass"}}
    _judge(stub_env, {"polite": "pass"})  # 'brief' left out
    for update in ((), ("--snapshot-update",)):
        result = _run(pytester, stub_env, "--ifbench-baseline", *update)
        out = result.stdout.str()
        assert "regression" not in out.replace("0 regressions", ""), out
        result.stdout.fnmatch_lines(["SUBERROR[[]brief[]] suites/demo.yaml::j - check 'brief' could not be decided*",
                                     "ERROR suites/demo.yaml::j - *could not be decided*"])
        assert (result.parseoutcomes().get("errors"), result.parseoutcomes().get("failed")) == (2, None), out
        assert _stored(pytester) == {"polite": {"passed": True}, "brief": {"passed": stored == "pass"}}, update


def test_the_paired_gate_does_not_pair_an_instance_with_an_undecided_check(pytester, stub_env):
    write_suite(pytester.path, "suites/demo.yaml", demo_suite(JUDGED))
    _judge(stub_env, {"polite": "pass", "brief": "pass"})
    _run(pytester, stub_env, "--ifbench-baseline", "--snapshot-update")
    _judge(stub_env, {"polite": "pass"})  # 'brief' left out
    result = _run(pytester, stub_env, "--ifbench-baseline", "--ifbench-baseline-gate=paired")
    result.stdout.fnmatch_lines(["baseline: 0 regressions, 0 drops, *",
                                 "paired gate: no instance compared with its baseline",
                                 "SUBERROR[[]brief[]] suites/demo.yaml::j - check 'brief' could not be decided*"])
