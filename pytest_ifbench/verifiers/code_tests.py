"""Functional correctness: unit tests run against the extracted code in the sandbox."""

from __future__ import annotations

from .._params import Param, ParamError
from .._text import short_repr
from .._types import Verdict

#: The keys of a stdio case, both required strings: what the sandbox reads (``run_stdio_tests``).
#: A misspelt or missing one would otherwise read as "" ("expect no output") and fail every model.
_CASE_KEYS = ("input", "output")


def _limits(ctx):
    from ..sandbox import SandboxLimits

    return SandboxLimits(**dict(ctx.sandbox)) if ctx is not None and ctx.sandbox else SandboxLimits()


def _check_tests(params) -> None:
    if not params["tests"]:
        raise ParamError("tests", "must hold at least one test (with none the check can never pass)")


def _check_cases(params) -> None:
    cases = params["cases"]
    if not cases:
        raise ParamError("cases", "must hold at least one case (with none the check can never pass)")
    for index, case in enumerate(cases):  # each is a mapping: the schema's items=dict checked that
        unknown = sorted((k for k in case if k not in _CASE_KEYS), key=short_repr)
        if unknown:
            name = unknown[0] if isinstance(unknown[0], str) else short_repr(unknown[0])
            raise ParamError(f"cases[{index}].{name}", f"unknown key (known: {', '.join(_CASE_KEYS)})")
        for key in _CASE_KEYS:
            if key not in case:
                raise ParamError(f"cases[{index}].{key}", "required key is missing")
            if not isinstance(case[key], str):
                raise ParamError(f"cases[{index}].{key}", f"expected str, got {short_repr(case[key])}")


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
        check_params=_check_tests,
        description="Every test snippet passes against the extracted code (sandboxed).",
    )
    def unit_tests(code, params, ctx):
        from ..sandbox import run_assert_tests

        return _verdict(run_assert_tests(code, params["tests"], setup=params["setup"], limits=_limits(ctx)))

    @registry.verifier(
        "ifbench.stdio_tests",
        params={"cases": Param(list, items=dict, description="[{input, output}], both strings")},
        kind="unittest",
        target="code",
        check_params=_check_cases,
        description="The extracted program maps every input to its expected output (sandboxed).",
    )
    def stdio_tests(code, params, ctx):
        from ..sandbox import run_stdio_tests

        return _verdict(run_stdio_tests(code, params["cases"], limits=_limits(ctx)))
