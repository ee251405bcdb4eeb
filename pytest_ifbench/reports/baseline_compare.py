"""What a baseline keeps of a result record, and how a run's checks compare with it."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from .metrics import applicable

#: Format of the stored payload: ``{"ifbench_baseline": 1, "model", ["judges"], "checks": {id: {"passed", ["rate"]}}}``.
PAYLOAD_FORMAT = 1


def check_entry(check: dict[str, Any]) -> dict[str, Any]:
    """What the baseline keeps of one check of a result record."""
    entry: dict[str, Any] = {"passed": bool(check.get("passed"))}
    details = (check.get("verdict") or {}).get("details") or {}
    rate = details.get("pass_rate")
    if rate is None and len(details.get("judges") or ()) > 1:
        rate = details.get("mean")
    if isinstance(rate, (int, float)) and not isinstance(rate, bool):
        entry["rate"] = round(float(rate), 4)
    return entry


def undecided(record: dict[str, Any]) -> list[str]:
    """The applicable scored checks of ``record`` that have no decision, only an error (a judge left them out of
    its answer, a verifier could not run): the instance errored on them (:func:`~.metrics.errored`), so
    they are neither compared with the baseline nor stored in it."""
    return [c["id"] for c in record.get("checks", []) if c.get("scored", True) and c.get("error") and applicable(c)]


def payload(record: dict[str, Any]) -> dict[str, Any]:
    """The snapshot of one instance: the model (and judges, when a check was judged) and its scored checks
    that were decided (:func:`undecided`: not the others)."""
    left = set(undecided(record))
    scored = [c for c in record.get("checks", []) if c.get("scored", True)]
    out: dict[str, Any] = {"ifbench_baseline": PAYLOAD_FORMAT, "model": record.get("model"),
                           "checks": {c["id"]: check_entry(c) for c in scored if c["id"] not in left}}
    if any((c.get("verdict") or {}).get("details", {}).get("judges") for c in scored):
        out["judges"] = list(record.get("judges") or [])
    return out


def kept(current: dict[str, Any], baseline: dict[str, Any] | None, checks: Collection[str]) -> dict[str, Any]:
    """The ``current`` payload with the ``baseline``'s entries of ``checks`` (the undecided ones): what an
    update stores, keeping what the baseline held of a check this run could not decide (as it keeps an
    errored instance's whole snapshot)."""
    old = (baseline or {}).get("checks") or {}
    return current | {"checks": current["checks"] | {c: old[c] for c in checks if c in old}}


def _setup(snapshot: dict[str, Any]) -> str:
    judges = snapshot.get("judges")
    return f"{snapshot.get('model')}" + (f" (judges {', '.join(judges)})" if judges else "")


def _rate(entry: dict[str, Any]) -> float:
    return float(entry["rate"]) if "rate" in entry else (1.0 if entry.get("passed") else 0.0)


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%"


@dataclass(kw_only=True)
class Comparison:
    """How one instance compares with its baseline; travels to the controller as JSON."""

    nodeid: str
    #: compared | new | updated | kept (errored: the old baseline is kept) | broken
    status: str
    regressions: dict[str, str] = field(default_factory=dict)
    improvements: dict[str, str] = field(default_factory=dict)
    known_failures: dict[str, str] = field(default_factory=dict)
    new_checks: list[str] = field(default_factory=list)
    #: checks of the suite that passed in the baseline but were not reached (patience)
    unreached: dict[str, str] = field(default_factory=dict)
    #: checks left undecided (an error, no verdict): not compared, their baseline kept
    undecided: list[str] = field(default_factory=list)
    #: with --snapshot-update: the checks whose stored outcome changed
    changed: list[str] = field(default_factory=list)
    #: "<baseline model> -> <current model>" when the baseline was recorded with another setup
    setup_changed: str | None = None
    error: str | None = None
    #: The instance's benchmark (the paired gate tests each benchmark apart).
    benchmark: str | None = None
    #: With the paired gate: the checks that dropped (regressions and unreached checks at tolerance 0),
    #: listed but not failed one by one -- the run-level test decides.
    drops: dict[str, str] = field(default_factory=dict)
    #: The instance as a pair for the paired gate: {"base": [passed, check share], "new": [...]}.
    pair: dict[str, list[Any]] = field(default_factory=dict)

    def defer(self) -> None:
        """Hand the per-check regressions to the paired gate: listed as drops, failing no subtest."""
        self.drops = {**self.regressions, **self.unreached}
        self.regressions.clear()
        self.unreached.clear()

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in ({}, [], None)}

    def note(self) -> str:
        """One line for ``user_properties`` (shown in JUnit XML and by other reporters)."""
        if self.status in ("new", "kept", "broken"):
            return {"new": "new instance (not in the baseline)",
                    "kept": "errored: baseline kept",
                    "broken": f"unreadable baseline: {self.error}"}[self.status]
        parts = []
        for label, names in (("regressions", self.regressions), ("not reached", self.unreached),
                             ("drops (gated by the paired test)", self.drops),
                             ("improvements", self.improvements), ("known failures", self.known_failures),
                             ("new checks", self.new_checks), ("undecided (baseline kept)", self.undecided),
                             ("updated", self.changed)):
            if names:
                parts.append(f"{label}: {', '.join(names)}")
        return "; ".join(parts) or "as in the baseline"


