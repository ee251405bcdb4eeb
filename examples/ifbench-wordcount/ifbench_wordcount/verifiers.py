"""``wordcount.max_words``: the reply has at most ``max`` words."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pytest_ifbench import Param, Registry, Verdict

VERIFIER = "wordcount.max_words"

_WORD = re.compile(r"\b[\w'-]+\b")


def count_words(text: str) -> int:
    """Words as the core's ``ifbench.word_count`` counts them: runs of letters, digits, ``'`` and ``-``."""
    return len(_WORD.findall(text))


def register(registry: Registry) -> None:
    """Add the benchmark's verifier (``Benchmark(verifiers=...)`` names this function)."""

    @registry.verifier(
        VERIFIER,
        params={"max": Param(int, min=1, description="the most words the reply may have")},
        version="1",
        description="The reply has at most `max` words.",
    )
    def max_words(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
        words, limit = count_words(text), params["max"]
        if words <= limit:
            evidence = f"{words} words (limit {limit})"
        else:
            evidence = f"{words} words, {words - limit} over the limit of {limit}"
        return Verdict(passed=words <= limit, evidence=evidence, details={"words": words, "max": limit})
