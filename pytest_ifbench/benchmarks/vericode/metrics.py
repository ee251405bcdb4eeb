"""Vibe Checker metrics (sections 3.2 and 4): instruction following, functionality, position, categories.

Computed from the result records of ``benchmark: vericode`` instances. Each
instance is one (task, k, protocol); its checks carry ``metadata.role``:
``instruction`` checks (with ``position`` 1..k and ``category``) and one
``functional`` check (the task's unit tests). The functional check never
counts towards instruction following; it drives pass@1 and FR_k.

* IF_instruction = mean over instances of (instructions passed / k)
* IF_task = share of instances whose k instructions all passed
* pass@1 = share of instances whose functional check passed (one sample each)
* FR_k = (S_0 - S_k) / S_0, with S_k the pass@1 at k instructions and S_0 the
  pass@1 of the k = 0 instances (the original prompt) of the same tasks
* IF by position: share of instruction checks passed at each position
  (single-turn: the number in the appended list; multi-turn: the editing round)
* IF by category / by instruction: share of instruction checks passed

Instances that errored are counted but excluded from every rate. Results are
grouped by ``metadata.testbed`` (bigvibe, livevibe, quick...) when a run holds
more than one.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_ifbench import MetricTable, errored, stats

BENCHMARK = "vericode"
PROTOCOLS = ("single_turn", "multi_turn")


# --------------------------------------------------------------------------- record access


def _role(check: Mapping[str, Any]) -> str | None:
    return (check.get("metadata") or {}).get("role")


def instruction_checks(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Scored checks that are instructions (every scored check whose role is not functional)."""
    return [c for c in record.get("checks", []) if c.get("scored", True) and _role(c) != "functional"]


def functional_passed(record: Mapping[str, Any]) -> bool | None:
    for check in record.get("checks", []):
        if _role(check) == "functional":
            return bool(check.get("passed"))
    return None


def k_of(record: Mapping[str, Any]) -> int:
    k = (record.get("metadata") or {}).get("k")
    return int(k) if isinstance(k, int) else len(instruction_checks(record))


def task_of(record: Mapping[str, Any]) -> str:
    return str((record.get("metadata") or {}).get("task") or record.get("instance"))


def testbed_of(record: Mapping[str, Any]) -> str:
    return str((record.get("metadata") or {}).get("testbed") or "all")


def position_of(check: Mapping[str, Any], index: int) -> int:
    position = (check.get("metadata") or {}).get("position")
    return int(position) if isinstance(position, int) else index + 1


def _ok(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in records if not errored(r)]


# --------------------------------------------------------------------------- the metrics


def if_scores(records: Sequence[Mapping[str, Any]]) -> tuple[float | None, float | None]:
    """(IF_instruction, IF_task) over instances that have instructions."""
    shares, alls = [], []
    for record in _ok(records):
        checks = instruction_checks(record)
        if not checks:
            continue
        passed = [bool(c.get("passed")) for c in checks]
        shares.append(sum(passed) / len(passed))
        alls.append(all(passed))
    if not shares:
        return None, None
    return statistics.fmean(shares), statistics.fmean(float(a) for a in alls)


def if_estimates(records: Sequence[Mapping[str, Any]]) -> tuple[stats.Estimate | None, stats.Estimate | None]:
    """(IF_instruction, IF_task) with SE and 95% interval, the instance as the unit: a t interval for the mean
    share (IF_instruction), the Wilson interval for the share of instances (IF_task)."""
    shares, alls = [], []
    for record in _ok(records):
        passed = [bool(c.get("passed")) for c in instruction_checks(record)]
        if passed:
            shares.append(sum(passed) / len(passed))
            alls.append(all(passed))
    return stats.mean(shares), stats.proportion(alls)


def pass_at_1_estimate(records: Sequence[Mapping[str, Any]]) -> stats.Estimate | None:
    """pass@1 with the Wilson interval over instances (one sample each)."""
    return stats.proportion([p for r in _ok(records) if (p := functional_passed(r)) is not None])


