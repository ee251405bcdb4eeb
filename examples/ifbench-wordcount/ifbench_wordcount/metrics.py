"""The metric table for ``benchmark: wordcount``: replies, mean words per reply and the share of
replies within their word limit, overall and per category."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_ifbench import MetricTable

from .verifiers import VERIFIER, count_words


def tables(records: Sequence[Mapping[str, Any]]) -> list[MetricTable]:
    """The benchmark's tables (``Benchmark(metrics=...)`` names this function); the core passes only
    ``wordcount`` records."""
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
