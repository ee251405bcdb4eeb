"""OctoBench's tables and plot, from result records (docs/results-format.md).

Every rate is ``scoring``'s ISR/CSR, per judge, then mean ± std across judges (Table 2, avg@k); the
paper mode and the authors' reference scorer are shown side by side. Breakdowns: by scaffold
(Table 3), by the instance's primary source, by check source (Tables 12-14: K_i restricted to the
checks of that source) and by check type (Table 8); ISR by interaction length (Figure 3, assistant
turns of the run); checks per instance (deterministic / judged / not applicable / omitted);
conflict attribution rates per pair (Table 4); the feedback-correction rerun (Table 5).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_ifbench import MetricTable, stats

from .reflect import META_KEY
from .scoring import MODES, Panel, check_result, instance_score, judges_of, panel, rates, scored
from .taxonomy import ATTRIBUTIONS, CHECK_TYPES, CONFLICT_PAIRS, SOURCES
from .verifiers import attribution

Record = Mapping[str, Any]
#: Interaction-length bins (assistant turns of the run) for Figure 3; the paper does not give its bins.
TURN_BINS: tuple[tuple[int, int], ...] = ((1, 10), (11, 20), (21, 40), (41, 80), (81, 10**9))
_JUDGED = "judge"


def _bin(turns: int) -> str:
    for low, high in TURN_BINS:
        if low <= turns <= high:
            return f"{low}-{high}" if high < 10**9 else f"{low}+"
    return "0"


def interaction_turns(record: Record) -> int:
    trajectory = (record.get("agent") or {}).get("trajectory") or {}
    return sum(1 for m in trajectory.get("messages") or [] if m.get("role") == "assistant")


def compat(records: Sequence[Record]) -> str:
    modes = {(r.get("metadata") or {}).get("compat") for r in records} - {None}
    return "reference" if modes == {"reference"} else "paper"


def _row(label: str, records: Sequence[Record], judges: Sequence[str | None], select: Any = None) -> tuple:
    papers, refs = (panel(records, mode=m, select=select, judges=judges) for m in MODES)
    isr, csr = sampling_estimates(records, select=select)
    return (label, papers.n, papers.cell("isr"), papers.cell("csr"), refs.cell("isr"), refs.cell("csr"),
            _cell(isr), _cell(csr))


_COLUMNS = ("", "N", "ISR", "CSR", "ISR (reference)", "CSR (reference)", "ISR ±SE [95% CI]", "CSR ±SE [95% CI]")
#: The breakdown tables' note on their interval columns.
_SAMPLING_NOTE = ("±SE [95% CI]: the paper-mode ISR and CSR of the (panel) verdict with the instance as the unit; "
                  "ISR: " + stats.METHODS["wilson"] + "; CSR: " + stats.METHODS["t"])


def overall(records: Sequence[Record]) -> MetricTable:
    judges = judges_of(records)
    rows = []
    for judge in judges:
        p, r = (rates(records, judge=judge, mode=m) for m in MODES)
        rows.append((judge or "verdict", p.n, p.errors, _pct(p.isr), _pct(p.csr), _pct(r.isr), _pct(r.csr)))
    names = ("ISR", "CSR", "ISR (reference)", "CSR (reference)")
    found = [e for m in MODES for e in sampling_estimates(records, mode=m)]
    sampling = [_cell(e) for e in found]
    estimates = {name: e for name, e in zip(names, found) if e is not None}
    if len(judges) > 1:
        p, r = panel(records, judges=judges), panel(records, mode="reference", judges=judges)
        rows.append(("mean ± std", p.n, rows[0][2], p.cell("isr"), p.cell("csr"), r.cell("isr"), r.cell("csr")))
        across = [stats.panel([v for rate in m.per_judge.values() if (v := getattr(rate, key)) is not None])
                  for m in (p, r) for key in ("isr", "csr")]
        rows.append(("across judges ±SE [95% CI]", p.n, rows[0][2], *map(_cell, across)))
        # The paper's figure is the mean over the judges: it takes the plain names; the panel's verdict keeps its own.
        estimates = {name.replace(")", ", panel verdict)") if ")" in name else f"{name} (panel verdict)": e
                     for name, e in estimates.items()}
        estimates |= {name: e for name, e in zip(names, across) if e is not None}
    rows.append(("instances ±SE [95% CI]", rates(records).n, rows[0][2], *sampling))
    omitted = sum(check_result(c) == "omitted" for rec in records for c in scored(rec))
    notes = (f"headline mode: {compat(records)} (--octobench-compat / options.compat)",
             "paper: K_i = applicable checks; an omitted or errored check counts as not passed; "
             "not_applicable checks are left out; errored instances are not scored",
             "reference (authors' scorer): reward = successes / checks present in the judge's answer "
             "(3 decimals); an omitted check is not counted (scores like a pass); not_applicable counts as "
             f"a fail; an errored instance scores 0. Omitted checks in this run: {omitted}",
             "std is the population std across judges",
             "instances ±SE [95% CI]: the sampling error of the (panel) verdict over instances, the instance as "
             "the unit; ISR: " + stats.METHODS["wilson"] + "; CSR: " + stats.METHODS["t"]
             + (("; across judges: " + stats.METHODS["panel"] + ", the judge spread, apart from the sampling "
                 "error") if len(judges) > 1 else ""))
    return MetricTable(title="octobench: ISR / CSR per judge (paper vs reference)",
                       columns=("judge", "N", "errors", "ISR", "CSR", "ISR (reference)", "CSR (reference)"),
                       rows=tuple(rows), notes=notes, estimates=estimates)


def sampling_estimates(records: Sequence[Record], *, mode: str = "paper", select: Any = None,
                       ) -> tuple[stats.Estimate | None, stats.Estimate | None]:
    """ISR (Wilson) and CSR (t) of the combined verdict over the scored instances, with SE and 95% interval
    (``select``: each instance's checklist restricted to some checks, as the by-check tables do)."""
    scores = [s for r in records if (s := instance_score(r, mode=mode, select=select)) is not None]
    return stats.proportion([s.passed for s in scores]), stats.mean([s.share for s in scores])


def _cell(estimate: stats.Estimate | None) -> str:
    return "-" if estimate is None else estimate.pct()


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def by_group(records: Sequence[Record], title: str, key: Any, order: Sequence[str] = ()) -> MetricTable | None:
    groups: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        value = key(record)
        if value is not None:
            groups[str(value)].append(record)
    if not groups:
        return None
    judges = judges_of(records)
    names = [g for g in order if g in groups] + sorted(g for g in groups if g not in order)
    return MetricTable(title=title, columns=_COLUMNS,
                       rows=tuple(_row(name, groups[name], judges) for name in names),
                       notes=(("mean ± std across judges",) if len(judges) > 1 else ()) + (_SAMPLING_NOTE,))


def by_check(records: Sequence[Record], title: str, key: Any, order: Sequence[str]) -> MetricTable | None:
    """ISR/CSR with K_i restricted to the checks whose ``key`` is each value."""
    values = {key(c) for r in records for c in scored(r)} - {None}
    if not values:
        return None
    judges = judges_of(records)
    names = [v for v in order if v in values] + sorted(v for v in values if v not in order)
    rows = [_row(SOURCES.get(name, name), records, judges, select=lambda c, n=name: key(c) == n) for name in names]
    return MetricTable(title=title, columns=_COLUMNS, rows=tuple(rows),
                       notes=("each instance's checklist restricted to the row's checks; instances without "
                              "such checks are left out", _SAMPLING_NOTE))


def _source(check: Mapping[str, Any]) -> str | None:
    return check.get("category")


def _check_type(check: Mapping[str, Any]) -> str | None:
    return (check.get("metadata") or {}).get("check_type")


def check_counts(records: Sequence[Record]) -> MetricTable:
    rows = []
    for record in sorted(records, key=lambda r: str(r.get("instance"))):
        checks = scored(record)
        results = Counter(check_result(c) for c in checks)
        judged = sum(_is_judged(c) for c in checks)
        rows.append((record.get("instance"), len(checks) - judged, judged, results["not_applicable"],
                     results["omitted"]))
    return MetricTable(title="octobench: checks per instance",
                       columns=("instance", "deterministic", "judged", "not applicable", "omitted"),
                       rows=tuple(rows))


def _is_judged(check: Mapping[str, Any]) -> bool:
    verifier = str(check.get("verifier", ""))
    return verifier.startswith("ifbench.judge") or verifier == "octobench.conflict_attribution"


def conflict_table(records: Sequence[Record]) -> MetricTable | None:
    conflicts = [r for r in records if (r.get("metadata") or {}).get("conflict") and r.get("status") != "error"]
    if not conflicts:
        return None
    rows = []
    for pair in CONFLICT_PAIRS:
        found = [a for r in conflicts if r["metadata"]["conflict"].get("pair") == pair
                 if (a := attribution(r)) is not None]
        if not found:
            continue
        counts = Counter(found)
        rows.append((pair, len(found), *(f"{100 * counts[a] / len(found):.1f}" for a in ATTRIBUTIONS)))
    return MetricTable(title="octobench: conflict attribution (Table 4)",
                       columns=("pair (A vs B)", "N", "follows A %", "follows B %", "neither %", "both %"),
                       rows=tuple(rows),
                       notes=("A is the first source of the pair (UQ vs SP: A = user query, B = system prompt)",))


def reflection_table(records: Sequence[Record]) -> MetricTable | None:
    pairs = []
    for record in records:
        meta = (((record.get("agent") or {}).get("trajectory") or {}).get("meta") or {}).get(META_KEY)
        if isinstance(meta, dict) and meta.get("rerun") and record.get("status") != "error":
            original = {"status": "failed", "checks": meta.get("original_checks") or []}
            pairs.append((original, record))
    if not pairs:
        return None
    rows = []
    for mode in MODES:
        before = rates([o for o, _ in pairs], mode=mode)
        after = rates([r for _, r in pairs], mode=mode)
        for name in ("isr", "csr"):
            b, a = getattr(before, name), getattr(after, name)
            delta = "-" if a is None or b is None else f"{100 * (a - b):+.1f}"
            rows.append((f"{name.upper()}{' (reference)' if mode == 'reference' else ''}", len(pairs),
                         _pct(b), _pct(a), delta))
    return MetricTable(title="octobench: feedback-correction rerun (Table 5)",
                       columns=("metric", "N", "original", "reflection", "Δ"), rows=tuple(rows),
                       notes=("over the partially failed instances that were rerun with feedback",
                              "the verdicts of the panel (majority), not per judge"))


def scaffold_versions(records: Sequence[Record]) -> MetricTable | None:
    """Per scaffold, what ran it: the runner, the version the instances named (official rows'
    ``scaffold.version``) and the version that ran, with a warning note where the two differ (the
    named version is not installed: ``ifbench agents install <cli>@<version>``)."""
    counts: Counter[tuple[str, str, str, str]] = Counter()
    for record in records:
        agent = record.get("agent") or {}
        if not agent or record.get("status") == "error":
            continue
        counts[(str(record.get("scaffold") or "-"), str(agent.get("runner") or "-"),
                str(agent.get("version_named") or "-"), str(agent.get("runner_version") or "-"))] += 1
    if not counts:
        return None
    rows = tuple((*key, n) for key, n in sorted(counts.items()))
    notes = tuple(f"warning: {scaffold} instances name {runner} {named} but {ran} ran "
                  f"(install it beside the pinned one: ifbench agents install {runner}@{named})"
                  for scaffold, runner, named, ran, _ in rows
                  if named != "-" and runner != "loop" and named != ran)
    return MetricTable(title="octobench: scaffold versions (named vs run)",
                       columns=("scaffold", "runner", "version named", "version run", "N"), rows=rows,
                       notes=notes)


def tables(records: Sequence[Record]) -> list[MetricTable]:
    records = list(records)
    found = [
        overall(records),
        by_group(records, "octobench: by scaffold (Table 3)", lambda r: r.get("scaffold")),
        scaffold_versions(records),
        by_group(records, "octobench: by primary source (instance category)", lambda r: r.get("category"),
                 order=tuple(SOURCES)),
        by_check(records, "octobench: by check source (Tables 12-14)", _source, tuple(SOURCES)),
        by_check(records, "octobench: by check type (Table 8)", _check_type, CHECK_TYPES),
        by_group(records, "octobench: ISR by interaction turns (Figure 3)",
                 lambda r: _bin(interaction_turns(r)) if r.get("agent") else None,
                 order=tuple(_bin(low) for low, _ in TURN_BINS)),
        check_counts(records),
        conflict_table(records),
        reflection_table(records),
    ]
    return [t for t in found if t is not None]


def plots(records: Sequence[Record], directory: Any) -> list[Any]:
    """``octobench_isr_by_turns.png``: ISR (mean across judges) by interaction length (Figure 3)."""
    groups: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        if record.get("agent") and record.get("status") != "error":
            groups[_bin(interaction_turns(record))].append(record)
    labels = [_bin(low) for low, _ in TURN_BINS if _bin(low) in groups]
    if not labels:
        return []
    judges = judges_of(records)
    values: list[float] = []
    errors: list[float] = []
    for label in labels:
        found: Panel = panel(groups[label], judges=judges)
        mean, std = found.mean_std("isr") or (0.0, 0.0)
        values.append(100 * mean)
        errors.append(100 * std)
    from matplotlib.figure import Figure  # Agg through savefig; no pyplot, no global state

    figure = Figure(figsize=(6, 4))
    axis = figure.add_subplot()
    axis.errorbar(range(len(labels)), values, yerr=errors if len(judges) > 1 else None, marker="o", capsize=3)
    axis.set_xticks(range(len(labels)), labels)
    axis.set_xlabel("interaction turns (assistant turns of the run)")
    axis.set_ylabel("ISR (%)")
    axis.set_ylim(-2, 102)
    axis.set_title("OctoBench: ISR by interaction turns")
    axis.grid(alpha=0.3)
    path = Path(directory) / "octobench_isr_by_turns.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    return [path]