def pass_at_1(records: Sequence[Mapping[str, Any]]) -> float | None:
    results = [p for r in _ok(records) if (p := functional_passed(r)) is not None]
    return statistics.fmean(float(p) for p in results) if results else None


def functional_regression(s0: float | None, sk: float | None) -> float | None:
    """FR_k = (S_0 - S_k) / S_0; undefined (None) when S_0 is 0 or unknown."""
    if s0 is None or sk is None or s0 == 0:
        return None
    return (s0 - sk) / s0


def paired_base(base: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]]) -> float | None:
    """S_0 over the k = 0 instances of the tasks that ``records`` cover."""
    tasks = {task_of(r) for r in _ok(records)}
    return pass_at_1([r for r in base if task_of(r) in tasks])


def fr_estimate(base: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]]) -> stats.Estimate | None:
    """FR_k with its interval: a ratio of two pass@1 rates over the same tasks, so the task is the unit -- the
    percentile bootstrap of the tasks (each resampled task brings its k = 0 and its k instances along)."""
    # per task: [k=0 passed, k=0 run, k passed, k run] -- a resample sums counts, it never copies lists
    by_task: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for record in _ok(records):
        if (passed := functional_passed(record)) is not None:
            counts = by_task[task_of(record)]
            counts[2] += passed
            counts[3] += 1
    for record in _ok(base):
        if task_of(record) in by_task and (passed := functional_passed(record)) is not None:
            counts = by_task[task_of(record)]
            counts[0] += passed
            counts[1] += 1

    def fr(tasks: Sequence[str]) -> float | None:
        s0_passed = s0_run = sk_passed = sk_run = 0
        for task in tasks:
            a, b, c, d = by_task[task]
            s0_passed, s0_run, sk_passed, sk_run = s0_passed + a, s0_run + b, sk_passed + c, sk_run + d
        return functional_regression(s0_passed / s0_run if s0_run else None, sk_passed / sk_run if sk_run else None)

    return stats.bootstrap(sorted(by_task), fr)


def checks_at(records: Sequence[Mapping[str, Any]], key: str | None = None) -> dict[Any, tuple[list[bool], list[str]]]:
    """Instruction-check outcomes and their instances, by position (``key`` None) or by ``metadata[key]``:
    the checks of one instance are not independent, so the intervals cluster them by instance."""
    out: dict[Any, tuple[list[bool], list[str]]] = defaultdict(lambda: ([], []))
    for record in _ok(records):
        for index, check in enumerate(instruction_checks(record)):
            if key is None:
                label: Any = position_of(check, index)
            else:
                meta = check.get("metadata") or {}
                label = str(meta.get(key) or (check.get("category") if key == "category" else check.get("id")) or "-")
            out[label][0].append(bool(check.get("passed")))
            out[label][1].append(str(record.get("nodeid") or record.get("instance")))
    return out


def position_rates(records: Sequence[Mapping[str, Any]]) -> dict[int, tuple[int, int]]:
    """position -> (instruction checks passed, instruction checks)."""
    out: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for record in _ok(records):
        for index, check in enumerate(instruction_checks(record)):
            cell = out[position_of(check, index)]
            cell[0] += bool(check.get("passed"))
            cell[1] += 1
    return {p: (a, b) for p, (a, b) in sorted(out.items())}


# --------------------------------------------------------------------------- tables


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _est(estimate: stats.Estimate | None) -> str:
    return "-" if estimate is None else estimate.pct()


def _rate(cell: tuple[list[bool], list[str]] | None) -> str:
    """A share of instruction checks, clustered by instance: ``62.5% ±6.1 [49.3, 74.0] (40)``."""
    if not cell or not cell[0]:
        return "-"
    estimate = stats.clustered([float(v) for v in cell[0]], cell[1])
    assert estimate is not None
    return f"{estimate.pct()} ({len(cell[0])})"


#: The note of the tables of instruction-check shares.
_CHECKS_NOTE = ("±SE [95% CI]: the checks of one instance are not independent: " + stats.METHODS["cluster"]
                .replace("dialogues", "instances"))


