"""AgentIF-OneDay metrics from result records, as the paper defines them.

Per task (eq. 1): ``s_i = max(0, S_i+ - S_i-) / S_i_max`` with S_i+ the points of satisfied bonus items,
S_i- the points of triggered penalty items (a penalty check that did not pass) and S_i_max the points of all
bonus items. Final score (eq. 2): the mean of s_i over the tasks. A task that errored -- the record's status
is ``error`` or any rubric check has an error (e.g. the judge left the item out) -- is excluded from every mean
and counted in the ``errors`` column: it is never scored as a zero.

Table 1: overall score, average latency (the agent run's duration), score per rubric dimension (the
points-weighted share of that dimension's items passed: a bonus item satisfied, a penalty item not triggered --
the paper does not give a formula for this column), with/without attachments and per task category. Table 2:
per domain. With a judge panel: s_i and the final score per judge, then mean ± std across judges.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_ifbench import MetricTable, stats

RUBRIC = "agentif.rubric"
DIMENSIONS = ("instruction_following", "factuality", "logic", "negative_constraint")
CATEGORIES = ("open_workflow", "latent_inference", "iterative_refinement")
DOMAINS = ("work", "study", "life")

Passed = Callable[[Mapping[str, Any]], "bool | None"]


def rubric_checks(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in record.get("checks", []) if c.get("kind") in ("bonus", "penalty") and c.get("scored", True)]


def errored(record: Mapping[str, Any]) -> bool:
    return record.get("status") == "error" or any(c.get("error") for c in rubric_checks(record))


def _overall(check: Mapping[str, Any]) -> bool:
    return bool(check.get("passed"))


def by_judge(judge: str) -> Passed:
    """Reads a check as ``judge`` decided it (None when that judge has no vote on it)."""
    def passed(check: Mapping[str, Any]) -> bool | None:
        for vote in (check.get("verdict") or {}).get("details", {}).get("judges", []) or []:
            if vote.get("judge") == judge:
                return bool(vote.get("passed"))
        return None
    return passed


def task_score(checks: Sequence[Mapping[str, Any]], passed: Passed = _overall) -> float | None:
    """Equation 1; None when there is no bonus item (S_max = 0) or a check has no decision."""
    decided = [(c, passed(c)) for c in checks]
    if any(d is None for _, d in decided):
        return None
    s_max = sum(float(c.get("points", 1.0)) for c, _ in decided if c.get("kind") == "bonus")
    if s_max <= 0:
        return None
    s_plus = sum(float(c.get("points", 1.0)) for c, ok in decided if c.get("kind") == "bonus" and ok)
    s_minus = sum(float(c.get("points", 1.0)) for c, ok in decided if c.get("kind") == "penalty" and not ok)
    return max(0.0, s_plus - s_minus) / s_max


def final_score(scores: Sequence[float]) -> float | None:
    """Equation 2: the mean over tasks."""
    return statistics.fmean(scores) if scores else None


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _interval(estimate: stats.Estimate | None) -> str:
    return "-" if estimate is None else estimate.plain(3)


def _scored(records: Sequence[Mapping[str, Any]], passed: Passed = _overall) -> list[tuple[Mapping[str, Any], float]]:
    out = []
    for record in records:
        if errored(record):
            continue
        score = task_score(rubric_checks(record), passed)
        if score is not None:
            out.append((record, score))
    return out


def _latency(records: Sequence[Mapping[str, Any]]) -> float | None:
    values = [float(d) for r in records if (d := (r.get("agent") or {}).get("duration")) is not None]
    return statistics.fmean(values) if values else None


def dimension_estimate(records: Sequence[Mapping[str, Any]], dimension: str) -> stats.Estimate | None:
    """A rubric dimension's points-weighted share with its interval: the items of one task are not
    independent, so the ratio's cluster-robust SE with each task a cluster."""
    items = [(float(bool(check.get("passed"))), str(record.get("nodeid") or id(record)),
              float(check.get("points", 1.0)))
             for record in records if not errored(record)
             for check in rubric_checks(record) if check.get("category") == dimension]
    return stats.clustered([v for v, _, _ in items], [c for _, c, _ in items], weights=[w for _, _, w in items])


def dimension_score(records: Sequence[Mapping[str, Any]], dimension: str) -> float | None:
    total = passed = 0.0
    for record in records:
        if errored(record):
            continue
        for check in rubric_checks(record):
            if check.get("category") == dimension:
                total += float(check.get("points", 1.0))
                passed += float(check.get("points", 1.0)) if check.get("passed") else 0.0
    return passed / total if total else None


def _attachments(record: Mapping[str, Any]) -> bool:
    metadata = record.get("metadata") or {}
    return "with_attachments" in (record.get("markers") or []) or bool(metadata.get("attachments"))


def _domain(record: Mapping[str, Any]) -> str | None:
    return (record.get("metadata") or {}).get("domain")


