"""Uncertainty of the headline metrics: a standard error and a 95% interval, by the right unit.

Every estimate is an :class:`Estimate` (value, standard error, interval, the number of units and the
method's name, which the tables print in a note). The methods, per unit of independence:

* ``wilson`` -- a share of independent pass/fail units (ISR over instances): the Wilson score interval,
  SE ``sqrt(p(1-p)/n)``. Exact in the sense that it needs no resampling, and it never leaves [0, 1] nor
  collapses to zero width at 0 % or 100 % the way the normal interval does.
* ``t`` -- a mean of independent per-unit values (CSR over instances, a rubric score, a per-task mean
  over samples): SE ``s/sqrt(n)``, interval ``mean +- t(0.975, n-1) * SE``, clipped to the values' range;
  n values in [0, 1] with no spread (all 100 %) get the Wilson interval of the mean as a share of n, never
  a zero-width interval.
* ``cluster`` -- a ratio of per-item values whose items come in dependent groups (the turns of one
  dialogue): the cluster-robust (CR1) SE of the ratio estimator over the G clusters, ``t(0.975, G-1)``.
* ``panel`` -- the spread across the judges of a panel (each judge's metric over the same instances):
  SE ``s_judges/sqrt(J)``, ``t(0.975, J-1)``. Kept apart from the sampling error: it says how much the
  number depends on which judge read the replies, not on which instances were drawn.
* ``paired-t`` / ``paired-bootstrap`` -- the change of a metric between two runs over the same units
  (``ifbench compare``, the baseline's paired gate): the mean of the per-unit differences with a t interval
  (pass/fail, tested with the exact sign test) or a paired bootstrap interval (means, tested with the
  sign-flip permutation test, :func:`sign_flip_test`: the bootstrap's own p-value is not exact at small
  n -- 7 of 10 instances dropping by one check gets p < 0.001 where the exact p is 0.016).
* ``holm`` -- a gate tests several changes at once (ISR, CSR and score per benchmark): their p-values are
  adjusted by Holm's step-down method (:func:`holm`), so the gate's chance of a false alarm is alpha, not
  alpha times the number of tests.
* ``bootstrap`` -- a statistic with no closed form: the percentile interval of ``B`` resamples of the
  units with a fixed seed (:data:`SEED`), so a report is reproducible to the digit.

No third-party dependency: the t quantile uses the Cornish-Fisher expansion around the normal quantile
(error below 4e-3 at df = 3, below 1e-3 from df = 4 on; df 1 and 2 in closed form).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

#: The interval's level everywhere.
LEVEL = 0.95
#: The bootstrap's fixed seed and number of resamples.
SEED = 20240601
RESAMPLES = 2000

METHODS = {
    "wilson": "Wilson score interval over instances",
    "t": "mean +- t(n-1) x SE over units",
    "cluster": "cluster-robust SE over dialogues, t(G-1)",
    "panel": "spread across judges, SE = sd/sqrt(J), t(J-1)",
    "bootstrap": f"percentile bootstrap ({RESAMPLES} resamples, seed {SEED})",
    "paired-bootstrap": f"paired percentile bootstrap of the change ({RESAMPLES} resamples, seed {SEED})",
    "paired-t": "mean of the paired differences +- t(n-1) x SE",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Estimate:
    """A metric with its standard error and 95% interval; ``n`` counts the independent units."""

    value: float
    se: float
    low: float
    high: float
    n: int
    method: str

    def to_json(self) -> dict[str, Any]:
        return {"value": _round(self.value), "se": _round(self.se), "ci95": [_round(self.low), _round(self.high)],
                "n": self.n, "method": self.method}

    def pct(self) -> str:
        """``62.5% ±6.1 [49.3, 74.0]``: the value, its SE and the interval, in percent."""
        return f"{100 * self.value:.1f}% ±{100 * self.se:.1f} [{100 * self.low:.1f}, {100 * self.high:.1f}]"

    def pts(self) -> str:
        """A change in percentage points: ``+12.5 ±5.0 [+2.1, +22.9]``."""
        return f"{100 * self.value:+.1f} ±{100 * self.se:.1f} [{100 * self.low:+.1f}, {100 * self.high:+.1f}]"

    def plain(self, digits: int = 3) -> str:
        """The same on the metric's own scale (a score of 0.613 ±0.041 [0.532, 0.694])."""
        return f"{self.value:.{digits}f} ±{self.se:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def _round(value: float) -> float:
    return round(value, 6)