def _fr(base: Sequence[Mapping[str, Any]], group: Sequence[Mapping[str, Any]],
        estimate: stats.Estimate | None = None) -> str:
    estimate = estimate or fr_estimate(base, group)
    if estimate is not None:
        return estimate.pct()
    return _pct(functional_regression(paired_base(base, group), pass_at_1(group)))


def _by_protocol_k(records: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], list[Mapping[str, Any]]]:
    groups: dict[tuple[str, int], list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        k = k_of(record)
        if k > 0:
            groups[(record.get("protocol") or "single_turn", k)].append(record)
    return groups


def _protocol_order(protocol: str) -> tuple[int, str]:
    return (PROTOCOLS.index(protocol) if protocol in PROTOCOLS else len(PROTOCOLS), protocol)


def main_table(records: Sequence[Mapping[str, Any]], title: str) -> MetricTable:
    base = [r for r in records if k_of(r) == 0]
    rows: list[tuple[Any, ...]] = []
    #: The headline numbers for the results file: k = 0 pass@1 and each protocol's "all k" row.
    estimates: dict[str, stats.Estimate] = {}
    if base:
        rows.append(("k=0 (original prompt)", len(base), len(base) - len(_ok(base)), "-", "-",
                     _est(pass_at_1_estimate(base)), "-"))
        if (s0 := pass_at_1_estimate(base)) is not None:
            estimates["k=0 pass@1"] = s0
    groups = _by_protocol_k(records)
    for protocol in sorted({p for p, _ in groups}, key=_protocol_order):
        for k in sorted(k for p, k in groups if p == protocol):
            group = groups[(protocol, k)]
            inst, task = if_estimates(group)
            rows.append((f"{protocol} k={k}", len(group), len(group) - len(_ok(group)), _est(inst), _est(task),
                         _est(pass_at_1_estimate(group)), _fr(base, group)))
        everything = [r for (p, _), g in groups.items() if p == protocol for r in g]
        inst, task = if_estimates(everything)
        found = {"IF_instruction": inst, "IF_task": task, "pass@1": pass_at_1_estimate(everything),
                 "FR_k": fr_estimate(base, everything)}
        estimates.update({f"{protocol} all k {name}": e for name, e in found.items() if e is not None})
        rows.append((f"{protocol} all k", len(everything), len(everything) - len(_ok(everything)), _est(inst),
                     _est(task), _est(found["pass@1"]), _fr(base, everything, found["FR_k"])))
    notes = ["IF excludes the functional check; pass@1 and FR_k = (S_0 - S_k)/S_0 use only it",
             "S_0 = pass@1 of the k=0 instances of the same tasks",
             "±SE [95% CI] over instances: IF_instruction " + stats.METHODS["t"] + "; IF_task, pass@1 "
             + stats.METHODS["wilson"] + "; FR_k (a ratio of two rates over the same tasks): "
             + stats.METHODS["bootstrap"] + " over tasks"]
    if not base:
        notes.append("no k=0 instances were run, so FR_k is undefined")
    return MetricTable(title=title, columns=("", "items", "errors", "IF_instruction", "IF_task", "pass@1", "FR_k"),
                       rows=tuple(rows), notes=tuple(notes), estimates=estimates)


def position_table(records: Sequence[Mapping[str, Any]], title: str) -> MetricTable | None:
    groups = _by_protocol_k(records)
    if not groups:
        return None
    width = max(k for _, k in groups)
    rows = []
    for protocol in sorted({p for p, _ in groups}, key=_protocol_order):
        for k in sorted(k for p, k in groups if p == protocol):
            if k < 2:
                continue
            cells = checks_at(groups[(protocol, k)])
            rows.append((f"{protocol} k={k}", *(_rate(cells.get(p)) for p in range(1, width + 1))))
        everything = [r for (p, _), g in groups.items() if p == protocol for r in g]
        cells = checks_at(everything)
        rows.append((f"{protocol} all k", *(_rate(cells.get(p)) for p in range(1, width + 1))))
    return MetricTable(title=title, columns=("", *(f"pos {p}" for p in range(1, width + 1))), rows=tuple(rows),
                       notes=("share of instruction checks passed at each position (n in parentheses); "
                              "single-turn: list number, multi-turn: editing round", _CHECKS_NOTE))


def breakdown_table(records: Sequence[Mapping[str, Any]], title: str, key: str) -> MetricTable | None:
    from .instructions import BY_ID, CATEGORIES

    by_protocol = {p: checks_at([r for r in records if (r.get("protocol") or "single_turn") == p and k_of(r) > 0],
                                key) for p in PROTOCOLS}
    labels = sorted({label for rates in by_protocol.values() for label in rates})
    if not labels:
        return None
    order = list(CATEGORIES) if key == "category" else list(BY_ID)
    labels.sort(key=lambda x: (order.index(x) if x in order else len(order), x))
    rows = []
    for label in labels:
        if key == "category":
            name = CATEGORIES.get(label, label)
        else:
            name = f"{label} {BY_ID[label].title}" if label in BY_ID else label
        rows.append((name, *(_rate(by_protocol[p].get(label)) for p in PROTOCOLS)))
    return MetricTable(title=title, columns=("", *PROTOCOLS), rows=tuple(rows),
                       notes=("share of instruction checks passed (n in parentheses)", _CHECKS_NOTE))


def vericode_tables(records: Sequence[Mapping[str, Any]]) -> list[MetricTable]:
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        groups[testbed_of(record)].append(record)
    tables: list[MetricTable] = []
    for testbed in sorted(groups):
        group = groups[testbed]
        prefix = f"vericode [{testbed}]" if len(groups) > 1 else "vericode"
        main = main_table(group, f"{prefix}: instruction following and functionality")
        if len(groups) > 1:  # one results-file entry per testbed
            main = replace(main, estimates={f"[{testbed}] {k}": v for k, v in main.estimates.items()})
        tables.append(main)
        for table in (position_table(group, f"{prefix}: IF by instruction position"),
                      breakdown_table(group, f"{prefix}: IF by instruction category", "category"),
                      breakdown_table(group, f"{prefix}: IF by instruction", "instruction")):
            if table is not None:
                tables.append(table)
    return tables


# --------------------------------------------------------------------------- hooks


def plots(records: list[dict[str, Any]], directory: Any) -> list[Path]:
    """One PNG per testbed: IF by instruction position, one panel per protocol, one line per k."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # Agg, no pyplot: no global state, no GUI
    from matplotlib.figure import Figure

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        groups[testbed_of(record)].append(record)
    written = []
    for testbed in sorted(groups):
        by_pk = _by_protocol_k(groups[testbed])
        protocols = sorted({p for p, _ in by_pk}, key=_protocol_order)
        if not protocols:
            continue
        figure = Figure(figsize=(5 * len(protocols), 3.6))
        FigureCanvasAgg(figure)
        axes = figure.subplots(1, len(protocols), squeeze=False, sharey=True)
        for axis, protocol in zip(axes[0], protocols):
            for k in sorted(k for p, k in by_pk if p == protocol):
                rates = position_rates(by_pk[(protocol, k)])
                xs = [p for p, (_, n) in rates.items() if n]
                axis.plot(xs, [100 * rates[p][0] / rates[p][1] for p in xs], marker="o", label=f"k={k}")
            axis.set_xticks(range(1, max(k for p, k in by_pk if p == protocol) + 1))
            axis.set_title(protocol.replace("_", "-"))
            axis.set_xlabel("instruction position")
            axis.set_ylim(-5, 105)
            axis.grid(alpha=0.3)
            axis.legend(fontsize="small", loc="lower right")
        axes[0][0].set_ylabel("instruction-level IF (%)")
        figure.suptitle(f"vericode [{testbed}]: IF by instruction position")
        figure.tight_layout()
        path = directory / (f"vericode_if_by_position_{testbed}.png")
        figure.savefig(path, dpi=100)
        written.append(path)
    return written
