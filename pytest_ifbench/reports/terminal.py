"""The end-of-session terminal summary: per-benchmark metric tables."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from ..suite.run_settings import judge_warning, settings_lines
from .metrics import MetricTable, core_tables, errored, headline_metrics, render_table

_TABLES_KEY = pytest.StashKey[tuple[tuple[str, ...], dict[str, list[MetricTable]]]]()


def benchmark_tables(config: pytest.Config, records: Sequence[Mapping[str, Any]]) -> dict[str, list[MetricTable]]:
    """Every benchmark's tables (the core's and its own), computed once per set of records: the results
    file, the terminal and the summary file all read them at the end of a run."""
    key = tuple(sorted(str(r.get("nodeid")) for r in records))
    cached = config.stash.get(_TABLES_KEY, None)
    if cached is not None and cached[0] == key:
        return cached[1]
    out = _benchmark_tables(config, records)
    config.stash[_TABLES_KEY] = (key, out)
    return out


def run_metrics(config: pytest.Config, records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The results file's ``metrics`` entry: per benchmark the core's ISR, CSR and score
    (:func:`~.metrics.headline_metrics`) and every estimate its own tables carry (``MetricTable.estimates``)."""
    out = headline_metrics(records)
    for benchmark, tables in benchmark_tables(config, records).items():
        extra = {name: estimate.to_json() for table in tables for name, estimate in table.estimates.items()}
        if extra:
            out.setdefault(benchmark, {})["headline"] = extra
    return out


def _benchmark_tables(config: pytest.Config, records: Sequence[Mapping[str, Any]]) -> dict[str, list[MetricTable]]:
    by_benchmark: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        by_benchmark[record["benchmark"]].append(record)
    out = {}
    for benchmark in sorted(by_benchmark):
        group = sorted(by_benchmark[benchmark], key=lambda r: r["nodeid"])
        tables = core_tables(benchmark, group)
        for extra in config.hook.pytest_ifbench_metrics(benchmark=benchmark, records=list(group)):
            tables.extend(extra or [])
        out[benchmark] = tables
    return out


def summary_lines(config: pytest.Config, records: Sequence[Mapping[str, Any]]) -> list[str]:
    from .._state import STATE_KEY

    state = config.stash[STATE_KEY]
    lines = [f"model: {state.model_name}    judges: {', '.join(state.judge_names)}"]
    if state.responses is not None:
        what = ("pre-recorded responses" if state.responses or not config.getoption("ifbench_recorded_trajectories")
                else "recorded agent trajectories")
        lines[0] = f"model: ({what})    judges: {', '.join(state.judge_names)}"
    else:
        lines.extend(settings_lines(records))
    warning = judge_warning(config, records)
    if warning:
        lines.append(warning)
    for tables in benchmark_tables(config, records).values():
        for table in tables:
            lines.append("")
            lines.extend(render_table(table))
    lines.extend(time_lines(records))
    errors = [r for r in records if errored(r)]
    if errors:
        lines.append("")
        lines.append(f"{len(errors)} instance(s) errored and are excluded from ISR/CSR; first: {errors[0]['nodeid']}: "
                     f"{error_text(errors[0])[:200]}")
    if state.unmatched_responses:
        shown = ", ".join(state.unmatched_responses[:5])
        more = f" and {len(state.unmatched_responses) - 5} more" if len(state.unmatched_responses) > 5 else ""
        lines.append("")
        lines.append(f"warning: {len(state.unmatched_responses)} recorded response id(s) matched no selected "
                     f"instance: {shown}{more}")
    target = config.getoption("ifbench_results")
    if target:
        from .._state import RESULTS_PROBLEM_KEY

        problem = config.stash.get(RESULTS_PROBLEM_KEY, None)
        lines.append("")
        lines.append(f"warning: results file {target} {problem}" if problem else f"results: {target}")
    return lines


def error_text(record: Mapping[str, Any]) -> str:
    """Why an errored instance (:func:`~.metrics.errored`) errored: its error, or the checks it left undecided
    (a record whose judge left a check out has no ``error`` of its own)."""
    undecided = "; ".join(f"{c.get('id')}: {c.get('error')}" for c in record.get("checks", []) if c.get("error"))
    return str(record.get("error") or f"undecided checks: {undecided}")


def time_lines(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Where the time went: generation vs verification, and for agent runs model vs tools."""
    generation = sum((r.get("durations") or {}).get("generation", 0.0) for r in records)
    verification = sum((r.get("durations") or {}).get("verification", 0.0) for r in records)
    if not generation and not verification:
        return []
    lines = ["", f"time: generation {generation:.1f} s (summed over instances; they overlap), "
                 f"verification {verification:.1f} s"]
    agents = [r["agent"] for r in records if r.get("agent")]
    if agents:
        steps = sum(a.get("steps") or 0 for a in agents)
        model = sum(a.get("model_seconds") or 0.0 for a in agents)
        tools = sum(a.get("tool_seconds") or 0.0 for a in agents)
        stops: dict[str, int] = defaultdict(int)
        for a in agents:
            stops[str(a.get("stop_reason"))] += 1
        ended = ", ".join(f"{reason} {n}" for reason, n in sorted(stops.items()))
        lines.append(f"agent runs: {len(agents)} ({steps} steps; model {model:.1f} s, tools {tools:.1f} s; "
                     f"stopped: {ended})")
    return lines
