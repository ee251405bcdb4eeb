"""Benchmark metrics computed from result records.

The core metrics are the ones every checklist benchmark shares:
ISR (share of instances whose scored checks all passed), CSR (mean
per-instance share of scored checks passed) and, when an instance carries
bonus/penalty points, the rubric score s_i = max(0, S+ - S-) / S_max
(S+: bonus points earned, S-: penalty points incurred), averaged over instances. With a judge panel, ISR and
CSR are also computed per judge and reported as mean and std across judges
(avg@k). Errored instances -- an error record, or an applicable scored check with
no decision -- are counted (``errors``) but excluded from rates; instances whose
scored checks all were not applicable are counted apart (``n/a``).

Excluding errors is unbiased when errors strike at random, and gameable when they do not: a reply that
talks a lone judge into leaving its failing check out turns a failure into an error. So whenever a table
has errors it also says where the rates would lie had every errored instance been scored
(:meth:`Aggregate.bounds`): ISR from each errored instance failed to each passed -- except one whose
decided checks already failed, which cannot pass -- and CSR and the score with each undecided check
failed, then passed.

A check that is not applicable (``"applicable": false``: a conditional
requirement whose condition did not arise) is left out of every denominator:
ISR and CSR are taken over the applicable scored checks, and an instance with
none is left out of both rates. Per judge, a check counts as that judge saw
its applicability.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import stats


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricTable:
    """A titled table: ``columns`` names and ``rows`` of values (first column = row label)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    notes: tuple[str, ...] = ()
    #: The table's headline numbers with their uncertainty (name -> :class:`~.stats.Estimate`), which the
    #: results file's ``metrics`` entry carries beside the core's ISR, CSR and score.
    estimates: Mapping[str, stats.Estimate] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "columns": list(self.columns), "rows": [list(r) for r in self.rows],
                "notes": list(self.notes)}


def scored_checks(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in record.get("checks", []) if c.get("scored", True)]


def applicable(check: Mapping[str, Any]) -> bool:
    """False for a check whose condition did not arise (it counts in no denominator)."""
    return check.get("applicable", True) is not False


def errored(record: Mapping[str, Any]) -> bool:
    """An instance that could not be scored: it errored, or an applicable scored check has no decision (a
    judge left it out, a verifier could not run). It is excluded from every rate and counted as an error."""
    return record.get("status") == "error" or any(c.get("error") and applicable(c) for c in scored_checks(record))


def instance_passed_share(record: Mapping[str, Any], judge: str | None = None) -> tuple[bool, float] | None:
    """(all passed, share passed) over the applicable scored checks, optionally as one judge saw
    them; None when there are none."""
    results = [r for c in scored_checks(record) if (r := _passed_by(c, judge)) is not None]
    if not results:
        return None
    return all(results), sum(results) / len(results)


def _passed_by(check: Mapping[str, Any], judge: str | None) -> bool | None:
    """Whether the check passed (as ``judge`` saw it, when that judge voted on it); None when not applicable."""
    if judge is not None:
        for vote in (check.get("verdict") or {}).get("details", {}).get("judges", []) or []:
            if vote.get("judge") == judge:
                return bool(vote.get("passed")) if applicable(vote) else None
    return bool(check.get("passed")) if applicable(check) else None


@dataclass(frozen=True, slots=True)
class Undecided:
    """What an errored instance could still score, had its undecided checks been decided
    (:func:`error_bounds`)."""

    #: No applicable scored check was decided failed: it can still pass ISR.
    can_pass: bool
    #: Its CSR share with every undecided check failed, and with every one passed.
    csr: tuple[float, float]
    #: Its rubric score likewise; None when its record shows no rubric item.
    score: tuple[float, float] | None
    #: Nothing was decided and nothing is known to be undecided (the model call failed): the whole range.
    unknown: bool = False


def error_bounds(record: Mapping[str, Any]) -> Undecided:
    """What an errored ``record`` could still score."""
    checks = [c for c in scored_checks(record) if applicable(c)]
    if not checks:
        return Undecided(can_pass=True, csr=(0.0, 1.0), score=(0.0, 1.0), unknown=True)
    decided = [bool(c.get("passed")) for c in checks if not c.get("error")]
    undecided = len(checks) - len(decided)
    low, high = (_resolved(record, passed) for passed in (False, True))
    scores = rubric_score(low), rubric_score(high)
    return Undecided(can_pass=all(decided), csr=(sum(decided) / len(checks), (sum(decided) + undecided) / len(checks)),
                     score=None if scores[0] is None or scores[1] is None else (scores[0], scores[1]))


def _resolved(record: Mapping[str, Any], passed: bool) -> dict[str, Any]:
    """``record`` with each undecided applicable check decided ``passed`` (a failed bonus item earns nothing,
    a failed penalty item costs its points: all failed is the lowest score, all passed the highest)."""
    return {**record, "checks": [{**c, "passed": passed} if c.get("error") and applicable(c) else c
                                 for c in record.get("checks", [])]}


