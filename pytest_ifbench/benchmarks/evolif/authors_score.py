"""The metrics as the EvolIF authors' ``src/score.py`` computes them, with REC's degenerate cases made explicit.

``score.py`` differs from the paper's formulas (``metrics.py``) in REC: per
dialogue it divides the recoveries (a success right after a failure) by
``turns - successes - 1``, i.e. it assumes every dialogue ends on a failure it
could not recover from. Then

* a dialogue without failures scores ``0 / -1 = -0.0`` (it lowers the mean);
* a dialogue whose only failure is its last turn scores ``0 / 0 = nan``;
* a dialogue that recovered and then ran out of script scores ``n / 0 = inf``
  (or a too-high finite value);

and ``numpy.mean`` turns the average into ``nan`` or ``inf`` when one dialogue
is. :func:`score` returns the same average (``rec``) and, beside it, how many
dialogues had each kind of outcome, so a table never shows a bare nan/inf.
CSR is the mean of the per-turn constraint fractions (every turn weighs the
same), ISR pooled successful turns / turns, "Robustness" (STA) the mean of
per-dialogue success shares, as in the paper.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def _divide(numerator: float, denominator: float) -> float:
    """IEEE division as numpy does it: x/0 is inf (x > 0) or nan (x = 0)."""
    if denominator == 0:
        return math.nan if numerator == 0 else math.copysign(math.inf, numerator)
    return numerator / denominator


def dialogue_rec(successes: Sequence[bool]) -> float:
    """One dialogue's REC as ``score.py`` computes it."""
    recovered = sum(1 for t in range(1, len(successes)) if not successes[t - 1] and successes[t])
    return _divide(recovered, len(successes) - sum(successes) - 1)


@dataclass(frozen=True, kw_only=True)
class AuthorsScores:
    dialogues: int
    endurance: tuple[float, float, float]
    lss: float
    csr: float
    isr: float
    robustness: float
    rec: float
    rec_finite: int
    rec_nan: int
    rec_inf: int
    rec_negative_zero: int


def score(dialogues: Sequence[Sequence[Sequence[bool]]]) -> AuthorsScores | None:
    """``dialogues``: per dialogue, per turn, the verdicts of that turn's (distinct-id) constraints."""
    if not dialogues:
        return None
    fractions = [sum(turn) / len(turn) for d in dialogues for turn in d]
    successes = [[all(turn) for turn in d] for d in dialogues]
    lengths = [len(d) for d in dialogues]
    recs = [dialogue_rec(s) for s in successes]
    finite = [r for r in recs if math.isfinite(r)]
    if any(math.isnan(r) for r in recs) or (math.inf in recs and -math.inf in recs):
        rec = math.nan
    elif any(math.isinf(r) for r in recs):
        rec = next(r for r in recs if math.isinf(r))
    else:
        rec = statistics.fmean(recs)
    return AuthorsScores(
        dialogues=len(dialogues),
        endurance=(statistics.fmean(lengths), statistics.fmean(sum(sum(t) / len(t) for t in d) for d in dialogues),
                   statistics.fmean(sum(s) for s in successes)),
        lss=statistics.fmean(_longest_run(s) for s in successes),
        csr=statistics.fmean(fractions),
        isr=sum(map(sum, successes)) / sum(lengths),
        robustness=statistics.fmean(sum(s) / len(s) for s in successes),
        rec=rec,
        rec_finite=sum(1 for r in finite if not (r == 0 and math.copysign(1, r) < 0)),
        rec_nan=sum(1 for r in recs if math.isnan(r)),
        rec_inf=sum(1 for r in recs if math.isinf(r)),
        rec_negative_zero=sum(1 for r in recs if r == 0 and math.copysign(1, r) < 0),
    )


def _longest_run(successes: Sequence[bool]) -> int:
    best = run = 0
    for ok in successes:
        run = run + 1 if ok else 0
        best = max(best, run)
    return best
