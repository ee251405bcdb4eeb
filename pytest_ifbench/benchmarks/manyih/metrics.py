"""ManyIH-Bench metrics, plots and per-instance hierarchy report.

Coding subset (Table 1a): Acc = unit tests and every winning style pass;
Acc_test = the unit tests pass; Acc_style = every winning style passes -- by tier
and by privilege prompt interface. Table 1b: ordinal vs scalar on the same
samples (pairs sharing ``metadata.sample``), Δ = scalar − ordinal. §6.4.2:
original vs privilege-perturbed scalar variants, Δ = perturbed − original and
flip rates (share of pairs whose pass/fail differs). Instruction-following
subset: Acc (all active constraints pass) and CSR over active constraints.
Suppressed (losing) instructions are never scored; the tables only report how
often the reply nevertheless satisfied them.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_ifbench import MetricTable, errored, stats

BENCHMARK = "manyih"


def _meta(record: Mapping[str, Any]) -> Mapping[str, Any]:
    return record.get("metadata") or {}


def subset(record: Mapping[str, Any]) -> str | None:
    value = _meta(record).get("subset")
    if value:
        return str(value)
    markers = record.get("markers") or []
    return "coding" if "subset_coding" in markers else "if" if "subset_if" in markers else None


def _role(check: Mapping[str, Any]) -> str | None:
    return (check.get("metadata") or {}).get("role")


def outcome(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """Acc / Acc_test / Acc_style of one record (None for an errored instance)."""
    if errored(record):
        return None
    checks = record.get("checks") or []
    scored = [c for c in checks if c.get("scored", True)]
    tests = [c for c in scored if _role(c) == "tests"]
    styles = [c for c in scored if _role(c) != "tests"]
    return {
        "acc": all(c.get("passed") for c in scored) and bool(scored),
        "test": all(c.get("passed") for c in tests) if tests else None,
        "style": all(c.get("passed") for c in styles),
        "share": statistics.fmean(bool(c.get("passed")) for c in styles) if styles else None,
        "suppressed": [bool(c.get("passed")) for c in checks if not c.get("scored", True)],
    }


def _acc(values: Iterable[bool | None]) -> str:
    """Acc with its SE and Wilson 95% interval over the instances (``75.0% ±21.7 [30.1, 95.4]``)."""
    estimate = stats.proportion([bool(v) for v in values if v is not None])
    return "-" if estimate is None else estimate.pct()


#: The headline tables' note on the Acc cells.
ACC_NOTE = "Acc ±SE [95% CI]: " + stats.METHODS["wilson"] + " (the instance is the unit)"
#: The note of the cells that pool several checks of each instance.
CHECKS_NOTE = ("checks pooled over instances (suppressed, by style group): the checks of one instance are not "
               "independent: cluster-robust SE over instances, t(G-1)")
#: The paired tables' note.
PAIRED_NOTE = ("±SE [95% CI]: Acc " + stats.METHODS["wilson"] + "; Δ: " + stats.METHODS["paired-t"]
               + " over the pairs (the sample is the unit); flip: " + stats.METHODS["wilson"].replace("instances",
                                                                                                   "pairs"))


def _mean(values: Iterable[float | None]) -> str:
    """A mean of per-instance values (CSR) with its t interval."""
    estimate = stats.mean([float(v) for v in values if v is not None])
    return "-" if estimate is None else estimate.pct()


def _pooled(values: Sequence[bool], instances: Sequence[str]) -> str:
    """A share of checks pooled over instances, clustered by instance."""
    estimate = stats.clustered([float(v) for v in values], instances)
    return "-" if estimate is None else estimate.pct()


def _delta(a: Sequence[bool | None], b: Sequence[bool | None]) -> str:
    """The paired change ``b - a`` in percentage points with its paired-t interval."""
    diffs = [float(y) - float(x) for x, y in zip(a, b) if x is not None and y is not None]
    estimate = stats.mean(diffs, bounds=(-1.0, 1.0), method="paired-t")
    return "-" if estimate is None else estimate.pts()


def _flip(a: Sequence[bool | None], b: Sequence[bool | None]) -> str:
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    estimate = stats.proportion([x != y for x, y in pairs])
    return "-" if estimate is None else estimate.pct()


def _natural(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, (int, float)) else (1, str(value))


def _row(label: str, records: Sequence[Mapping[str, Any]]) -> tuple[Any, ...]:
    outs = [o for r in records if (o := outcome(r)) is not None]
    return (label, len(records), len(records) - len(outs), _acc(o["acc"] for o in outs),
            _acc(o["test"] for o in outs), _acc(o["style"] for o in outs))


def coding_tables(records: Sequence[Mapping[str, Any]]) -> list[MetricTable]:
    plain = [r for r in records if not _meta(r).get("perturbed")]
    rows = [_row("all", plain)]
    for label, key in (("tier", lambda r: r.get("tier")), ("ppi", lambda r: _meta(r).get("ppi"))):
        groups: dict[Any, list[Mapping[str, Any]]] = defaultdict(list)
        for record in plain:
            if key(record) is not None:
                groups[key(record)].append(record)
        rows.extend(_row(f"{label}={value}", groups[value]) for value in sorted(groups, key=_natural))
    perturbed = [r for r in records if _meta(r).get("perturbed")]
    if perturbed:
        rows.append(_row("ppi=scalar, perturbed", perturbed))
    outs = [o for r in plain if (o := outcome(r)) is not None]
    found = {f"coding {name}": stats.proportion([bool(o[key]) for o in outs if o[key] is not None])
             for name, key in (("Acc", "acc"), ("Acc_test", "test"), ("Acc_style", "style"))}
    tables = [MetricTable(title="manyih coding: accuracy (Table 1a)", estimates=_known(found),
                          columns=("", "items", "errors", "Acc", "Acc_test", "Acc_style"), rows=tuple(rows),
                          notes=("Acc: tests and every winning style pass; perturbed variants only in their own row",
                                 ACC_NOTE.replace("Acc ", "Acc, Acc_test, Acc_style ")))]
    pairs = _pairs(plain, lambda r: _meta(r).get("ppi") == "ordinal", lambda r: _meta(r).get("ppi") == "scalar")
    if pairs:
        tables.append(_paired_table(
            "manyih coding: ordinal vs scalar on the same samples (Table 1b)", pairs, ("ordinal", "scalar"),
            "Δ = scalar − ordinal, in percentage points", flips=False))
    scalar = [r for r in records if _meta(r).get("ppi") == "scalar"]
    pairs = _pairs(scalar, lambda r: not _meta(r).get("perturbed"), lambda r: bool(_meta(r).get("perturbed")))
    if pairs:
        tables.append(_paired_table(
            "manyih coding: scalar privilege perturbation (§6.4.2)", pairs, ("original", "perturbed"),
            "Δ = perturbed − original (pp); flip = share of pairs whose pass/fail changed", flips=True))
    style_rows = _style_rows(records)
    if style_rows:
        tables.append(MetricTable(
            title="manyih coding: by style group", rows=tuple(style_rows),
            columns=("group", "winning", "passed", "suppressed", "suppressed satisfied"),
            notes=("suppressed instructions are never scored; 'satisfied' = the reply followed the losing one",
                   CHECKS_NOTE)))
    return tables


def _pairs(records: Sequence[Mapping[str, Any]], first: Any, second: Any,
           ) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    by_sample: dict[Any, dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for record in records:
        sample = _meta(record).get("sample")
        if sample is None:
            continue
        if first(record):
            by_sample[sample].setdefault("a", record)
        elif second(record):
            by_sample[sample].setdefault("b", record)
    return [(p["a"], p["b"]) for _, p in sorted(by_sample.items(), key=lambda kv: str(kv[0])) if len(p) == 2]


def _paired_table(title: str, pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
                  names: tuple[str, str], note: str, *, flips: bool) -> MetricTable:
    groups: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    for a, b in pairs:
        oa, ob = outcome(a), outcome(b)
        if oa is None or ob is None:
            continue
        groups["all"].append((oa, ob))
        groups[f"tier={a.get('tier')}"].append((oa, ob))
    columns = ["", "pairs", f"Acc {names[0]}", f"Acc {names[1]}", "ΔAcc", "ΔAcc_test", "ΔAcc_style"]
    if flips:
        columns += ["flip", "test flip", "style flip"]
    rows = []
    for label in sorted(groups, key=lambda g: (g != "all", _natural(_tier(g)))):
        items = groups[label]
        row = [label, len(items), _acc(a["acc"] for a, _ in items), _acc(b["acc"] for _, b in items)]
        for key in ("acc", "test", "style"):
            row.append(_delta([a[key] for a, _ in items], [b[key] for _, b in items]))
        if flips:
            for key in ("acc", "test", "style"):
                row.append(_flip([a[key] for a, _ in items], [b[key] for _, b in items]))
        rows.append(tuple(row))
    return MetricTable(title=title, columns=tuple(columns), rows=tuple(rows), notes=(note, PAIRED_NOTE))


def _tier(label: str) -> Any:
    value = label.partition("=")[2]
    return int(value) if value.isdigit() else value


def _style_rows(records: Sequence[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
    winning: dict[str, tuple[list[bool], list[str]]] = defaultdict(lambda: ([], []))
    losing: dict[str, tuple[list[bool], list[str]]] = defaultdict(lambda: ([], []))
    for record in records:
        if errored(record):
            continue
        for check in record.get("checks") or []:
            meta = check.get("metadata") or {}
            if meta.get("role") != "style":
                continue
            cell = (winning if check.get("scored", True) else losing)[str(meta.get("group"))]
            cell[0].append(bool(check.get("passed")))
            cell[1].append(_instance(record))
    return [(group, len(winning[group][0]), _pooled(*winning[group]), len(losing[group][0]), _pooled(*losing[group]))
            for group in sorted(set(winning) | set(losing))]


def _known(found: Mapping[str, stats.Estimate | None]) -> dict[str, stats.Estimate]:
    return {name: estimate for name, estimate in found.items() if estimate is not None}


def _instance(record: Mapping[str, Any]) -> str:
    return str(record.get("nodeid") or id(record))  # records always have one; a record made in code, its identity


def if_tables(records: Sequence[Mapping[str, Any]]) -> list[MetricTable]:
    def row(label: str, group: Sequence[Mapping[str, Any]]) -> tuple[Any, ...]:
        outs = [o for r in group if (o := outcome(r)) is not None]
        suppressed = [(s, _instance(r)) for r in group if (o := outcome(r)) is not None for s in o["suppressed"]]
        return (label, len(group), len(group) - len(outs), _acc(o["acc"] for o in outs),
                _mean(o["share"] for o in outs), len(suppressed),
                _pooled([s for s, _ in suppressed], [i for _, i in suppressed]))

    rows = [row("all", records)]
    for label, key in (("ppi", lambda r: _meta(r).get("ppi")), ("tier", lambda r: r.get("tier"))):
        groups: dict[Any, list[Mapping[str, Any]]] = defaultdict(list)
        for record in records:
            if key(record) is not None:
                groups[key(record)].append(record)
        if len(groups) > 1:
            rows.extend(row(f"{label}={value}", groups[value]) for value in sorted(groups, key=_natural))
    outs = [o for r in records if (o := outcome(r)) is not None]
    found = {"instruction following Acc": stats.proportion([bool(o["acc"]) for o in outs if o["acc"] is not None]),
             "instruction following CSR": stats.mean([float(o["share"]) for o in outs if o["share"] is not None])}
    tables = [MetricTable(
        title="manyih instruction following: accuracy", rows=tuple(rows), estimates=_known(found),
        columns=("", "items", "errors", "Acc", "CSR", "suppressed", "suppressed satisfied"),
        notes=("Acc: every active constraint passes; CSR: mean share of active constraints passed", ACC_NOTE,
               "CSR ±SE [95% CI]: " + stats.METHODS["t"] + " (instances)", CHECKS_NOTE))]
    pairs = _pairs(records, lambda r: _meta(r).get("ppi") == "ordinal", lambda r: _meta(r).get("ppi") == "scalar")
    if pairs:
        tables.append(_paired_table("manyih instruction following: ordinal vs scalar", pairs,
                                    ("ordinal", "scalar"), "Δ = scalar − ordinal, in percentage points", flips=False))
    return tables


def tables(records: list[dict[str, Any]]) -> list[MetricTable]:
    """Every ManyIH table for ``records`` (coding and instruction-following subsets)."""
    coding = [r for r in records if subset(r) == "coding"]
    follow = [r for r in records if subset(r) == "if"]
    return (coding_tables(coding) if coding else []) + (if_tables(follow) if follow else [])


def plots(records: list[dict[str, Any]], directory: Any) -> list[Any]:
    """``manyih_accuracy_by_tier.png``: coding Acc and Acc_style by tier, one line per interface."""
    coding = [r for r in records if subset(r) == "coding" and not _meta(r).get("perturbed")]
    series: dict[tuple[str, str], dict[int, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for record in coding:
        out = outcome(record)
        if out is None or record.get("tier") is None:
            continue
        for metric in ("acc", "style"):
            series[(str(_meta(record).get("ppi")), metric)][int(record["tier"])].append(out[metric])
    if not series:
        return []
    from matplotlib.figure import Figure  # Agg through savefig; no pyplot, no global state

    figure = Figure(figsize=(6, 4))
    axis = figure.add_subplot()
    colours = {ppi: f"C{index}" for index, ppi in enumerate(sorted({ppi for ppi, _ in series}))}
    for (ppi, metric), by_tier in sorted(series.items()):
        tiers = sorted(by_tier)
        label = f"{ppi} {'Acc' if metric == 'acc' else 'Acc_style'}"
        axis.plot(tiers, [100 * statistics.fmean(by_tier[t]) for t in tiers], marker="o", color=colours[ppi],
                  linestyle="-" if metric == "acc" else "--", label=label)
    axis.set_xticks(sorted({t for by_tier in series.values() for t in by_tier}))
    axis.set_xlabel("privilege tiers (instructions per sample)")
    axis.set_ylabel("accuracy (%)")
    axis.set_ylim(-2, 102)
    axis.set_title("ManyIH coding: accuracy by tier")
    axis.legend()
    axis.grid(alpha=0.3)
    path = Path(directory) / "manyih_accuracy_by_tier.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    return [path]


def hierarchy_lines(record: Mapping[str, Any]) -> list[str]:
    from .ppi import ordinal_ranks

    checks = record.get("checks") or []
    ranks = ordinal_ranks([(c.get("metadata") or {})["privilege"] for c in checks
                           if (c.get("metadata") or {}).get("privilege") is not None])
    rows = []
    for check in checks:
        meta = check.get("metadata") or {}
        if "privilege" not in meta and _role(check) != "tests":
            continue
        if _role(check) == "tests":
            where, status = "", "scored"
        else:
            where = f"P{ranks.get(meta['privilege'])} z={meta['privilege']}"
            status = "winner" if check.get("scored", True) else "suppressed (not scored)"
        verdict = "pass" if check.get("passed") else "FAIL" if check.get("scored", True) else "followed: no"
        if not check.get("scored", True) and check.get("passed"):
            verdict = "followed: yes"
        rows.append((where, status, str(check.get("id")), verdict))
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