def rubric_score(record: Mapping[str, Any]) -> float | None:
    """The rubric score s_i; None if the instance has no bonus/penalty items.

    A bonus item earns its points when passed; a penalty item costs its points
    when failed (``passed`` always means "the response is fine on this item").
    """
    checks = [c for c in scored_checks(record) if applicable(c)]
    bonus = [c for c in checks if c.get("kind") == "bonus"]
    penalty = [c for c in checks if c.get("kind") == "penalty"]
    if not bonus and not penalty:
        return None
    s_max = sum(c.get("points", 1.0) for c in bonus)
    s_plus = sum(c.get("points", 1.0) for c in bonus if c.get("passed"))
    s_minus = sum(c.get("points", 1.0) for c in penalty if not c.get("passed"))
    if s_max <= 0:
        return None
    return max(0.0, s_plus - s_minus) / s_max


@dataclass(kw_only=True)
class Aggregate:
    n: int = 0
    errors: int = 0
    #: Instances with scored checks none of which applied: neither passed nor failed.
    not_applicable: int = 0
    isr: list[bool] = field(default_factory=list)
    csr: list[float] = field(default_factory=list)
    rubric: list[float] = field(default_factory=list)
    #: Per errored instance, :func:`error_bounds`: what it could still score.
    undecided: list[Undecided] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cost_known: bool = False

    def add(self, record: Mapping[str, Any]) -> None:
        self.n += 1
        tokens = record.get("tokens") or {}
        self.prompt_tokens += tokens.get("prompt", 0)
        self.completion_tokens += tokens.get("completion", 0)
        if record.get("cost") is not None:
            self.cost += record["cost"]
            self.cost_known = True
        if errored(record):
            self.errors += 1
            self.undecided.append(error_bounds(record))
            return
        if record.get("status") == "not_applicable":
            self.not_applicable += 1
            return
        share = instance_passed_share(record)
        if share is not None:
            self.isr.append(share[0])
            self.csr.append(share[1])
        score = rubric_score(record)
        if score is not None:
            self.rubric.append(score)

    def bounds(self) -> dict[str, tuple[float, float]]:
        """Where ISR, CSR and the score would lie had every errored instance been scored (empty when none
        errored): at least with each one's undecided checks failed (ISR: each failed), at most with them
        passed (ISR: each passed, but one whose decided checks already failed cannot). The score's range
        counts the errored instances that show a rubric item, and those with nothing decided."""
        if not self.undecided:
            return {}
        units = len(self.isr) + len(self.undecided)
        isr = sum(self.isr) / units
        out = {"isr": (isr, isr + sum(u.can_pass for u in self.undecided) / units),
               "csr": _with(self.csr, [u.csr for u in self.undecided])}
        scores = [u.score for u in self.undecided if u.score is not None and (self.rubric or not u.unknown)]
        if self.rubric or scores:
            out["score"] = _with(self.rubric, scores)
        return out

    def bounds_note(self) -> str | None:
        """The table's note on what the errored instances could make of the rates (None when none errored)."""
        bounds = self.bounds()
        if not bounds:
            return None
        stuck = sum(not u.can_pass for u in self.undecided)
        kept = f", but the {stuck} whose decided checks already failed" if stuck else ""
        ranges = [f"ISR would lie between {_pct(bounds['isr'][0])} (each failed) and {_pct(bounds['isr'][1])} (each "
                  f"passed{kept})"]
        ranges += [f"{name} between {_pct(bounds[key][0])} and {_pct(bounds[key][1])}"
                   for name, key in (("CSR", "csr"), ("score", "score")) if key in bounds]
        one = self.errors == 1
        return (f"{_instances(self.errors)} errored and {'is' if one else 'are'} left out of the rates; had "
                f"{'it' if one else 'they'} been scored, {', '.join(ranges)} ({'its' if one else 'their'} undecided "
                f"checks all failed, or all passed)")

    def row(self, label: str) -> tuple[Any, ...]:
        return (
            label, self.n, self.errors, self.not_applicable, cell(stats.proportion(self.isr)),
            cell(stats.mean(self.csr)), cell(stats.mean(self.rubric)),
            f"{self.prompt_tokens}/{self.completion_tokens}",
            f"${self.cost:.4f}" if self.cost_known else "-",
        )


