"""Judge rank stability (Figure 4): rank the models under test per judge, and how well judges agree.

Ranks are 1 = best, ties get the mean of the ranks they span. Agreement between two judges is
Kendall's tau-b and Spearman's rho (the Pearson correlation of the tie-averaged ranks), in plain
Python.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations


def rank(scores: Mapping[str, float]) -> dict[str, float]:
    """Rank 1 for the highest score; ties share their mean rank."""
    ordered = sorted(scores, key=lambda k: -scores[k])
    out: dict[str, float] = {}
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and scores[ordered[j + 1]] == scores[ordered[i]]:
            j += 1
        for k in ordered[i:j + 1]:
            out[k] = (i + j) / 2 + 1
        i = j + 1
    return out


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two paired sequences; None when undefined (fewer than 2 items, or all tied)."""
    concordant = discordant = ties_x = ties_y = 0
    for i, j in combinations(range(len(x)), 2):
        dx, dy = x[i] - x[j], y[i] - y[j]
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            ties_x += 1
        elif dy == 0:
            ties_y += 1
        elif (dx > 0) == (dy > 0):
            concordant += 1
        else:
            discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return None if denominator == 0 else (concordant - discordant) / denominator


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's r of the (tie-averaged) ranks; None when undefined."""
    if len(x) < 2:
        return None
    rx = [rank(dict(enumerate(x)))[i] for i in range(len(x))]
    ry = [rank(dict(enumerate(y)))[i] for i in range(len(y))]
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx, vy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    return None if vx == 0 or vy == 0 else cov / math.sqrt(vx * vy)


def agreement(scores: Mapping[str, Mapping[str, float]]) -> tuple[dict[str, dict[str, float]],
                                                                  list[tuple[str, str, float | None, float | None]]]:
    """``scores[judge][model]`` -> (ranks[judge][model], [(judge a, judge b, tau-b, rho)] per pair of judges),
    over the models every judge scored."""
    judges = sorted(scores)
    models = sorted(set.intersection(*(set(scores[j]) for j in judges))) if judges else []
    ranks = {j: rank({m: scores[j][m] for m in models}) for j in judges}
    pairs = []
    for a, b in combinations(judges, 2):
        x, y = [ranks[a][m] for m in models], [ranks[b][m] for m in models]
        pairs.append((a, b, kendall_tau_b(x, y), spearman(x, y)))
    return ranks, pairs
