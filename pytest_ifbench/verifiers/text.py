"""Plain-Python checks on the reply text."""

from __future__ import annotations

import json
import re

from .._params import Param, ParamError
from .._types import Verdict

_WORD = re.compile(r"\b[\w'-]+\b")


def _snippet(text: str, limit: int = 160) -> str:
    text = text.strip().replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_word_bounds(params) -> None:
    if params["min"] > params["max"]:
        raise ParamError("min", f"must be <= max ({params['max']}), got {params['min']}")


def register(registry) -> None:
    @registry.verifier(
        "ifbench.word_count",
        params={"min": Param(int, default=0, min=0), "max": Param(int, default=10**9, min=0)},
        check_params=_check_word_bounds,
        description="The reply has between min and max words (inclusive).",
    )
    def word_count(text, params, ctx):
        n = len(_WORD.findall(text))
        ok = params["min"] <= n <= params["max"]
        return Verdict(passed=ok, evidence=f"{n} words (required {params['min']}..{params['max']})")

    @registry.verifier(
        "ifbench.keywords",
        params={
            "include": Param(list, default=[], items=str),
            "exclude": Param(list, default=[], items=str),
            "case_sensitive": Param(bool, default=False),
        },
        description="Every `include` keyword appears and no `exclude` keyword does (whole words).",
    )
    def keywords(text, params, ctx):
        flags = 0 if params["case_sensitive"] else re.IGNORECASE

        def found(keyword: str) -> bool:
            return re.search(rf"(?<!\w){re.escape(keyword)}(?!\w)", text, flags) is not None

        missing = [k for k in params["include"] if not found(k)]
        present = [k for k in params["exclude"] if found(k)]
        problems = []
        if missing:
            problems.append(f"missing: {', '.join(missing)}")
        if present:
            problems.append(f"forbidden present: {', '.join(present)}")
        return Verdict(passed=not problems, evidence="; ".join(problems) or "all keyword constraints hold")

    @registry.verifier(
        "ifbench.starts_with",
        params={"prefix": Param(str), "strip": Param(bool, default=True)},
        description="The reply starts with `prefix`.",
    )
    def starts_with(text, params, ctx):
        body = text.lstrip() if params["strip"] else text
        ok = body.startswith(params["prefix"])
        return Verdict(passed=ok, evidence=f"reply starts: {_snippet(body[:80])!s}")

    @registry.verifier(
        "ifbench.ends_with",
        params={"suffix": Param(str), "strip": Param(bool, default=True)},
        description="The reply ends with `suffix`.",
    )
    def ends_with(text, params, ctx):
        body = text.rstrip() if params["strip"] else text
        ok = body.endswith(params["suffix"])
        return Verdict(passed=ok, evidence=f"reply ends: {_snippet(body[-80:])}")

    @registry.verifier(
        "ifbench.json",
        params={"required_keys": Param(list, default=[], items=str)},
        description="The whole reply (or its only fenced block) is a JSON object with the required keys.",
    )
    def is_json(text, params, ctx):
        body = text.strip()
        fenced = re.fullmatch(r"```(?:json)?\s*\n(.*)\n```", body, re.DOTALL)
        if fenced:
            body = fenced.group(1)
        try:
            value = json.loads(body)
        except json.JSONDecodeError as exc:
            return Verdict(passed=False, evidence=f"not JSON: {exc}; reply: {_snippet(body)}")
        if not isinstance(value, dict):
            return Verdict(passed=False, evidence=f"JSON is a {type(value).__name__}, not an object")
        if params["required_keys"]:
            missing = [k for k in params["required_keys"] if k not in value]
            if missing:
                return Verdict(passed=False, evidence=f"missing keys: {', '.join(missing)}")
        return Verdict(passed=True, evidence="valid JSON object")

    @registry.verifier(
        "ifbench.case",
        params={"mode": Param(str, choices=("upper", "lower"))},
        description="Every letter of the reply is upper (or lower) case.",
    )
    def case(text, params, ctx):
        wrong = [c for c in text if c.isalpha() and (c.islower() if params["mode"] == "upper" else c.isupper())]
        return Verdict(
            passed=not wrong,
            evidence=f"{len(wrong)} letters in the wrong case, e.g. {''.join(wrong[:10])!r}" if wrong else "ok",
        )