def compare(nodeid: str, baseline: dict[str, Any], current: dict[str, Any], tolerance: float,
            expected: list[str], left: Collection[str] = ()) -> Comparison:
    """Classify every current check against ``baseline``; ``expected`` = the scored checks of the suite,
    ``left`` = those this run left undecided (:func:`undecided`), neither regressed nor unreached."""
    result = Comparison(nodeid=nodeid, status="compared", undecided=sorted(left))
    if "model" in baseline and _setup(baseline) != _setup(current):
        result.setup_changed = f"{_setup(baseline)} -> {_setup(current)}"
    old_checks = baseline.get("checks") or {}
    for check_id, now in current["checks"].items():
        old = old_checks.get(check_id)
        if old is None:
            result.new_checks.append(check_id)
            continue
        old_rate, new_rate = _rate(old), _rate(now)
        if "rate" in old or "rate" in now:
            how = f"pass rate {_pct(old_rate)} in the baseline, {_pct(new_rate)} now (tolerance {_pct(tolerance)})"
        else:
            how = f"{'passed' if old.get('passed') else 'failed'} in the baseline, " \
                  f"{'passes' if now['passed'] else 'fails'} now"
        if old_rate - new_rate > tolerance + 1e-9:
            result.regressions[check_id] = how
        elif new_rate - old_rate > tolerance + 1e-9:
            result.improvements[check_id] = how
        elif not now["passed"]:
            result.known_failures[check_id] = how
    for check_id in expected:
        old = old_checks.get(check_id)
        if check_id not in current["checks"] and check_id not in left and old is not None \
                and _rate(old) > tolerance + 1e-9:
            result.unreached[check_id] = f"passed in the baseline ({_pct(_rate(old))}), not reached now"
    return result


def instance_pair(baseline: dict[str, Any], current: dict[str, Any], expected: list[str]) -> dict[str, list[Any]]:
    """The instance in the baseline and now, over the suite's scored checks the baseline holds: whether all
    passed and the mean pass rate (a check not reached now counts as failed). Empty when none is shared."""
    old = baseline.get("checks") or {}
    now = current["checks"]
    ids = [check_id for check_id in expected if check_id in old]
    if not ids:
        return {}
    base = [_rate(old[check_id]) for check_id in ids]
    new = [_rate(now[check_id]) if check_id in now else 0.0 for check_id in ids]
    return {"base": [all(bool(old[c].get("passed")) for c in ids), round(sum(base) / len(ids), 6)],
            "new": [all(c in now and bool(now[c]["passed"]) for c in ids), round(sum(new) / len(ids), 6)]}
