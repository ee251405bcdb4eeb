"""Regular-expression checks: the pattern must (or must not) match, with counts."""

from __future__ import annotations

from .._params import Param, ParamError
from .._types import Verdict
from ._patterns import DOTALL, IGNORECASE, MULTILINE, VERBOSE, BoundedPattern, compile_pattern

_FLAGS = {"i": IGNORECASE, "m": MULTILINE, "s": DOTALL, "x": VERBOSE}


def _compile(params) -> BoundedPattern:
    flags = 0
    for letter in params["flags"]:
        if letter not in _FLAGS:
            raise ParamError("flags", f"unknown regex flag {letter!r} (use i, m, s, x)")
        flags |= _FLAGS[letter]
    return compile_pattern(params["pattern"], flags)


def _validate(params) -> None:
    _compile(params)
    if params["min_count"] > params["max_count"]:
        raise ParamError("min_count", f"must be <= max_count ({params['max_count']}), got {params['min_count']}")


def register(registry) -> None:
    @registry.verifier(
        "ifbench.regex",
        params={
            "pattern": Param(str),
            "flags": Param(str, default="", description="any of i, m, s, x"),
            "min_count": Param(int, default=1, min=0),
            "max_count": Param(int, default=10**9, min=0),
            "target": Param(str, default="response", choices=("response", "code")),
        },
        kind="regex",
        check_params=_validate,
        description="The pattern occurs between min_count and max_count times (max_count 0: must not occur).",
    )
    def regex(text, params, ctx):
        if params["target"] == "code":
            from .._text import extract_code

            text = extract_code(text)
        matches = list(_compile(params).finditer(text))
        n = len(matches)
        ok = params["min_count"] <= n <= params["max_count"]
        shown = "; ".join(repr(m.group(0)[:60]) for m in matches[:3])
        evidence = f"{n} match(es) of /{params['pattern']}/ (required {params['min_count']}..{params['max_count']})"
        if shown:
            evidence += f": {shown}"
        return Verdict(passed=ok, evidence=evidence)
