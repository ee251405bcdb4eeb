"""Coverage of the intervals in pytest_ifbench.reports.stats, checked by simulation.

For each unit (instance, dialogue, samples of a task, judge panel) and n = 10, 100, 1,000, the share of
simulated runs whose 95% interval holds the true value is within 2 points of 95% (averaged over a grid of
true values for the proportion, whose exact coverage oscillates with p at small n)."""

from __future__ import annotations

import math
import random

import pytest

from pytest_ifbench import stats

REPS = 600


def coverage(draw, truth, estimate, reps=REPS, seed=7) -> float:
    rng = random.Random(seed)
    hits = 0
    for _ in range(reps):
        est = estimate(draw(rng))
        hits += est.low <= truth <= est.high
    return hits / reps


@pytest.mark.parametrize("n", [10, 100, 1000])
def test_instance_proportion_wilson(n):
    grid = (0.3, 0.4, 0.5, 0.6, 0.7)
    reps = 400 if n == 1000 else REPS
    rates = [coverage(lambda rng, p=p: [rng.random() < p for _ in range(n)], p, stats.proportion, reps=reps)
             for p in grid]
    assert abs(sum(rates) / len(rates) - 0.95) <= 0.02, rates


@pytest.mark.parametrize("n", [10, 100, 1000])
def test_instance_mean_t(n):
    # per-instance CSR: a share of 5 checks, each met with the instance's own difficulty
    def draw(rng):
        return [sum(rng.random() < p for _ in range(5)) / 5 for p in (rng.random() for _ in range(n))]
    reps = 300 if n == 1000 else REPS
    assert abs(coverage(draw, 0.5, stats.mean, reps=reps) - 0.95) <= 0.02


@pytest.mark.parametrize("g", [10, 100, 1000])
def test_dialogue_clustered(g):
    # turns of one dialogue share its difficulty: the naive per-turn interval is too narrow
    def draw(rng):
        values, clusters = [], []
        for d in range(g):
            p, turns = rng.betavariate(2, 2), rng.randint(3, 8)
            values += [float(rng.random() < p) for _ in range(turns)]
            clusters += [d] * turns
        return values, clusters
    reps = 250 if g == 1000 else REPS
    assert abs(coverage(draw, 0.5, lambda vc: stats.clustered(*vc), reps=reps) - 0.95) <= 0.02


@pytest.mark.parametrize("n", [10, 100, 1000])
def test_task_samples(n):
    # k = 4 samples per task: the unit is the task (its mean over samples), clustered by task
    def draw(rng):
        values, clusters = [], []
        for t in range(n):
            p = rng.betavariate(2, 2)
            values += [float(rng.random() < p) for _ in range(4)]
            clusters += [t] * 4
        return values, clusters
    reps = 250 if n == 1000 else REPS
    assert abs(coverage(draw, 0.5, lambda vc: stats.clustered(*vc), reps=reps) - 0.95) <= 0.02


@pytest.mark.parametrize("j", [10, 100, 1000])
def test_panel_across_judges(j):
    def draw(rng):
        return [min(1.0, max(0.0, rng.gauss(0.6, 0.05))) for _ in range(j)]
    reps = 300 if j == 1000 else REPS
    assert abs(coverage(draw, 0.6, stats.panel, reps=reps) - 0.95) <= 0.02


def test_small_n_gives_a_wide_interval_never_a_bare_share():
    est = stats.proportion([True, True, False])
    assert est.high - est.low > 0.5 and est.pct().startswith("66.7% ±27.2 [")
    assert stats.proportion([True] * 5).low < 0.6  # 100 % of 5 is not a sure thing


def test_bootstrap_is_reproducible_and_t_quantile_is_close():
    values = [0.1, 0.4, 0.4, 0.9, 0.7, 0.3]
    a, b = stats.bootstrap(values, lambda v: sum(v) / len(v)), stats.bootstrap(values, lambda v: sum(v) / len(v))
    assert a == b and a.low < 0.47 < a.high and a.method == "bootstrap"
    for df, expected in ((2, 4.303), (3, 3.182), (9, 2.262), (30, 2.042), (1000, 1.962)):
        assert math.isclose(stats.t_quantile(df), expected, abs_tol=4e-3)