def z_quantile(level: float = LEVEL) -> float:
    return statistics.NormalDist().inv_cdf(0.5 + level / 2)


def t_quantile(df: int, level: float = LEVEL) -> float:
    """The two-sided ``level`` quantile of Student's t with ``df`` degrees of freedom."""
    if df <= 0:
        return math.inf
    if df == 1:
        return math.tan(math.pi * level / 2)
    if df == 2:
        a = 1 - level
        return math.sqrt(2 / (a * (2 - a)) - 2)
    z = z_quantile(level)
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    g4 = (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160
    return z + g1 / df + g2 / df ** 2 + g3 / df ** 3 + g4 / df ** 4


def proportion(outcomes: Sequence[bool | float]) -> Estimate | None:
    """A share of independent pass/fail units: the Wilson score interval (None for no units)."""
    n = len(outcomes)
    if n == 0:
        return None
    p = sum(1.0 for o in outcomes if o) / n
    low, high = _wilson(p, n)
    return Estimate(value=p, se=math.sqrt(p * (1 - p) / n), low=low, high=high, n=n, method="wilson")


def _wilson(p: float, n: int) -> tuple[float, float]:
    z = z_quantile()
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def mean(values: Sequence[float], *, bounds: tuple[float, float] | None = (0.0, 1.0),
         method: str = "t") -> Estimate | None:
    """A mean of independent per-unit values: SE ``s/sqrt(n)``, a t interval clipped to ``bounds``."""
    n = len(values)
    if n == 0:
        return None
    m = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(n) if n > 1 else math.inf
    if se == 0 and bounds == (0.0, 1.0):
        # No spread among n values (every instance at 100 %, say) does not make the mean exact: the t interval
        # would have zero width. Take the widest a [0, 1] mean can be -- the Wilson interval of m as a share.
        wilson = _wilson(m, n)
        return Estimate(value=m, se=0.0, low=wilson[0], high=wilson[1], n=n, method=method)
    if se == 0 and bounds == (-1.0, 1.0):
        low, high = _no_spread_change(m, n)
        return Estimate(value=m, se=0.0, low=low, high=high, n=n, method=method)
    return _interval(m, se, n - 1, n, method, bounds)


def _no_spread_change(change: float, n: int) -> tuple[float, float]:
    """The interval of a change in [-1, 1] when all n paired units changed by the same ``change``: no
    spread is no proof of an exact change. As a share of units that moved (none, or all by ``change``),
    the Wilson interval of 0 of n (or n of n) bounds how far the population can differ: no change gives
    ``[-w, +w]`` with w the Wilson upper bound of 0/n; all moved by d gives ``[d * L, d]`` (``[d, d * L]``
    for a drop), L the Wilson lower bound of n/n."""
    if change == 0:
        w = _wilson(0.0, n)[1]
        return -w, w
    low = _wilson(1.0, n)[0]
    return (change * low, change) if change > 0 else (change, change * low)


def _interval(value: float, se: float, df: int, n: int, method: str,
              bounds: tuple[float, float] | None) -> Estimate:
    half = t_quantile(df) * se if se > 0 else 0.0
    low, high = value - half, value + half
    if bounds is not None:
        low, high = max(bounds[0], low), min(bounds[1], high)
    return Estimate(value=value, se=se, low=low, high=high, n=n, method=method)


def clustered(values: Sequence[float], clusters: Sequence[Hashable], *,
              bounds: tuple[float, float] | None = (0.0, 1.0),
              weights: Sequence[float] | None = None) -> Estimate | None:
    """The mean over items whose items share clusters (turns of a dialogue, samples of a task): the
    ratio estimator's cluster-robust (CR1) standard error, t with G-1 degrees of freedom. ``weights``
    makes it the weighted mean (e.g. a rubric dimension: points passed over points)."""
    if not values:
        return None
    weights = [1.0] * len(values) if weights is None else weights
    sums: dict[Hashable, list[float]] = {}
    for value, cluster, weight in zip(values, clusters, weights, strict=True):
        entry = sums.setdefault(cluster, [0.0, 0.0])
        entry[0] += value * weight
        entry[1] += weight
    g, total = len(sums), sum(weights)
    if total <= 0:
        return None
    ratio = sum(s for s, _ in sums.values()) / total
    if g < 2:
        return Estimate(value=ratio, se=math.inf, low=bounds[0] if bounds else -math.inf,
                        high=bounds[1] if bounds else math.inf, n=g, method="cluster")
    residual = sum((s - ratio * k) ** 2 for s, k in sums.values())
    se = math.sqrt(g / (g - 1) * residual) / total
    if se == 0 and bounds == (0.0, 1.0):
        # Every cluster at the same rate (all 100 %) is no proof of an exact rate: as for a mean without
        # spread, the Wilson interval of the ratio as a share of the G clusters (the independent units).
        low, high = _wilson(ratio, g)
        return Estimate(value=ratio, se=0.0, low=low, high=high, n=g, method="cluster")
    return _interval(ratio, se, g - 1, g, "cluster", bounds)


def panel(per_judge: Sequence[float], *, bounds: tuple[float, float] | None = (0.0, 1.0)) -> Estimate | None:
    """The mean of the judges' metrics with the SE of the judge-to-judge spread (never the sampling error)."""
    estimate = mean(per_judge, bounds=bounds, method="panel")
    return estimate


def bootstrap(units: Sequence[Any], statistic: Callable[[Sequence[Any]], float | None], *,
              resamples: int = RESAMPLES, seed: int = SEED) -> Estimate | None:
    """``statistic`` over the units with the percentile interval of ``resamples`` resamples (fixed seed).

    A statistic that is undefined on some resamples (None: a ratio whose denominator drew zero) is
    summarised over the others; None when it is undefined on the units themselves or on more than
    half of the resamples (the interval would say more than the data can)."""
    n = len(units)
    if n == 0:
        return None
    value = statistic(units)
    if value is None:
        return None
    if n == 1:  # one unit: nothing to resample, no spread to estimate
        return Estimate(value=value, se=math.inf, low=-math.inf, high=math.inf, n=1, method="bootstrap")
    rng = random.Random(seed)
    draws = sorted(d for _ in range(resamples)
                   if (d := statistic([units[rng.randrange(n)] for _ in range(n)])) is not None)
    if 2 * len(draws) < resamples:
        return None
    alpha = (1 - LEVEL) / 2
    low = draws[int(math.floor(alpha * (len(draws) - 1)))]
    high = draws[int(math.ceil((1 - alpha) * (len(draws) - 1)))]
    return Estimate(value=value, se=statistics.stdev(draws) if len(draws) > 1 else 0.0,
                    low=low, high=high, n=n, method="bootstrap")


def method_note(methods: Sequence[str]) -> str:
    """The table note naming how each interval was computed."""
    seen = list(dict.fromkeys(methods))
    return "±SE [95% CI]: " + "; ".join(f"{m}: {METHODS[m]}" for m in seen)


def sign_test(gains: int, losses: int) -> float:
    """Exact two-sided p-value of McNemar's test (the sign test on the discordant pairs): ``gains`` units
    went fail -> pass, ``losses`` pass -> fail; 1.0 when none changed."""
    n = gains + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(gains, losses) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values, in their order: reject each whose adjusted
    value is below alpha and the chance of any false rejection in the family stays at most alpha, under any
    dependence between the tests (a gate testing ISR, CSR and score of several benchmarks at alpha each
    would otherwise raise a false alarm far more often than alpha says). The k sorted p-values are
    multiplied by k, k-1, ..., 1, kept non-decreasing, capped at 1."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


#: Above this many distinct partial sums the sign-flip test uses its normal approximation.
_SIGN_FLIP_STATES = 200_000


def sign_flip_test(diffs: Sequence[float]) -> float:
    """Two-sided p-value of "no change" from paired differences: the permutation test that flips the sign of
    each unit's difference (under no change either sign is as likely). Exact over all ``2^n`` flips by
    counting the distribution of the sum (ties merge, so pass/fail data stay small); with more distinct
    sums than ``_SIGN_FLIP_STATES``, the normal approximation ``|S| / sqrt(sum d^2)``. For pass/fail
    differences it is the exact McNemar test. 1.0 when nothing moved."""
    values = [d for d in diffs if abs(d) > 1e-12]
    if not values:
        return 1.0
    observed = abs(sum(values))
    counts: dict[float, int] = {0.0: 1}
    for value in values:
        step: dict[float, int] = {}
        for total, count in counts.items():
            for moved in (round(total + value, 9), round(total - value, 9)):
                step[moved] = step.get(moved, 0) + count
        counts = step
        if len(counts) > _SIGN_FLIP_STATES:
            z = observed / math.sqrt(sum(v * v for v in values))
            return min(1.0, 2 * (1 - statistics.NormalDist().cdf(z)))
    extreme = sum(count for total, count in counts.items() if abs(total) >= observed - 1e-9)
    return min(1.0, extreme / 2 ** len(values))


def paired_bootstrap(base: Sequence[float], new: Sequence[float], *, resamples: int = RESAMPLES,
                     seed: int = SEED, bounds: tuple[float, float] | None = (-1.0, 1.0)) -> tuple[Estimate, float]:
    """The change of a mean between two runs over the same units (``new[i] - base[i]`` paired by unit):
    the difference with its bootstrap SE and percentile interval (``resamples`` resamples of the pairs,
    fixed ``seed``), and the two-sided p-value of "no change" (the share of resampled differences at least
    as far from the observed one as the observed one is from zero, the shift method). 1.0 when nothing moved."""
    if len(base) != len(new):
        raise ValueError(f"paired values of unequal length: {len(base)} vs {len(new)}")
    diffs = [b - a for a, b in zip(base, new, strict=True)]
    n = len(diffs)
    if n == 0:
        raise ValueError("no pairs")
    observed = statistics.fmean(diffs)
    if n == 1:  # one pair: no spread to estimate, as a t cell over one unit (SE inf, the whole range)
        low, high = bounds if bounds is not None else (-math.inf, math.inf)
        return Estimate(value=observed, se=math.inf, low=low, high=high, n=1, method="paired-bootstrap"), 1.0
    if bounds == (-1.0, 1.0) and all(d == diffs[0] for d in diffs):  # no spread: see _no_spread_change
        low, high = _no_spread_change(observed, n)
        return Estimate(value=observed, se=0.0, low=low, high=high, n=n, method="paired-bootstrap"), (
            1.0 if observed == 0 else sign_flip_test(diffs))
    rng = random.Random(seed)
    draws = sorted(statistics.fmean(diffs[rng.randrange(n)] for _ in range(n)) for _ in range(resamples))
    alpha = (1 - LEVEL) / 2
    low = draws[int(math.floor(alpha * (resamples - 1)))]
    high = draws[int(math.ceil((1 - alpha) * (resamples - 1)))]
    if bounds is not None:
        low, high = max(bounds[0], low), min(bounds[1], high)
    far = sum(1 for d in draws if abs(d - observed) >= abs(observed) - 1e-12)
    p = 1.0 if observed == 0 else min(1.0, (far + 1) / (resamples + 1))
    return Estimate(value=observed, se=statistics.stdev(draws) if resamples > 1 else 0.0, low=low, high=high,
                    n=n, method="paired-bootstrap"), p
