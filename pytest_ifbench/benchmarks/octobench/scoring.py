"""OctoBench's ISR and CSR (equations 1-2), in two modes, from result records or from judge outputs.

``paper``: K_i is the instance's applicable scored checks. A check judged ``not_applicable`` is left
out of K_i; a check that errored -- a judged check the judge omitted from its answer, above all --
stays in K_i and counts as NOT passed (r_ik = 0)::

    ISR = 1/N * sum_i 1[all k in K_i: r_ik = 1]        CSR = 1/N * sum_i (sum_k r_ik) / K_i

N counts the instances that ran (errored instances are reported, not scored) and that have
K_i > 0.

``reference``: the authors' scorer (``evaluate.py`` of mini-vela). reward_i = successes / checks
present in the judge's answer, rounded to 3 decimals; binary_i = (reward_i == 1.0); ISR = mean
binary, CSR = mean reward. An omitted check is not present (so it scores like a pass), there is no
not-applicable state (a ``not_applicable`` answer is present and not a success), an instance whose
judge call or run failed scores 0.0, and so does one with no check present.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MODES = ("paper", "reference")
Record = Mapping[str, Any]
Check = Mapping[str, Any]
Select = Callable[[Check], bool]


@dataclass(frozen=True, slots=True, kw_only=True)
class Score:
    """One instance's result: all checks passed, the share passed, and how many checks counted."""

    passed: bool
    share: float
    checks: int


def _vote(check: Check, judge: str | None) -> Mapping[str, Any] | None:
    if judge is None:
        return None
    for vote in ((check.get("verdict") or {}).get("details") or {}).get("judges") or []:
        if vote.get("judge") == judge:
            return vote
    return None


def omitted(check: Check) -> bool:
    """A judged check that has no verdict: the judge left it out (or its call failed)."""
    return bool(check.get("error")) and not check.get("verdict")


def check_result(check: Check, judge: str | None = None) -> str:
    """``success``, ``fail``, ``not_applicable`` or ``omitted``, as ``judge`` saw it (None: the verdict). A
    judge that left the check out of a panel that decided it without that judge omitted it, as it saw it."""
    if omitted(check) or (judge is not None and judge in (((check.get("verdict") or {}).get("details") or {})
                                                         .get("omitted") or ())):
        return "omitted"
    vote = _vote(check, judge)
    if vote is not None:
        if vote.get("applicable") is False:
            return "not_applicable"
        return "success" if vote.get("passed") else "fail"
    if check.get("applicable") is False:
        return "not_applicable"
    return "success" if check.get("passed") else "fail"


def scored(record: Record, select: Select | None = None) -> list[Check]:
    """The scored ``check``-kind checks of a record, optionally only those ``select`` keeps."""
    return [c for c in record.get("checks") or [] if c.get("scored", True) and c.get("kind", "check") == "check"
            and (select is None or select(c))]


def instance_score(record: Record, *, judge: str | None = None, mode: str = "paper",
                   select: Select | None = None) -> Score | None:
    """The instance's score in ``mode``; None when it does not count (see the module doc)."""
    results = [check_result(c, judge) for c in scored(record, select)]
    if record.get("status") == "error":  # the authors' breakdowns have no entry for a failed instance
        return Score(passed=False, share=0.0, checks=0) if mode == "reference" and select is None else None
    if mode == "reference":
        present = [r for r in results if r != "omitted"]
        reward = round(sum(r == "success" for r in present) / len(present), 3) if present else 0.0
        if select is not None and not present:
            return None  # a breakdown: the instance has no check of this kind
        return Score(passed=reward == 1.0, share=reward, checks=len(present))
    counted = [r == "success" for r in results if r != "not_applicable"]
    if not counted:
        return None
    return Score(passed=all(counted), share=sum(counted) / len(counted), checks=len(counted))


@dataclass(frozen=True, slots=True, kw_only=True)
class Rates:
    n: int
    errors: int
    isr: float | None
    csr: float | None