def test_sign_test_exact():
    assert stats.sign_test(0, 0) == 1.0
    assert math.isclose(stats.sign_test(0, 6), 2 / 64)
    assert math.isclose(stats.sign_test(3, 3), 1.0)


def test_sign_flip_test_is_exact_and_holds_its_level():
    assert stats.sign_flip_test([0.0, 0.0]) == 1.0
    # pass/fail differences: the exact McNemar test
    assert math.isclose(stats.sign_flip_test([-1.0] * 7 + [0.0] * 3), stats.sign_test(0, 7))
    assert math.isclose(stats.sign_flip_test([-1.0] * 5 + [1.0] * 2), stats.sign_test(2, 5))
    # by enumeration: 2^4 sign patterns of (0.5, 0.25, 0.25, 0.1); |sum| >= 1.1 only for all-same signs
    assert math.isclose(stats.sign_flip_test([-0.5, -0.25, -0.25, -0.1]), 2 / 16)
    # the normal approximation past the enumeration's bound agrees with the exact test
    values = [((i * 37) % 101) / 101 - 0.3 for i in range(40)]
    exact = stats.sign_flip_test(values[:14])
    bound, stats._SIGN_FLIP_STATES = stats._SIGN_FLIP_STATES, 10
    try:
        assert abs(stats.sign_flip_test(values[:14]) - exact) < 0.02
    finally:
        stats._SIGN_FLIP_STATES = bound
    # why not the bootstrap's own p-value: 7 of 10 units dropping by one gets p < 0.001 there
    _, bootstrap_p = stats.paired_bootstrap([1.0] * 10, [0.0] * 7 + [1.0] * 3)
    assert bootstrap_p < 0.001 < 0.0156 < stats.sign_flip_test([-1.0] * 7 + [0.0] * 3)
    # its size under no change (n = 10 and 40, per-instance shares moving by a quarter): at most 5 %
    # (+1 point of simulation error)
    for n in (10, 40):
        rng = random.Random(11)
        reps = 400
        rejected = sum(stats.sign_flip_test([rng.choice((-0.25, 0.0, 0.0, 0.25)) for _ in range(n)]) < 0.05
                       for _ in range(reps))
        assert rejected / reps <= 0.06, n


def test_a_mean_without_spread_still_has_a_width():
    """Two instances at 100 % CSR do not make the mean exact: the Wilson interval of the share, not [100, 100]."""
    assert stats.mean([1.0, 1.0]).pct() == "100.0% ±0.0 [34.2, 100.0]"
    assert stats.mean([1.0, 1.0]).low == stats.proportion([True, True]).low
    assert stats.mean([0.5] * 3).pct() == "50.0% ±0.0 [12.5, 87.5]"


def test_weighted_cluster_ratio():
    values, clusters = [1.0, 0.0, 1.0, 1.0, 0.0], ["a", "a", "b", "c", "c"]
    assert stats.clustered(values, clusters, weights=[1.0] * 5) == stats.clustered(values, clusters)
    weighted = stats.clustered(values, clusters, weights=[2.0, 1.0, 1.0, 1.0, 3.0])
    assert weighted.value == pytest.approx((2 + 1 + 1) / 8) and weighted.n == 3 and weighted.method == "cluster"
    assert weighted.low < weighted.value < weighted.high
    assert stats.clustered([1.0], ["a"], weights=[0.0]) is None


def test_a_change_without_spread_still_has_a_width():
    # 20 pairs that did not move: no proof the population does not; the Wilson band of 0 of 20 moving
    none = stats.mean([0.0] * 20, bounds=(-1.0, 1.0), method="paired-t")
    assert none.value == 0 and none.high == pytest.approx(stats.proportion([False] * 20).high) == -none.low
    # every pair dropped by one: [-1, -L], L the Wilson lower bound of 10 of 10
    drop = stats.mean([-1.0] * 10, bounds=(-1.0, 1.0), method="paired-t")
    assert (drop.low, drop.high) == pytest.approx((-1.0, -stats.proportion([True] * 10).low))
    # the paired bootstrap the same way, with the exact test's p
    change, p = stats.paired_bootstrap([1.0] * 10, [0.0] * 10)
    assert (change.low, change.high) == (drop.low, drop.high) and p == pytest.approx(2 / 2 ** 10)
