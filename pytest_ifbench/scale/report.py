"""The reports of a merged run, written by the code a pytest run writes them with.

``ifbench merge`` has no pytest session, so :class:`MergeConfig` stands in for the
parts of ``pytest.Config`` the reporters read: the options a run would have had
(the results file, whether ``--judge-model`` was given), a stash holding the run's
model and judges, and the hooks of every installed benchmark plus the core's plot
(the ``ifbench`` command's plugin manager). :func:`write_reports` then writes the
results file (:meth:`~.merge.Merged.write`) with the ``metrics`` entry a run writes
(:func:`~..reports.terminal.run_metrics`), the summary beside it
(:func:`~..reports.summary_writer.write_summary`) and returns the terminal summary
(:func:`~..reports.terminal.summary_lines`): metrics recomputed over the union.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .merge import Merged


@dataclass(frozen=True, slots=True, kw_only=True)
class MergedState:
    """What the reporters read from a run's state."""

    model_name: str
    judge_names: list[str]
    responses: None = None
    unmatched_responses: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class _InvocationParams:
    dir: Path


class MergeConfig:
    """The ``pytest.Config`` surface the reporters use, for a merge."""

    def __init__(self, *, options: Mapping[str, Any], state: MergedState, directory: Path,
                 facts: list[str] | None = None) -> None:
        from .._state import STATE_KEY

        self._options = dict(options)
        self.stash = pytest.Stash()
        self.stash[STATE_KEY] = state  # type: ignore[assignment]
        self.invocation_params = _InvocationParams(dir=directory)
        self.hook = _hooks(_Facts(facts or []))

    def getoption(self, name: str, default: Any = None) -> Any:
        return self._options.get(name, default)


