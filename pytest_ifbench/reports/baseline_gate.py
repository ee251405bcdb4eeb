"""The baseline's gate by significance (``--ifbench-baseline-gate=paired``): one paired test per benchmark.

The fixed tolerance judges each check alone: one flip of a single verdict fails the run however noisy the
model is, and many small drops of sampled pass rates (each under the tolerance) never do. The paired gate
asks the question of the run instead. Every compared instance is a pair -- its baseline outcome and its
outcome now, over the suite's scored checks the baseline holds (a check not reached now counts as failed;
:func:`~.baseline_compare.instance_pair`) -- and per benchmark:

* ISR (all checks passed): the change with its paired-t interval, tested with the exact McNemar test on the
  instances that flipped;
* CSR (the mean pass rate of an instance's checks, sampled rates included): the change with the paired
  bootstrap's interval (fixed seed), tested with the exact sign-flip permutation test.

These are the tests of ``ifbench compare`` (:func:`~.compare.isr_delta`, :func:`~.compare.mean_delta`).
The run fails when either drops significantly at ``--ifbench-baseline-alpha``, the p-values of every
benchmark's two tests adjusted together by Holm's method (a run that did not change fails with probability at
most alpha, however many benchmarks); per-check drops are listed, and fail no subtest.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .compare import Delta, Gated, gated, isr_delta, mean_delta
from .compare_render import alone_note, delta_line, holm_note, named_drops

#: The gate's names, as ``--ifbench-baseline-gate`` takes them.
GATES = ("tolerance", "paired")


@dataclass(frozen=True, slots=True, kw_only=True)
class GateGroup:
    """One benchmark's paired instances and the change of its ISR and CSR."""

    benchmark: str
    pairs: int
    deltas: tuple[Delta, ...]


def evaluate(comparisons: Iterable[Mapping[str, Any]]) -> list[GateGroup]:
    """The paired changes per benchmark, from the instances' comparisons (as they travel, JSON)."""
    by_benchmark: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for comparison in comparisons:
        pair = comparison.get("pair")
        if comparison.get("status") == "compared" and pair:
            by_benchmark[str(comparison.get("benchmark"))].append(pair)
    groups = []
    for benchmark, pairs in sorted(by_benchmark.items()):
        deltas = (isr_delta([bool(p["base"][0]) for p in pairs], [bool(p["new"][0]) for p in pairs]),
                  mean_delta("CSR", [float(p["base"][1]) for p in pairs], [float(p["new"][1]) for p in pairs]))
        groups.append(GateGroup(benchmark=benchmark, pairs=len(pairs), deltas=deltas))
    return groups


def regressions(groups: Iterable[GateGroup], alpha: float) -> list[Gated]:
    """The significant drops the gate fails the run on: each benchmark's ISR and CSR change, their p-values
    adjusted together by Holm's method (:func:`~.compare.gated`)."""
    return gated([(g, d) for g in groups for d in g.deltas], alpha)


def gate_lines(groups: list[GateGroup], alpha: float) -> list[str]:
    """The gate's verdict and one line per benchmark and metric, for the terminal and the summary file."""
    drops = regressions(groups, alpha)
    tests = [(g, d) for g in groups for d in g.deltas]
    level = f"alpha {alpha:g}{holm_note(tests, alpha)}"
    if not groups:
        head = "paired gate: no instance compared with its baseline"
    elif drops:
        head = f"paired gate: significant regression at {level}, the run fails: {named_drops(drops)}"
    else:
        head = f"paired gate: no significant regression at {level}{alone_note(tests, alpha)}"
    return [head, *("  " + delta_line(g.benchmark, g.pairs, d, alpha) for g in groups for d in g.deltas)]
