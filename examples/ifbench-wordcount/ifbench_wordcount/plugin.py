"""The ``wordcount`` benchmark plugin: a verifier, a metric table and a suite generator.

Published under the ``pytest_ifbench.benchmarks`` entry-point group as
``wordcount`` (see pyproject.toml), so installing the package is all it takes:
pytest and the ``ifbench`` command both load this module, and
``pytest -p no:wordcount`` switches it off. Hooks are plain functions named
after the hook specifications; only the public API (``pytest_ifbench``) is used.

* ``wordcount.max_words``: the reply has at most ``max`` words;
* a metric table for ``benchmark: wordcount``: replies, mean words per reply and
  the share of replies within their word limit, overall and per category;
* ``ifbench generate wordcount``: a seeded generator that writes a suite file.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_ifbench import MetricTable, Param, Registry, Verdict

BENCHMARK = "wordcount"
VERIFIER = "wordcount.max_words"

_WORD = re.compile(r"\b[\w'-]+\b")


def count_words(text: str) -> int:
    """Words as the core's ``ifbench.word_count`` counts them: runs of letters, digits, ``'`` and ``-``."""
    return len(_WORD.findall(text))


# --------------------------------------------------------------------------- verifier


def pytest_ifbench_register_verifiers(registry: Registry) -> None:
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


# --------------------------------------------------------------------------- metrics


def pytest_ifbench_metrics(benchmark: str, records: list[dict[str, Any]]) -> list[MetricTable] | None:
    if benchmark != BENCHMARK:
        return None
    return [length_table(records)]


def _replies(record: Mapping[str, Any]) -> list[str]:
    """The verified text of every reply of an instance (one per turn that ran)."""
    return [(turn.get("response") or {}).get("text") or "" for turn in record.get("turns") or []]


def _limit_checks(record: Mapping[str, Any]) -> list[bool]:
    """Whether each scored ``wordcount.max_words`` check of an instance passed."""
    return [bool(check.get("passed")) for check in record.get("checks") or []
            if check.get("verifier") == VERIFIER and check.get("scored", True)]


def _row(label: str, records: Sequence[Mapping[str, Any]]) -> tuple[Any, ...]:
    ok = [r for r in records if r.get("status") != "error"]
    words = [count_words(text) for r in ok for text in _replies(r)]
    within = [passed for r in ok for passed in _limit_checks(r)]
    mean = f"{statistics.fmean(words):.1f}" if words else "-"
    share = f"{100 * sum(within) / len(within):.1f}%" if within else "-"
    return (label, len(records), len(records) - len(ok), len(words), mean, share)


def length_table(records: Sequence[Mapping[str, Any]]) -> MetricTable:
    """Mean words per reply and share of word-limit checks met, overall and by category."""
    by_category: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("category"):
            by_category[str(record["category"])].append(record)
    rows = [_row("all", records)]
    rows += [_row(f"category={name}", group) for name, group in sorted(by_category.items())]
    return MetricTable(
        title="wordcount: reply length",
        columns=("", "items", "errors", "replies", "mean words", "within limit"),
        rows=tuple(rows),
        notes=(f"within limit: share of {VERIFIER} checks passed; errored instances are excluded",),
    )


# --------------------------------------------------------------------------- ifbench generate wordcount


def pytest_ifbench_generators(generators: dict[str, Any]) -> None:
    def generate(argv: list[str]) -> int:
        from .generate import main

        return main(argv)

    generators[BENCHMARK] = generate
