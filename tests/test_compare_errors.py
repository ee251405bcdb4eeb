"""``ifbench compare``: instances the new run errored on cannot carry it past the gate.

An instance NEW errored on is never paired, so a new model whose failures became errors -- a provider
failing on exactly those prompts, or replies that talk a lone judge into leaving their failing checks out --
left only its passing instances to compare: "no significant regression", exit 0 under
``--fail-on-regression``. The comparison now also pairs those instances at NEW's worst, and the gate fails
when that worst case is a significant drop.
"""

from __future__ import annotations

import json

import pytest

from pytest_ifbench.testing import Fault
from tests._support import stub_args
from tests.test_compare import FLIPPED, _compare, _suite


@pytest.fixture
def suite(pytester):
    path = pytester.path / "suites" / "cmp.yaml"
    path.parent.mkdir()
    path.write_text(_suite(), encoding="utf-8")
    return path


def _run(pytester, stub_server, name: str, model: str) -> str:
    pytester.runpytest("suites", *stub_args(stub_server, f"--ifbench-results={name}", f"--model={model}",
                                            "--ifbench-max-attempts=1", "--ifbench-no-cache"))
    return str(pytester.path / name)


def test_a_new_run_erroring_where_the_base_passed_fails_the_gate(suite, pytester, stub_server, capsys):
    base = _run(pytester, stub_server, "base.json", "openai/old")
    stub_server.inject_faults(*[Fault(kind="status", status=500, message="down")] * FLIPPED, match="lowercase")
    new = _run(pytester, stub_server, "new.json", "openai/new")
    errored = [r for r in json.loads((pytester.path / "new.json").read_text())["instances"] if r["status"] == "error"]
    assert len(errored) == FLIPPED, "the 12 format instances errored in the new run"
    capsys.readouterr()
    out_md = pytester.path / "report.md"
    assert _compare(base, new, "--fail-on-regression", "--out", str(out_md)) == 1, "was 0: 8 pairs, no change"
    text = capsys.readouterr().out
    text_lines = text.splitlines()
    paired = next(line.split() for line in text_lines if line.split()[:2] == ["all", "ISR"])
    assert paired[2:6] == ["8", "100.0%", "100.0%", "+0.0"], "the paired instances alone show no change"
    assert ("at the new run's worst: the instances it errored on paired as failed (every undecided check "
            "failed):") in text_lines
    assert any(line.startswith(f"  cmp (the {FLIPPED} instances it errored on failed) ISR (20 paired): 100.0% -> "
                               "40.0%, -60.0 pts") and line.endswith("(exact McNemar, +0/-12) worse")
               for line in text_lines), text
    verdict = text_lines[-2]
    assert verdict.startswith(f"no significant regression at alpha 0.05 among the paired "
                              f"instances; but {new} errored on instances {base} scored, and had they failed: cmp "
                              "ISR -60.0 pts ±11.2 [-83.5, -36.5] (p <0.001, adjusted 0.001), cmp CSR -60.0 pts"), \
        verdict
    assert verdict.endswith("(p <0.001, adjusted 0.001) -- nothing says they did not regress"), verdict
    assert "## At the new run's worst" in out_md.read_text()
    assert _compare(new, base, "--fail-on-regression") == 0, "errors in the base are no regression of the new run"


def test_a_few_errors_that_could_not_hide_a_significant_drop_leave_the_gate_open(suite, pytester, stub_server,
                                                                                  capsys):
    base = _run(pytester, stub_server, "base.json", "openai/old")
    stub_server.inject_faults(Fault(kind="status", status=500, message="down"), match="lowercase please 3")
    new = _run(pytester, stub_server, "new.json", "openai/new")
    capsys.readouterr()
    assert _compare(base, new, "--fail-on-regression") == 0
    text = capsys.readouterr().out
    assert "  cmp (the 1 instance it errored on failed) ISR (20 paired): 100.0% -> 95.0%, -5.0 pts" in text
    assert text.splitlines()[-1] == (f"no significant regression at alpha 0.05, not even had "
                                     f"the instances {new} errored on failed")


def test_the_run_gate_fails_on_what_its_errors_could_hide(suite, pytester, stub_server):
    """``--baseline-results … --ifbench-fail-on-regression`` says it too (pytest's own status already fails a
    run with errors; the line says why the gate does)."""
    base = _run(pytester, stub_server, "base.json", "openai/old")
    stub_server.inject_faults(*[Fault(kind="status", status=500, message="down")] * FLIPPED, match="lowercase")
    result = pytester.runpytest("suites", *stub_args(stub_server, "--model=openai/new", "--ifbench-max-attempts=1",
                                                     "--ifbench-no-cache", f"--baseline-results={base}",
                                                     "--ifbench-fail-on-regression"))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*among the paired instances; but * errored on instances * scored, and had they "
                                 "failed: cmp ISR -60.0 pts*", "--ifbench-fail-on-regression: the run fails (exit 1)"])
