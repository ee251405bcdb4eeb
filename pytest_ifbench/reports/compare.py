"""Two runs of the same suites, paired by instance: the change of each headline metric and whether it is real.

``ifbench compare BASE.json NEW.json`` (:mod:`pytest_ifbench.cli.compare`) reads two results files and
pairs their records by node id. Per benchmark, and per marker breakdown within it (category, scaffold,
tier, protocol, as the core tables break down), over the instances scored in both runs:

* ISR -- the per-instance pass/fail: Δ with the paired-t interval, tested with the exact McNemar (sign)
  test on the instances that flipped (:func:`~.stats.sign_test`);
* CSR and the rubric score -- per-instance means: Δ with the paired bootstrap's interval
  (:func:`~.stats.paired_bootstrap`, fixed seed), tested with the sign-flip permutation test
  (:func:`~.stats.sign_flip_test`, exact).

The gate (``--fail-on-regression``) reads each benchmark's overall ISR, CSR and score, their p-values
adjusted together by Holm's method: a run that did not change fails it with probability at most alpha,
where testing each at alpha would fail it up to alpha times the number of tests.

Instances that flipped (passed -> failed, failed -> passed) are listed with the checks that failed;
instances only one run holds, and instances that errored or had no applicable check in either run, are
counted apart and never paired. Two runs that are not comparable -- another results format, plugin
version, judge panel, generation settings, or an instance whose checks differ (the suite changed) -- are
a :class:`NotComparable` naming the difference; the model may differ, that is the point.

An instance NEW errored on is no evidence that NEW did not regress there -- and an error is what a reply
that talks a lone judge into leaving its failing check out makes of a failure. So for the instances NEW
errored on and BASE scored, each benchmark is compared once more at NEW's worst (``worst_case``): each of
them failed, its CSR and score with every undecided check failed (:func:`~.metrics.error_bounds`), paired
with BASE's outcome. A significant drop there is :meth:`Comparison.unresolved`, which the gate fails on
as on an observed one: it cannot tell the two apart.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..suite.run_settings import difference
from . import stats
from .metrics import error_bounds, errored, instance_passed_share, rubric_score, scored_checks

#: The breakdowns compared within a benchmark, as the core tables have them.
BREAKDOWNS = ("category", "scaffold", "tier", "protocol")
#: The metrics compared, in table order.
METRICS = ("ISR", "CSR", "score")


class NotComparable(Exception):
    """The two runs differ in more than the model (the message names what differs)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """One results file: its name (for messages), its metadata and its records by node id."""

    name: str
    meta: Mapping[str, Any]
    records: Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Delta:
    """The change of one metric over the paired instances of one group."""

    metric: str
    base: float
    new: float
    change: stats.Estimate
    #: Two-sided p-value of "no change"; ``test`` names how it was computed.
    p: float
    test: str
    #: For ISR: instances that went fail -> pass and pass -> fail.
    gains: int = 0
    losses: int = 0
    #: The paired units whose value changed: all the test's p-value depends on beyond their signs.
    moved: int = 0

    @property
    def least_p(self) -> float:
        """The smallest p-value the test can give over these units, ``2 / 2^moved`` (every unit that moved
        moving the same way): at or above alpha, no outcome of theirs could be significant."""
        return min(1.0, 2.0 ** (1 - self.moved)) if self.moved else 1.0

    def can_reach(self, alpha: float) -> bool:
        """Whether some outcome of these units would be significant at ``alpha`` (:attr:`least_p`)."""
        return self.least_p < alpha

    def significant(self, alpha: float) -> bool:
        return self.p < alpha and self.change.value != 0

    def regression(self, alpha: float) -> bool:
        return self.significant(alpha) and self.change.value < 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Group:
    """One row block: a benchmark (``label`` "all") or one value of a breakdown within it."""

    benchmark: str
    label: str
    pairs: int
    deltas: tuple[Delta, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Flip:
    nodeid: str
    benchmark: str
    #: "regressed" (passed -> failed) or "fixed" (failed -> passed).
    direction: str
    #: The scored checks that failed in the run where the instance failed.
    failed_checks: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    base: Run
    new: Run
    groups: tuple[Group, ...]
    flips: tuple[Flip, ...]
    only_base: tuple[str, ...]
    only_new: tuple[str, ...]
    #: Instances in both runs that could not be paired: node id -> why (error / not applicable, which run).
    unpaired: Mapping[str, str]
    alpha: float
    #: Per benchmark with instances NEW errored on and BASE scored: its overall row with those instances
    #: paired at NEW's worst (``label`` names how many).
    worst_case: tuple[Group, ...] = ()

    def regressions(self) -> list[Gated]:
        """The significant drops the gate acts on: of each benchmark's overall row (breakdown rows are shown,
        not gated: testing every row would raise the false-alarm rate with the number of rows), each metric's
        change, their p-values adjusted together by Holm's method (:func:`gated`)."""
        return gated(self.gate_tests(), self.alpha)

    def gate_tests(self) -> list[tuple[Group, Delta]]:
        """What the gate tests: each benchmark's overall change of each metric."""
        return [(g, d) for g in self.groups if g.label == "all" for d in g.deltas]

    def unresolved(self) -> list[Gated]:
        """The significant drops of the worst case that the paired instances do not show: what the instances
        NEW errored on could hide (adjusted together, as :meth:`regressions`). The gate fails on them too."""
        seen = {(t.group.benchmark, t.delta.metric) for t in self.regressions()}
        return [t for t in gated([(g, d) for g in self.worst_case for d in g.deltas], self.alpha)
                if (t.group.benchmark, t.delta.metric) not in seen]


class Gated(NamedTuple):
    """A change a gate acts on, with its p-value adjusted over the gate's tests."""

    group: Any
    delta: Delta
    adjusted: float


def family(tests: Sequence[tuple[Any, Delta]], alpha: float) -> list[tuple[Any, Delta]]:
    """The ``tests`` a gate adjusts together: those that could be significant at ``alpha`` at all
    (:attr:`Delta.least_p`). A test that cannot reject never raises a false alarm, so leaving it out keeps
    the gate's chance of one at ``alpha`` (Tarone's argument for discrete tests; each test's least p-value
    depends only on how many of its units moved, which its p-value is conditioned on) -- while counting it
    would weaken every other: a rubric score over one instance (least p 1.0) made a 3-test Holm of a 2-test one."""
    return [test for test in tests if test[1].can_reach(alpha)]


def adjusted(tests: Sequence[tuple[Any, Delta]], alpha: float) -> list[Gated]:
    """A gate's ``tests`` (a group and its change each) with the p-values of their :func:`family` adjusted
    together by Holm's method (:func:`~.stats.holm`); the others keep theirs (never below ``alpha``)."""
    members = [i for i, (_, delta) in enumerate(tests) if delta.can_reach(alpha)]
    holm = dict(zip(members, stats.holm([tests[i][1].p for i in members]), strict=True))
    return [Gated(group, delta, holm.get(i, delta.p)) for i, (group, delta) in enumerate(tests)]


def gated(tests: Sequence[tuple[Any, Delta]], alpha: float) -> list[Gated]:
    """The significant drops among a gate's ``tests`` once adjusted (:func:`adjusted`): the chance that the
    gate fails a run that did not change stays at ``alpha`` however many benchmarks and metrics it tests."""
    return [t for t in adjusted(tests, alpha) if t.adjusted < alpha and t.delta.change.value < 0]


def check_comparable(base: Run, new: Run) -> None:
    """Raise :class:`NotComparable` naming the first difference beyond the model."""
    for key, what in (("format", "results format"), ("plugin_version", "plugin version"), ("judges", "judges")):
        if key == "judges" and not (_judged(base) or _judged(new)):
            continue  # no check was judged: the panel (by default the model itself) decided nothing
        if base.meta.get(key) != new.meta.get(key):
            raise NotComparable(f"{base.name} and {new.name} differ in {what}: "
                                f"{base.meta.get(key)!r} vs {new.meta.get(key)!r}")
    both = sorted(set(base.records) & set(new.records))
    if not both:
        raise NotComparable(f"{base.name} and {new.name} share no instance (another suite?)")
    mine, theirs = base.meta.get("generation") or {}, new.meta.get("generation") or {}
    for benchmark in sorted(set(mine) & set(theirs)):
        pairs = [(base.records[n], new.records[n]) for n in both if base.records[n].get("benchmark") == benchmark]
        if pairs and all(a.get("generation") and b.get("generation") for a, b in pairs):
            continue  # each pair's own settings are compared below; a setting of an unpaired instance is none
        if {s for s, _ in mine[benchmark]} != {s for s, _ in theirs[benchmark]}:
            raise NotComparable(f"{base.name} and {new.name} differ in generation settings for {benchmark}: "
                                f"{_settings(mine[benchmark])} vs {_settings(theirs[benchmark])}")
    for nodeid in both:
        a, b = base.records[nodeid], new.records[nodeid]
        if a.get("generation") and b.get("generation") and a["generation"] != b["generation"]:
            raise NotComparable(f"{base.name} and {new.name} differ in generation settings for {nodeid}: "
                                f"{difference(a['generation'], b['generation'])}")
        if _has_checks(a) and _has_checks(b) and not _same_checks(a, b):
            raise NotComparable(f"{base.name} and {new.name} hold {nodeid} with different checks (the suite "
                                f"changed): {_checklist(a)} vs {_checklist(b)}")


def _judged(run: Run) -> bool:
    return any(record.get("judge_calls") for record in run.records.values())


def _settings(entries: Sequence[Any]) -> str:
    return "; ".join(str(entry[0]) for entry in entries)


def _has_checks(record: Mapping[str, Any]) -> bool:
    return record.get("status") != "error" or bool(record.get("checks"))


def _checklist(record: Mapping[str, Any], *, up_to_turn: int | None = None) -> list[tuple[str, str, str]]:
    """The instance's checks as the suite wrote them (id, verifier, kind): what a paired change must share;
    with ``up_to_turn``, the whole instance's and those of its turns up to that one."""
    return sorted((str(c.get("check", c.get("id"))), str(c.get("verifier")), str(c.get("kind", "check")))
                  for c in record.get("checks") or []
                  if up_to_turn is None or not isinstance(c.get("turn"), int) or c["turn"] <= up_to_turn)


#: How a record's conversation ends when it ran every turn of its instance (``ended``): a multi-turn dialogue,
#: the built-in loop's last turn, a real CLI's last reply. Any other end (patience exhausted, a limit) stopped
#: it before its later turns, whose checks its record then does not hold.
_RAN_EVERY_TURN = frozenset({"completed", "finished", "no_tool_call", "end_turn"})


def _same_checks(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two records of an instance hold the same suite's checks. A dialogue that one run ended early
    (patience, a limit) holds only its turns' checks: the two are compared up to the turns it reached, and the
    checks it never reached are the comparison's to count (as failed), not a changed suite."""
    if _checklist(a) == _checklist(b):
        return True
    short, long = sorted((a, b), key=lambda record: len(record.get("turns") or ()))
    reached = len(short.get("turns") or ())
    if reached == len(long.get("turns") or ()) or str(short.get("ended")) in _RAN_EVERY_TURN:
        return False
    return _checklist(a, up_to_turn=reached) == _checklist(b, up_to_turn=reached)


def compare(base: Run, new: Run, *, alpha: float = 0.05, force: bool = False) -> Comparison:
    """Pair ``base`` and ``new`` by node id and compare them (refused unless comparable or ``force``)."""
    if not force:
        check_comparable(base, new)
    both = sorted(set(base.records) & set(new.records))
    unpaired: dict[str, str] = {}
    paired: list[tuple[str, Mapping[str, Any], Mapping[str, Any]]] = []
    new_errored: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
    for nodeid in both:
        why = [f"{_unusable(record)} in {run.name}" for run, record in
               ((base, base.records[nodeid]), (new, new.records[nodeid])) if _unusable(record)]
        if why:
            unpaired[nodeid] = "; ".join(why)
            if not _unusable(base.records[nodeid]) and errored(new.records[nodeid]):
                new_errored.append((base.records[nodeid], new.records[nodeid]))
        else:
            paired.append((nodeid, base.records[nodeid], new.records[nodeid]))
    return Comparison(
        base=base, new=new, groups=tuple(_groups(paired)), flips=tuple(_flips(paired)),
        only_base=tuple(sorted(set(base.records) - set(new.records))),
        only_new=tuple(sorted(set(new.records) - set(base.records))), unpaired=unpaired, alpha=alpha,
        worst_case=tuple(_worst_case(paired, new_errored)),
    )


def _worst_case(paired: Sequence[tuple[str, Mapping[str, Any], Mapping[str, Any]]],
                new_errored: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> list[Group]:
    """Per benchmark NEW errored in: the overall row with its errored instances paired at NEW's worst."""
    errored_in: dict[str, list[tuple[Outcome, Outcome]]] = defaultdict(list)
    for a, b in new_errored:
        worst = error_bounds(b)
        score = None if worst.score is None else worst.score[0]
        errored_in[str(b.get("benchmark"))].append((_outcome(a), (False, worst.csr[0], score)))
    groups = []
    for benchmark, worst in sorted(errored_in.items()):
        scored = [(_outcome(a), _outcome(b)) for _, a, b in paired if str(b.get("benchmark")) == benchmark]
        label = f"the {len(worst)} instance{'' if len(worst) == 1 else 's'} it errored on failed"
        groups.append(_outcome_group(benchmark, label, [*scored, *worst]))
    return groups


def limit_warnings(comparison: Comparison) -> list[str]:
    """One line per run that reached its spending limit (``--ifbench-max-cost``): the instances it errored
    are not paired, so the comparison covers only what that run paid for -- and which instances those
    are depends on the order they ran in, not on chance."""
    from ..models.spending import shared_ledgers

    out = []
    for run in (comparison.base, comparison.new):
        entries = [entry for entry in (run.meta.get("spending_limit"),
                                       *(part.get("spending_limit") for part in run.meta.get("merged_from") or ()))
                   if isinstance(entry, Mapping)]
        # a shared ledger's entries are each the whole run's figures: counted once
        refused = sum(int(entry.get("refused") or 0) for entry in entries if not entry.get("ledger")) + sum(
            int(last.get("refused") or 0) for last, _ in shared_ledgers(entries).values())
        if not refused:
            continue
        errored_for_it = sum(1 for nodeid, why in comparison.unpaired.items()
                             if f"error in {run.name}" in why and _limit_error(run.records[nodeid]))
        out.append(f"{run.name} reached its spending limit ({refused} call(s) not made): {errored_for_it} "
                   f"instance(s) it errored for it are not paired, so the comparison covers only what it paid "
                   f"for; compare runs that did not reach their limit")
    return out


def _limit_error(record: Mapping[str, Any]) -> bool:
    return "the run's spending limit" in str(record.get("error") or "")


def _unusable(record: Mapping[str, Any]) -> str:
    if errored(record):
        return "error"
    if record.get("status") == "not_applicable" or instance_passed_share(record) is None:
        return "no applicable check"
    return ""


def _groups(paired: Sequence[tuple[str, Mapping[str, Any], Mapping[str, Any]]]) -> list[Group]:
    by_benchmark: dict[str, list[tuple[Mapping[str, Any], Mapping[str, Any]]]] = defaultdict(list)
    for _, a, b in paired:
        by_benchmark[str(b.get("benchmark"))].append((a, b))
    groups = []
    for benchmark, pairs in sorted(by_benchmark.items()):
        groups.append(_group(benchmark, "all", pairs))
        for key in BREAKDOWNS:
            values: dict[Any, list[tuple[Mapping[str, Any], Mapping[str, Any]]]] = defaultdict(list)
            for a, b in pairs:
                if b.get(key) is not None:
                    values[b[key]].append((a, b))
            if len(values) > 1 or (values and len(next(iter(values.values()))) < len(pairs)):
                groups.extend(_group(benchmark, f"{key}={value}", values[value]) for value in sorted(values, key=str))
    return groups


#: A scored instance's outcome: (passed, CSR share, rubric score or None).
Outcome = tuple[bool, float, "float | None"]


def _outcome(record: Mapping[str, Any]) -> Outcome:
    share = instance_passed_share(record)
    assert share is not None  # paired records have applicable checks
    return share[0], share[1], rubric_score(record)


def _group(benchmark: str, label: str, pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> Group:
    return _outcome_group(benchmark, label, [(_outcome(a), _outcome(b)) for a, b in pairs])


def _outcome_group(benchmark: str, label: str, pairs: Sequence[tuple[Outcome, Outcome]]) -> Group:
    deltas = [isr_delta([bool(a[0]) for a, _ in pairs], [bool(b[0]) for _, b in pairs]),
              mean_delta("CSR", [a[1] for a, _ in pairs], [b[1] for _, b in pairs])]
    scores = [(a[2], b[2]) for a, b in pairs if a[2] is not None and b[2] is not None]
    if scores:
        deltas.append(mean_delta("score", [a for a, _ in scores], [b for _, b in scores]))
    return Group(benchmark=benchmark, label=label, pairs=len(pairs), deltas=tuple(deltas))


def isr_delta(base: Sequence[bool], new: Sequence[bool]) -> Delta:
    """The change of a pass/fail share over paired units: paired-t interval, exact McNemar test."""
    gains = sum(1 for a, b in zip(base, new, strict=True) if b and not a)
    losses = sum(1 for a, b in zip(base, new, strict=True) if a and not b)
    diffs = [float(b) - float(a) for a, b in zip(base, new, strict=True)]
    change = stats.mean(diffs, bounds=(-1.0, 1.0), method="paired-t")
    assert change is not None  # a group has at least one pair
    return Delta(metric="ISR", base=_share(base), new=_share(new), change=change,
                 p=stats.sign_test(gains, losses), test="exact McNemar", gains=gains, losses=losses,
                 moved=gains + losses)


def mean_delta(metric: str, base: Sequence[float], new: Sequence[float]) -> Delta:
    """The change of a mean over paired units: the paired bootstrap's interval (fixed seed), tested with the
    exact sign-flip permutation test (the bootstrap's own p-value is not exact at small n)."""
    change, _ = stats.paired_bootstrap(base, new)
    diffs = [b - a for a, b in zip(base, new, strict=True)]
    return Delta(metric=metric, base=_share(base), new=_share(new), change=change, p=stats.sign_flip_test(diffs),
                 test="sign-flip permutation", moved=sum(1 for d in diffs if abs(d) > 1e-12))


def _share(values: Sequence[float | bool]) -> float:
    return sum(float(v) for v in values) / len(values)


def _flips(paired: Sequence[tuple[str, Mapping[str, Any], Mapping[str, Any]]]) -> list[Flip]:
    flips = []
    for nodeid, a, b in paired:
        before, after = instance_passed_share(a), instance_passed_share(b)
        if before is None or after is None or before[0] == after[0]:
            continue
        failing = b if before[0] else a
        failed = tuple(str(c.get("check", c.get("id"))) for c in scored_checks(failing)
                       if c.get("applicable", True) is not False and not c.get("passed"))
        flips.append(Flip(nodeid=nodeid, benchmark=str(b.get("benchmark")),
                          direction="regressed" if before[0] else "fixed", failed_checks=failed))
    return sorted(flips, key=lambda f: (f.direction != "regressed", f.nodeid))
