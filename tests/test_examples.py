"""The examples in examples/ work as documented."""

from __future__ import annotations

import shutil
from pathlib import Path

from pytest_ifbench.testing import Reply
from tests._support import stub_args

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_third_party_verifier_through_hook(pytester, stub_env):
    shutil.copytree(EXAMPLES, pytester.path / "examples")
    stub_env.add_rule("sea", Reply(content="The sea is wide. It is also deep."))
    result = pytester.runpytest("examples", *stub_args(stub_env), "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*examples/custom_verifier.yaml::two-sentences PASSED*"])
    assert stub_env.calls == 1, "the recorded instance needs no model"


def test_third_party_verifier_failure_message(pytester, stub_env):
    shutil.copytree(EXAMPLES, pytester.path / "examples")
    stub_env.add_rule("sea", Reply(content="The sea."))
    result = pytester.runpytest("examples", *stub_args(stub_env))
    result.stdout.fnmatch_lines(["*check 'two' failed*", "*1 sentence(s) (required 2..2)*"])