def _mean_of(scored: Sequence[tuple[Mapping[str, Any], float]], keep: Callable[[Mapping[str, Any]], bool]) -> str:
    """The mean score of the tasks kept, with its t interval over them: ``0.613 ±0.041 [0.532, 0.694] (n=5)``."""
    values = [s for r, s in scored if keep(r)]
    return f"{_interval(stats.mean(values))} (n={len(values)})" if values else "-"


def judges_of(records: Sequence[Mapping[str, Any]]) -> list[str]:
    return sorted({v["judge"] for r in records for c in rubric_checks(r)
                   for v in (c.get("verdict") or {}).get("details", {}).get("judges", []) or [] if "judge" in v})


def tables(records: Sequence[Mapping[str, Any]]) -> list[MetricTable]:
    records = [r for r in records if rubric_checks(r) or r.get("status") == "error"]
    if not records:
        return []
    scored = _scored(records)
    errors = sum(errored(r) for r in records)
    latency = _latency(records)
    main = [("tasks", len(records)), ("errors (excluded)", errors), ("scored", len(scored)),
            ("overall score (eq. 2)", _fmt(final_score([s for _, s in scored]))),
            ("overall score ±SE [95% CI]", _interval(stats.mean([s for _, s in scored]))),
            ("avg latency (s)", "-" if latency is None else f"{latency:.1f}")]
    main += [(f"rubric: {d}", _interval(dimension_estimate(records, d))) for d in DIMENSIONS]
    main += [("with attachments", _mean_of(scored, _attachments)),
             ("without attachments", _mean_of(scored, lambda r: not _attachments(r)))]
    main += [(f"category: {c}", _mean_of(scored, lambda r, c=c: r.get("category") == c)) for c in CATEGORIES]
    notes = ("s_i = max(0, S+ - S-) / S_max; score = mean of s_i over the scored tasks",
             "errored tasks (harness/judge error or an omitted rubric item) are excluded and counted as errors",
             "rubric dimension = points-weighted share of that dimension's items passed",
             "overall score ±SE [95% CI]: the task is the unit; " + stats.METHODS["t"],
             "attachments, category, domain: value ±SE [95% CI] over their tasks, " + stats.METHODS["t"]
             + "; rubric dimensions: its items clustered by task, " + stats.METHODS["cluster"].replace("dialogues",
                                                                                                      "tasks"))
    found = {"score": stats.mean([s for _, s in scored])} | {f"rubric: {d}": dimension_estimate(records, d)
                                                            for d in DIMENSIONS}
    out = [MetricTable(title="agentif: Table 1", columns=("metric", "value"), rows=tuple(main), notes=notes,
                       estimates={name: e for name, e in found.items() if e is not None})]
    domains = [(d, _mean_of(scored, lambda r, d=d: _domain(r) == d)) for d in DOMAINS]
    if any(_domain(r) for r in records):
        out.append(MetricTable(title="agentif: Table 2 (domain)", columns=("domain", "score"), rows=tuple(domains),
                               notes=("score ±SE [95% CI] over the domain's tasks: " + stats.METHODS["t"],)))
    judges = judges_of(records)
    if len(judges) > 1:
        out.append(panel_table(records, judges))
    return out


def panel_table(records: Sequence[Mapping[str, Any]], judges: Sequence[str]) -> MetricTable:
    finals = []
    rows: list[tuple[Any, ...]] = []
    for judge in judges:
        values = [s for _, s in _scored(records, by_judge(judge))]
        value = final_score(values)
        if value is not None:
            finals.append(value)
        rows.append((judge, len(values), _interval(stats.mean(values)) if values else _fmt(value)))
    if finals:
        spread = statistics.pstdev(finals) if len(finals) > 1 else 0.0
        rows.append(("mean ± std", len(finals), f"{statistics.fmean(finals):.3f} ± {spread:.3f}"))
        rows.append(("across judges ±SE [95% CI]", len(finals), _interval(stats.panel(finals))))
    return MetricTable(title="agentif: score per judge", columns=("judge", "tasks", "score"), rows=tuple(rows),
                       notes=("each judge's verdicts scored alone (eq. 1-2), ±SE [95% CI] over the tasks ("
                              + stats.METHODS["t"] + "); std is the population std",
                              "across judges: " + stats.METHODS["panel"] + ", the judge-to-judge spread, not the "
                              "sampling error over tasks (that is Table 1's interval)"))


def per_task(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """s_i overall and per judge for every task (errored ones as None), keyed by instance id."""
    judges = judges_of(records)
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for record in records:
        key = str(record.get("instance"))
        if errored(record):
            out[key] = {"score": None, "error": True}
            continue
        out[key] = {"score": task_score(rubric_checks(record)), "error": False,
                    "judges": {j: task_score(rubric_checks(record), by_judge(j)) for j in judges}}
    return dict(out)