def _with(values: Sequence[float], ranges: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """The mean of ``values`` with each range's low end, and with each one's high end."""
    units = len(values) + len(ranges)
    return ((sum(values) + sum(low for low, _ in ranges)) / units,
            (sum(values) + sum(high for _, high in ranges)) / units)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _instances(count: int) -> str:
    return f"{count} instance{'' if count == 1 else 's'}"


COLUMNS = ("", "items", "errors", "n/a", "ISR", "CSR", "score", "tokens in/out", "cost")


def cell(estimate: stats.Estimate | None) -> str:
    """A rate's table cell: ``66.7% ±27.2 [20.8, 93.9]`` (value, SE, 95% interval; "-" for no units). One unit
    has no spread to estimate: its SE is shown as ``±inf`` and the interval as the whole range."""
    return "-" if estimate is None else estimate.pct()


#: The note every core table carries: how its intervals were computed.
INTERVAL_NOTE = ("ISR, CSR, score: value ±SE [95% CI] with the instance as the unit (with samples, an "
                 "instance's checks are first combined over its samples); ISR: " + stats.METHODS["wilson"]
                 + "; CSR, score: " + stats.METHODS["t"] + " (instances)")
#: The panel table's note: the judges' spread is not the sampling error.
PANEL_NOTE = ("across judges: mean of the judges' rates ±SE [95% CI] of the judge-to-judge spread ("
              + stats.METHODS["panel"] + "), how much the number depends on which judge read the replies; "
              "the sampling error over instances is in the table above")


def headline_metrics(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per benchmark: ISR, CSR and score as :class:`~.stats.Estimate` JSON (value, se, ci95, n, method),
    plus the counts; the results file's ``metrics`` entry."""
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        groups[str(record.get("benchmark"))].append(record)
    out = {}
    for benchmark, group in sorted(groups.items()):
        agg = _aggregate(group)
        found = {"isr": stats.proportion(agg.isr), "csr": stats.mean(agg.csr), "score": stats.mean(agg.rubric)}
        out[benchmark] = {"items": agg.n, "errors": agg.errors, "not_applicable": agg.not_applicable} | {
            name: estimate.to_json() for name, estimate in found.items() if estimate is not None}
        if bounds := agg.bounds():
            out[benchmark]["with_errors"] = {name: [round(low, 6), round(high, 6)]
                                             for name, (low, high) in bounds.items()}
    return out


def _aggregate(records: Iterable[Mapping[str, Any]]) -> Aggregate:
    agg = Aggregate()
    for record in records:
        agg.add(record)
    return agg


_BREAKDOWNS = (("category", "category"), ("scaffold", "scaffold"), ("tier", "tier"), ("protocol", "protocol"))


def _natural(value: Any) -> tuple[bool, float, str]:
    """Numbers first in numeric order (tier=2 before tier=10), then strings."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return (not number, float(value) if number else 0.0, str(value))


def core_tables(benchmark: str, records: Sequence[Mapping[str, Any]]) -> list[MetricTable]:
    """The overall row plus one breakdown per dimension that has more than one value."""
    overall = _aggregate(records)
    rows = [overall.row("all")]
    for label, key in _BREAKDOWNS:
        groups: dict[Any, list[Mapping[str, Any]]] = defaultdict(list)
        for record in records:
            if record.get(key) is not None:
                groups[record[key]].append(record)
        if len(groups) > 1 or (groups and len(next(iter(groups.values()))) < len(records)):
            for value in sorted(groups, key=_natural):
                rows.append(_aggregate(groups[value]).row(f"{label}={value}"))
    notes = (INTERVAL_NOTE, *filter(None, [overall.bounds_note()]))
    tables = [MetricTable(title=f"{benchmark}", columns=COLUMNS, rows=tuple(rows), notes=notes)]
    judges = sorted({vote["judge"] for r in records for c in scored_checks(r)
                     for vote in (c.get("verdict") or {}).get("details", {}).get("judges", []) or []})
    if len(judges) > 1:
        judge_rows = []
        isr_by_judge, csr_by_judge = [], []
        for judge in judges:
            shares = [s for r in records if not errored(r)
                      if (s := instance_passed_share(r, judge)) is not None]
            isr = statistics.fmean(float(a) for a, _ in shares) if shares else 0.0
            csr = statistics.fmean(b for _, b in shares) if shares else 0.0
            isr_by_judge.append(isr)
            csr_by_judge.append(csr)
            judge_rows.append((judge, f"{100 * isr:.1f}%", f"{100 * csr:.1f}%"))
        judge_rows.append(("across judges", cell(stats.panel(isr_by_judge)), cell(stats.panel(csr_by_judge))))
        judge_rows.append((
            "mean ± std",
            f"{100 * statistics.fmean(isr_by_judge):.1f}% ± {100 * statistics.pstdev(isr_by_judge):.1f}",
            f"{100 * statistics.fmean(csr_by_judge):.1f}% ± {100 * statistics.pstdev(csr_by_judge):.1f}",
        ))
        tables.append(MetricTable(title=f"{benchmark}: by judge (panel)", columns=("judge", "ISR", "CSR"),
                                  rows=tuple(judge_rows),
                                  notes=("deterministic checks count the same for every judge", PANEL_NOTE)))
    return tables


def render_table(table: MetricTable) -> list[str]:
    cells = [tuple(str(c) for c in table.columns)] + [tuple(str(c) for c in row) for row in table.rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(table.columns))]
    lines = [table.title]
    for index, row in enumerate(cells):
        padded = (c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        lines.append("  " + "  ".join(padded))
        if index == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    lines.extend(f"  note: {note}" for note in table.notes)
    return lines
