"""A :class:`~.compare.Comparison` as terminal lines and as a Markdown report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import stats
from .compare import Comparison, Delta, Gated, Group, adjusted, family, limit_warnings
from .metrics import MetricTable, render_table

COLUMNS = ("", "metric", "pairs", "base", "new", "Δ ±SE [95% CI]", "p", "test", "")
#: How many flipped / unpaired instances each list shows before "... and N more".
SHOWN = 50


def change(delta: Delta) -> str:
    """``-60.0 pts ±11.0 [-83.1, -36.9]``: the change in percentage points, its SE and interval."""
    c = delta.change
    return f"{100 * c.value:+.1f} pts ±{100 * c.se:.1f} [{100 * c.low:+.1f}, {100 * c.high:+.1f}]"


def delta_line(label: str, pairs: int, delta: Delta, alpha: float) -> str:
    """One metric's change on one line: ``demo ISR (10 paired): 100.0% -> 30.0%, -70.0 pts ±15.3 [...], p 0.016
    (exact McNemar, +0/-7) worse`` (the baseline's paired gate, the summary file)."""
    flips = f", +{delta.gains}/-{delta.losses}" if delta.metric == "ISR" else ""
    verdict = _verdict(delta, alpha)
    return (f"{label} {delta.metric} ({pairs} paired): {100 * delta.base:.1f}% -> {100 * delta.new:.1f}%, "
            f"{change(delta)}, p {p_value(delta.p)} ({delta.test}{flips})" + (f" {verdict}" if verdict else ""))


def _verdict(delta: Delta, alpha: float) -> str:
    if delta.regression(alpha):
        return "worse"
    return "better" if delta.significant(alpha) else ""


def p_value(p: float) -> str:
    """A p-value as the reports print it."""
    return "<0.001" if p < 0.001 else f"{p:.3f}"



def tables(comparison: Comparison) -> list[MetricTable]:
    by_benchmark: dict[str, list[Group]] = {}
    for group in comparison.groups:
        by_benchmark.setdefault(group.benchmark, []).append(group)
    out = []
    for benchmark, groups in by_benchmark.items():
        rows = []
        for group in groups:
            for index, delta in enumerate(group.deltas):
                base = f"{100 * delta.base:.1f}%"
                new = f"{100 * delta.new:.1f}%"
                flips = f" (+{delta.gains}/-{delta.losses})" if delta.metric == "ISR" else ""
                rows.append((group.label if index == 0 else "", delta.metric, group.pairs if index == 0 else "",
                             base, new, change(delta), p_value(delta.p), delta.test + flips,
                             _verdict(delta, comparison.alpha)))
        out.append(MetricTable(title=f"{benchmark}: {comparison.new.name} vs {comparison.base.name}",
                               columns=COLUMNS, rows=tuple(rows), notes=(_note(comparison),)))
    return out


def _note(comparison: Comparison) -> str:
    return (f"paired by instance; worse/better: p < {comparison.alpha:g} for that row alone (the gate reads each "
            "benchmark's 'all' rows, their p-values adjusted together by Holm's method); ISR (+gains/-losses): "
            + stats.METHODS["paired-t"] + ", exact McNemar test; CSR, score: "
            + stats.METHODS["paired-bootstrap"] + ", exact sign-flip permutation test")


def _listing(comparison: Comparison) -> list[tuple[str, list[str]]]:
    """(heading, lines) for the flips, the instances only one run holds and the unpaired ones."""
    sections = []
    for direction, heading in (("regressed", "passed -> failed"), ("fixed", "failed -> passed")):
        flips = [f for f in comparison.flips if f.direction == direction]
        if flips:
            sections.append((f"{heading} ({len(flips)})",
                             [f"{f.nodeid}  failed: {', '.join(f.failed_checks) or '-'}" for f in flips]))
    for ids, where in ((comparison.only_base, comparison.base.name), (comparison.only_new, comparison.new.name)):
        if ids:
            sections.append((f"only in {where} ({len(ids)}, not compared)", list(ids)))
    if comparison.unpaired:
        sections.append((f"in both runs, not paired ({len(comparison.unpaired)})",
                         [f"{nodeid}  {why}" for nodeid, why in sorted(comparison.unpaired.items())]))
    return [(heading, _cut(lines)) for heading, lines in sections]


def _cut(lines: Sequence[str]) -> list[str]:
    shown = list(lines[:SHOWN])
    if len(lines) > SHOWN:
        shown.append(f"... and {len(lines) - SHOWN} more")
    return shown


def _headline(comparison: Comparison) -> str:
    base, new = comparison.base, comparison.new
    return (f"base: {base.name} (model {base.meta.get('model')}, {len(base.records)} instances); "
            f"new: {new.name} (model {new.meta.get('model')}, {len(new.records)} instances)")


def outcome_line(comparison: Comparison) -> str:
    """The gate's verdict: no significant regression, or the drops that are (their p-values adjusted over the
    gate's tests), and those the instances the new run errored on could hide."""
    drops, hidden = comparison.regressions(), comparison.unresolved()
    tests = comparison.gate_tests()
    alpha = f"alpha {comparison.alpha:g}{holm_note(tests, comparison.alpha)}"
    if drops:
        line = f"significant regression at {alpha}: {named_drops(drops)}"
    else:
        line = f"no significant regression at {alpha}" + (" among the paired instances" if hidden else "")
        line += alone_note(tests, comparison.alpha)
    if comparison.worst_case and not hidden:
        line += f", not even had the instances {comparison.new.name} errored on failed"
    if hidden:
        line += (f"; but {comparison.new.name} errored on instances {comparison.base.name} scored, and had they "
                 f"failed: {named_drops(hidden)} -- nothing says they did not regress")
    return line


def holm_note(tests: Sequence[tuple[Any, Delta]], alpha: float) -> str:
    """`` (Holm over 3 tests)`` when a gate adjusts more than one change together (:func:`~.compare.family`),
    and how many it left out: `` (Holm over 2 tests; 1 left out: too few instances changed to reach alpha)``."""
    members = len(family(tests, alpha))
    parts = [f"Holm over {members} tests"] if members > 1 else []
    if left := sum(1 for _, delta in tests if delta.moved and not delta.can_reach(alpha)):  # unchanged: no news
        noun = "" if parts else " test" if left == 1 else " tests"
        parts.append(f"{left}{noun} left out: too few instances changed to reach alpha")
    return f" ({'; '.join(parts)})" if parts else ""


def alone_note(tests: Sequence[tuple[Any, Delta]], alpha: float) -> str:
    """`` (alone, a ISR … (p 0.031, adjusted 0.125): not once the gate's 4 tests are taken together)``: the
    drops significant on their own that the adjustment leaves below the bar, named rather than hidden."""
    alone = [t for t in adjusted(tests, alpha) if t.delta.regression(alpha)]
    if not alone:
        return ""
    return f" (alone, {named_drops(alone)}: not once the gate's {len(family(tests, alpha))} tests are taken together)"


def named_drops(drops: Sequence[Gated]) -> str:
    """``cmp ISR -60.0 pts ±11.2 [-83.5, -36.5] (p <0.001)``, with the adjusted p-value when it differs."""
    return ", ".join(f"{t.group.benchmark} {t.delta.metric} {change(t.delta)} (p {p_value(t.delta.p)}"
                     + ("" if p_value(t.adjusted) == p_value(t.delta.p) else f", adjusted {p_value(t.adjusted)}")
                     + ")" for t in drops)


def worst_case_lines(comparison: Comparison) -> list[str]:
    """Each benchmark's change had the instances the new run errored on (and the base scored) failed."""
    return [delta_line(f"{g.benchmark} ({g.label})", g.pairs, d, comparison.alpha)
            for g in comparison.worst_case for d in g.deltas]


_WORST_HEADING = "at the new run's worst: the instances it errored on paired as failed (every undecided check failed)"


def terminal_lines(comparison: Comparison) -> list[str]:
    lines = [_headline(comparison), *(f"warning: {text}" for text in limit_warnings(comparison))]
    for table in tables(comparison):
        lines += ["", *render_table(table)]
    if comparison.worst_case:
        lines += ["", _WORST_HEADING + ":", *(f"  {line}" for line in worst_case_lines(comparison))]
    for heading, items in _listing(comparison):
        lines += ["", heading + ":", *(f"  {item}" for item in items)]
    return [*lines, "", outcome_line(comparison)]


def markdown(comparison: Comparison) -> str:
    lines = ["# pytest-ifbench: comparison of two runs", "", _headline(comparison), "",
             f"**{outcome_line(comparison)}**", *(f"\n**warning: {text}**" for text in limit_warnings(comparison))]
    for table in tables(comparison):
        lines += ["", f"## {table.title}", "", "| " + " | ".join(c or " " for c in table.columns) + " |",
                  "|" + "|".join("---" if i == 0 else "---:" for i in range(len(table.columns))) + "|"]
        lines += ["| " + " | ".join(_md(cell) for cell in row) + " |" for row in table.rows]
        lines += ["", *(f"_{note}_" for note in table.notes)]
    if comparison.worst_case:
        lines += ["", f"## {_WORST_HEADING[0].upper()}{_WORST_HEADING[1:]}", "",
                  *(f"- {_md(line)}" for line in worst_case_lines(comparison))]
    for heading, items in _listing(comparison):
        lines += ["", f"## {heading}", "", *(f"- `{item}`" for item in items)]
    return "\n".join(lines) + "\n"


def _md(cell: object) -> str:
    return str(cell).replace("|", "\\|")
