"""The generation settings a run used, and the flags that override a suite's.

A benchmark's importer may default an official file to its authors' settings
(token budget, temperature, reasoning) through the suite's
``defaults.generation``; ``--ifbench-temperature``, ``--ifbench-max-tokens`` and
``--ifbench-reasoning-effort`` then win over every suite of the run. What was
actually sent is recorded per instance (``generation`` in the results file) and
summarised per benchmark, so a number can always be traced to its settings.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from .._types import Suite

#: Flag destination -> ``generation`` field.
_FLAGS = {"ifbench_temperature": "temperature", "ifbench_max_tokens": "max_tokens",
          "ifbench_reasoning_effort": "reasoning_effort"}

#: Fields shown in the summary line, in this order.
_SHOWN = ("temperature", "max_tokens", "reasoning_effort", "top_p", "seed", "samples")


def add_options(group: Any) -> None:
    from .format import REASONING_EFFORTS

    group.addoption("--ifbench-temperature", dest="ifbench_temperature", type=float, default=None, metavar="T",
                    help="sampling temperature for every instance (overrides the suites' generation.temperature)")
    group.addoption("--ifbench-max-tokens", dest="ifbench_max_tokens", type=_positive_int, default=None, metavar="N",
                    help="completion token limit for every instance (overrides generation.max_tokens)")
    group.addoption("--ifbench-reasoning-effort", dest="ifbench_reasoning_effort", choices=REASONING_EFFORTS,
                    default=None, help="reasoning effort for every instance (overrides generation.reasoning_effort)")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def generation_overrides(config: pytest.Config) -> dict[str, Any]:
    """The ``generation`` fields set on the command line."""
    return {field: config.getoption(dest) for dest, field in _FLAGS.items() if config.getoption(dest) is not None}


def apply_overrides(suite: Suite, overrides: Mapping[str, Any]) -> Suite:
    if not overrides:
        return suite
    instances = tuple(dataclasses.replace(i, generation=dataclasses.replace(i.generation, **overrides))
                      for i in suite.instances)
    return dataclasses.replace(suite, instances=instances)


def describe(generation: Mapping[str, Any]) -> str:
    """``temperature 0.0, max_tokens 40960, reasoning_effort high``: unset (provider default) fields left out."""
    parts = [f"{key} {generation[key]}" for key in _SHOWN
             if generation.get(key) is not None and not (key == "samples" and generation[key] == 1)]
    return ", ".join(parts) or "provider defaults"


def difference(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> str:
    """The settings two records' ``generation`` entries differ in: ``temperature 0.0 vs 0.9, max_tokens 200 vs
    256`` (what ``ifbench compare`` and ``ifbench merge`` say when they refuse a pair of runs)."""
    return ", ".join(f"{key} {ours.get(key)!r} vs {theirs.get(key)!r}" for key in sorted({*ours, *theirs})
                     if ours.get(key) != theirs.get(key))


def settings_by_benchmark(records: Sequence[Mapping[str, Any]]) -> dict[str, list[tuple[str, int]]]:
    """benchmark -> [(described settings, number of instances)], most common first."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for record in records:
        if record.get("generation"):
            counts[record["benchmark"]][describe(record["generation"])] += 1
    return {benchmark: c.most_common() for benchmark, c in sorted(counts.items())}


def settings_lines(records: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = []
    for benchmark, settings in settings_by_benchmark(records).items():
        if len(settings) == 1:
            lines.append(f"generation ({benchmark}): {settings[0][0]}")
        else:
            shown = "; ".join(f"{text} ({n})" for text, n in settings)
            lines.append(f"generation ({benchmark}, by instances): {shown}")
    return lines


def judge_warning(config: pytest.Config, records: Sequence[Mapping[str, Any]]) -> str | None:
    """One line when judged checks were graded without a --judge-model: by the model under test itself, or,
    when recorded replies were scored, by the model that stood in as the judge (the embedded one by default)."""
    if config.getoption("ifbench_judge_models") or not any(r.get("judge_calls") for r in records):
        return None
    recorded = _recorded(config)
    if not recorded:
        return ("warning: no --judge-model given, so the model under test judged its own answers; "
                "pass --judge-model for comparable judged scores")
    judges = sorted({str(j) for r in records if r.get("judge_calls") for j in r.get("judges") or ()})
    if not judges:
        from ..models.local import DEFAULT_LOCAL_MODEL

        judges = [config.getoption("ifbench_model") or DEFAULT_LOCAL_MODEL]
    named = ", ".join(f"the embedded model {j}" if j.startswith("local/") else f"{j} (--model)" for j in judges)
    return (f"warning: no --judge-model given: {named} judged the {recorded}; "
            "pass --judge-model for comparable judged scores")


def _recorded(config: pytest.Config) -> str:
    """What a run re-scored instead of calling the model under test ("" when it called it)."""
    responses = config.getoption("ifbench_responses", None)
    trajectories = config.getoption("ifbench_recorded_trajectories", None)
    what = []
    # `ifbench score --trajectories` alone passes an empty responses file: those are no recorded responses
    if responses and not (trajectories and _empty(config, responses)):
        what.append("recorded responses")
    if trajectories:
        what.append("recorded agent trajectories")
    return " and ".join(what)


def _empty(config: pytest.Config, path: str) -> bool:
    from pathlib import Path

    try:
        return (Path(config.invocation_params.dir) / path).stat().st_size == 0  # (an absolute path stays itself)
    except OSError:
        return False