def rates(records: Iterable[Record], *, judge: str | None = None, mode: str = "paper",
          select: Select | None = None) -> Rates:
    records = list(records)
    scores = [s for r in records if (s := instance_score(r, judge=judge, mode=mode, select=select)) is not None]
    errors = sum(r.get("status") == "error" for r in records)
    if not scores:
        return Rates(n=0, errors=errors, isr=None, csr=None)
    return Rates(n=len(scores), errors=errors, isr=statistics.fmean(s.passed for s in scores),
                 csr=statistics.fmean(s.share for s in scores))


def judges_of(records: Iterable[Record]) -> list[str | None]:
    """Every judge that voted on a check of the records, sorted; ``[None]`` when none did."""
    found = sorted({v["judge"] for r in records for c in r.get("checks") or []
                    for v in ((c.get("verdict") or {}).get("details") or {}).get("judges") or [] if v.get("judge")})
    return list(found) or [None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Panel:
    """Per-judge rates and their mean and (population) std across judges (Table 2, avg@k)."""

    per_judge: dict[str | None, Rates]

    def _values(self, key: str) -> list[float]:
        return [v for r in self.per_judge.values() if (v := getattr(r, key)) is not None]

    def mean_std(self, key: str) -> tuple[float, float] | None:
        values = self._values(key)
        if not values:
            return None
        return statistics.fmean(values), statistics.pstdev(values) if len(values) > 1 else 0.0

    def cell(self, key: str) -> str:
        found = self.mean_std(key)
        if found is None:
            return "-"
        mean, std = found
        return f"{100 * mean:.1f}" + (f" ± {100 * std:.1f}" if len(self._values(key)) > 1 else "")

    @property
    def n(self) -> int:
        return max((r.n for r in self.per_judge.values()), default=0)


def panel(records: Sequence[Record], *, mode: str = "paper", select: Select | None = None,
          judges: Sequence[str | None] | None = None) -> Panel:
    judges = list(judges) if judges is not None else judges_of(records)
    return Panel(per_judge={j: rates(records, judge=j, mode=mode, select=select) for j in judges})


# --------------------------------------------------------------------------- the authors' judge outputs


def reference_reward(eval_result: Any) -> float:
    """The authors' reward of one judge answer: successes / checks present, 3 decimals; 0.0 on an error."""
    if not isinstance(eval_result, dict) or "error" in eval_result:
        return 0.0
    results = [item.get("result") for block in eval_result.values() if isinstance(block, dict)
               for item in block.get("checks") or [] if isinstance(item, dict)]
    return round(sum(r == "success" for r in results) / len(results), 3) if results else 0.0


def paper_score(eval_result: Any, checklist: Mapping[str, Any] | None = None) -> Score | None:
    """Our score of one judge answer: every check of ``checklist`` (the instance's, when known; else the
    checks the answer holds) counts, an omitted one as not passed, a ``not_applicable`` one not at all.
    None when the judge's answer is an error (the instance is then reported, not scored)."""
    if not isinstance(eval_result, dict) or "error" in eval_result:
        return None
    said = {str(item.get("check_id")): str(item.get("result", "")).strip().lower()
            for block in eval_result.values() if isinstance(block, dict)
            for item in block.get("checks") or [] if isinstance(item, dict)}
    source = checklist if checklist is not None else eval_result
    ids = [str(item.get("check_id")) for block in source.values() if isinstance(block, dict)
           for item in block.get("checks") or [] if isinstance(item, dict)]
    counted = [said.get(i) == "success" for i in ids if said.get(i) not in ("not_applicable", "n/a")]
    if not counted:
        return None
    return Score(passed=all(counted), share=sum(counted) / len(counted), checks=len(counted))


def omissions(eval_result: Any, checklist: Mapping[str, Any]) -> list[str]:
    """Check ids of ``checklist`` that the judge's answer does not hold."""
    if not isinstance(eval_result, dict):
        return []
    said = {str(item.get("check_id")) for block in eval_result.values() if isinstance(block, dict)
            for item in block.get("checks") or [] if isinstance(item, dict)}
    return [str(item.get("check_id")) for block in checklist.values() if isinstance(block, dict)
            for item in block.get("checks") or [] if isinstance(item, dict) and str(item.get("check_id")) not in said]
