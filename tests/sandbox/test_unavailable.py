"""Without the OS sandbox nothing runs unconfined: every front end raises its one-line reason, and a
unit-test check becomes an error carrying exactly that line."""

from __future__ import annotations

import pytest

from pytest_ifbench import sandbox
from pytest_ifbench._composition import default_registry
from pytest_ifbench._registry import VerifyContext
from pytest_ifbench._types import CheckSpec
from pytest_ifbench._verify import evaluate
from pytest_ifbench.sandbox import SandboxUnavailable, _namespaces, _process

NEEDS_SANDBOX = False
REASON = "bubblewrap (bwrap) is not installed: apt-get install bubblewrap (or dnf install bubblewrap)"


@pytest.fixture
def no_sandbox(monkeypatch):
    monkeypatch.setattr(_namespaces, "_probe_cache", [REASON])

    def refuse(*args, **kwargs):
        raise AssertionError("a process was started without the sandbox")

    monkeypatch.setattr(_process.subprocess, "Popen", refuse)


def test_every_front_end_raises_the_reason(no_sandbox):
    for call in (lambda: sandbox.run_python("print(1)"),
                 lambda: sandbox.run_assert_tests("x = 1", ["assert x == 1"]),
                 lambda: sandbox.run_stdio_tests("print(1)", [{"input": "", "output": "1"}])):
        with pytest.raises(SandboxUnavailable) as info:
            call()
        assert str(info.value) == REASON


@pytest.mark.parametrize(("verifier", "params"), [
    ("ifbench.unit_tests", {"tests": ["assert add(1, 2) == 3"]}),
    ("ifbench.stdio_tests", {"cases": [{"input": "", "output": "3"}]}),
])
def test_a_unit_test_check_errors_with_the_one_line_reason(no_sandbox, verifier, params):
    registry = default_registry()
    check = CheckSpec(id="functional", verifier=verifier, params=registry.get(verifier).validate(params))
    (outcome,) = evaluate([check], "```python\ndef add(a, b):\n    return a + b\n```",
                          VerifyContext(registry=registry))
    assert outcome.verdict is None and not outcome.passed
    assert outcome.error == REASON
