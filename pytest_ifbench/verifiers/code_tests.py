"""Functional correctness: unit tests run against the extracted code in the sandbox."""

from __future__ import annotations

from .._params import Param
from .._types import Verdict


def _limits(ctx):
    from ..sandbox import SandboxLimits

    return SandboxLimits(**dict(ctx.sandbox)) if ctx is not None and ctx.sandbox else SandboxLimits()


def _verdict(run) -> Verdict:
    failed = [o.name for o in run.outcomes if not o.passed]
    return Verdict(
        passed=run.passed, evidence=run.summary(),
        details={"failed_tests": failed, "tests": len(run.outcomes), "limit": run.result.limit},
    )


def register(registry) -> None:
    @registry.verifier(
        "ifbench.unit_tests",
        params={
            "tests": Param(list, items=str, description="assert snippets run after the code"),
            "setup": Param(str, default=""),
        },
        kind="unittest",
        target="code",
        description="Every test snippet passes against the extracted code (sandboxed).",
    )
    def unit_tests(code, params, ctx):
        from ..sandbox import run_assert_tests

        return _verdict(run_assert_tests(code, params["tests"], setup=params["setup"], limits=_limits(ctx)))

    @registry.verifier(
        "ifbench.stdio_tests",
        params={"cases": Param(list, items=dict, description="[{input, output}]")},
        kind="unittest",
        target="code",
        description="The extracted program maps every input to its expected output (sandboxed).",
    )
    def stdio_tests(code, params, ctx):
        from ..sandbox import run_stdio_tests

        return _verdict(run_stdio_tests(code, params["cases"], limits=_limits(ctx)))