class _Facts:
    """The merge's own lines among the summary's facts (the shards whose shared cache failed)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def pytest_ifbench_summary_facts(self, config: Any) -> list[str]:
        return self.lines


def _hooks(facts: _Facts) -> Any:
    """The ``ifbench`` command's plugin manager with the core's plot (the summary reporter's) registered
    before the benchmarks, as under pytest, so the plots come in a run's order."""
    from .. import _hookspecs
    from .._composition import _CommandPluginManager, register_benchmarks
    from ..reports import summary_file

    manager = _CommandPluginManager("pytest")
    manager.add_hookspecs(_hookspecs)
    manager.register(summary_file, "ifbench_summary_file")
    manager.register(facts, "ifbench_merge_facts")
    register_benchmarks(manager)
    return manager.hook


def _where(part: Mapping[str, Any]) -> str:
    """A ``merged_from`` entry as the merge's lines name it: the file, and its shard when it was one."""
    return f"{part['file']}" + (f" (shard {part['shard']})" if part.get("shard") else "")


def shared_cache_warnings(merged: Merged) -> list[str]:
    """One line per problem a shard's shared cache had (from each file's ``shared_cache`` entry)."""
    out = []
    for part in merged.meta.get("merged_from") or ():
        shared = part.get("shared_cache") if isinstance(part.get("shared_cache"), dict) else {}
        out.extend(f"{_where(part)}: {text}" for text in shared.get("warnings") or () if isinstance(text, str))
    return out


def spending_facts(merged: Merged) -> list[str]:
    """What the shards paid under ``--ifbench-max-cost``: the total of their own limits and one line per
    shard that reached its limit; for shards sharing a ledger (``--ifbench-max-cost-ledger``, the entry's
    ``ledger``), that ledger's figures once (each shard's entry is the ledger as that shard finished: the
    last to finish saw the most)."""
    from ..models.spending import shared_ledgers, usd

    parts = [(part, part["spending_limit"]) for part in merged.meta.get("merged_from") or ()
             if isinstance(part.get("spending_limit"), dict)]
    own = [(part, entry) for part, entry in parts if not entry.get("ledger")]
    out = []
    if own:
        out.append(f"spending limits: {usd(sum(float(entry.get('spent') or 0) for _, entry in own))} paid by "
                   f"{sum(int(entry.get('calls') or 0) for _, entry in own)} call(s) in {len(own)} file(s)")
    for part, entry in own:
        if entry.get("refused"):
            out.append(f"**{_where(part)} reached its spending limit** ({usd(float(entry.get('spent') or 0))} of "
                       f"{usd(float(entry.get('limit') or 0))}): {entry['refused']} call(s) not made, their "
                       f"instances errored")
    for part, entry in parts:
        if entry.get("unread"):
            out.append(f"**{_where(part)} could not read the shared spending ledger at its end** ({entry['unread']}):"
                       f" what it paid last may be missing from the ledger's figures")
    for ledger, (last, files) in shared_ledgers(entry for _, entry in parts).items():
        if last.get("unread"):
            out.append(f"spending limit shared by {files} file(s) in {ledger}: no file could read its figures")
            continue
        figures = f"{usd(float(last.get('spent') or 0))} of {usd(float(last.get('limit') or 0))}"
        out.append(f"spending limit shared by {files} file(s) in {ledger}: {figures} paid by "
                   f"{int(last.get('calls') or 0)} call(s)")
        if last.get("refused"):
            out.append(f"**the run reached its shared spending limit** ({figures}): {last['refused']} call(s) not "
                       f"made, their instances errored")
    return out


def incomplete_facts(merged: Merged, shown: int = 20) -> list[str]:
    """The summary's lines for a merge that is not complete: the missing shards, the files whose run did not
    finish, and the instances not run (the first ``shown`` of them; the merged file lists all)."""
    out = [f"**shard {index} is missing**" for index in merged.missing]
    out.extend(f"**{part['file']} did not finish** (a journal: the instances it finished are merged)"
               for part in merged.meta.get("merged_from") or () if part.get("unfinished"))
    if merged.not_run:
        listed = ", ".join(f"`{nodeid}`" for nodeid in merged.not_run[:shown])
        more = f" and {len(merged.not_run) - shown} more (`not_run` in the merged file)" \
            if len(merged.not_run) > shown else ""
        out.append(f"**{len(merged.not_run)} instance(s) not run**: {listed}{more}")
    return out


def summary_path_for(out: Path) -> Path:
    """Where a run writing ``out`` puts its summary (``merged.json`` -> ``merged-summary.md``)."""
    stem = out.stem.replace("results", "summary") if "results" in out.stem else f"{out.stem}-summary"
    return out.with_name(stem + ".md")


def write_reports(merged: Merged, out: Path, summary: Path | None) -> list[str]:
    """Write the merged results file and summary; the terminal summary's lines (the merge's notes,
    :attr:`~.merge.Merged.notes`, are the command's to print: on stderr, with its other warnings)."""
    from ..reports.summary_writer import write_summary
    from ..reports.terminal import run_metrics, summary_lines

    records = list(merged.records)
    state = MergedState(model_name=str(merged.meta.get("model")), judge_names=list(merged.meta.get("judges") or []))
    config = MergeConfig(options={"ifbench_results": str(out), "ifbench_summary": str(summary or ""),
                                  "ifbench_judge_models": state.judge_names if merged.judge_given else None},
                         state=state, directory=Path.cwd(),
                         facts=[*incomplete_facts(merged),
                                *(f"**warning: {line}**" for line in shared_cache_warnings(merged)),
                                *spending_facts(merged), *(f"note: {note}" for note in merged.notes)])
    merged.write(metrics=run_metrics(config, records))  # type: ignore[arg-type]
    lines = summary_lines(config, records) if records else []  # type: ignore[arg-type]
    if summary is not None and records:
        write_summary(config, records, summary if summary.is_absolute() else Path.cwd() / summary)  # type: ignore[arg-type]
        lines.append(f"summary: {summary}")
    return lines
