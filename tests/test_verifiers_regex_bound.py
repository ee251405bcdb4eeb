"""Suite-supplied patterns are matched with a time bound: past it the check is not met, with the pattern named;
it never hangs, and a reply cannot turn a check into an error (an instance left out of the scores)."""

from __future__ import annotations

import json

import pytest

from pytest_ifbench._composition import default_registry
from pytest_ifbench._params import ParamError
from pytest_ifbench._registry import VerifyContext
from pytest_ifbench._types import CheckSpec
from pytest_ifbench._verify import evaluate
from pytest_ifbench.verifiers._patterns import PATTERN_TIMEOUT, PatternTimeout, compile_pattern

REG = default_registry()
#: Exponential backtracking for the regex engine too (nested repetition that can split x's every way).
CATASTROPHIC = r"(x+x+)+y"
TEXT = "x" * 5000


def test_a_catastrophic_pattern_stops_at_the_bound_with_the_pattern_named():
    pattern = compile_pattern(CATASTROPHIC)
    with pytest.raises(PatternTimeout, match=rf"/\(x\+x\+\)\+y/ ran past its {PATTERN_TIMEOUT:g} s bound"):
        pattern.search(TEXT)
    with pytest.raises(PatternTimeout):
        list(pattern.finditer(TEXT))


def test_the_check_is_not_met_with_the_pattern_named_and_its_neighbours_still_verify():
    """It was an error: the reply that made the pattern run past its bound had its instance left out of
    the scores (errors are excluded), so a reply could trade a check it did not meet for no score at all."""
    checks = [CheckSpec(id="slow", verifier="ifbench.regex", params={"pattern": CATASTROPHIC}),
              CheckSpec(id="fine", verifier="ifbench.regex", params={"pattern": "x{3}"})]
    checks = [CheckSpec(id=c.id, verifier=c.verifier, params=REG.get(c.verifier).validate(c.params)) for c in checks]
    slow, fine = evaluate(checks, TEXT, VerifyContext(registry=REG))
    assert slow.error is None and not slow.verdict.passed, slow
    assert slow.verdict.evidence.startswith(f"not met: the pattern /{CATASTROPHIC}/ ran past its"), slow.verdict
    assert fine.verdict is not None and fine.verdict.passed


def test_ifbench_verify_reports_the_unmet_check_and_finishes(tmp_path):
    from pytest_ifbench.cli.main import main

    lines = [{"verifier": "ifbench.regex", "params": {"pattern": CATASTROPHIC}, "response": TEXT},
             {"verifier": "ifbench.regex", "params": {"pattern": "(a+)+$"}, "response": "a" * 40 + "!"}]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["verify", "--in", str(source), "--out", str(tmp_path / "out.jsonl")]) == 0  # nothing errored
    nested, anchored = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert nested["passed"] is False and nested.get("error") is None and "ran past its" in nested["evidence"]
    assert anchored["passed"] is False and anchored.get("error") is None


@pytest.mark.parametrize(("verifier", "params", "name"), [
    ("ifbench.regex", {"pattern": "("}, "pattern"),
    ("ifbench.tool_called", {"tool": "Read", "arguments": "[unclosed"}, "arguments"),
    ("ifbench.workspace_command", {"command": "true", "stdout_pattern": "(?P<"}, "stdout_pattern"),
])
def test_invalid_patterns_still_name_their_param(verifier, params, name):
    with pytest.raises(ParamError) as info:
        REG.get(verifier).validate(params)
    assert info.value.field == name and "invalid regular expression" in str(info.value)
