"""Sandbox tests need the OS sandbox (bubblewrap): without it they skip with its one-line reason --
except modules that set ``NEEDS_SANDBOX = False`` (they test the refusal itself, or pure parsing)."""

from __future__ import annotations

import pytest

from pytest_ifbench.sandbox import sandbox_problem


@pytest.fixture(autouse=True)
def _require_the_sandbox(request: pytest.FixtureRequest) -> None:
    if getattr(request.module, "NEEDS_SANDBOX", True):
        problem = sandbox_problem()
        if problem is not None:
            pytest.skip(problem)
