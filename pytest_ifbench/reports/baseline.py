"""Baselines: gate a run on regressions against stored per-check outcomes (syrupy).

With ``--ifbench-baseline`` each instance's scored checks are compared with a
snapshot of an earlier run: a check that passed in the baseline and fails now
is a *regression* and fails its subtest; a check that failed in the baseline
and still fails (a known failure) or now passes (an improvement) passes its
subtest. Checks with a pass rate (``generation.samples``) or a judge panel
(``details.mean``) are compared by rate: a regression is
``baseline_rate - current_rate > --ifbench-baseline-tolerance``.

With ``--ifbench-baseline-gate=paired`` no single check decides: the drops are
listed, and the run fails when a benchmark's ISR or CSR dropped significantly
over the paired instances (:mod:`.baseline_gate`, ``--ifbench-baseline-alpha``).

Storage, updates and unused-snapshot reporting are syrupy's: one JSON snapshot
per instance, written by :class:`BaselineExtension` (a
``JSONSnapshotExtension``) to ``<suite dir>/__baselines__/<suite stem>/<id>.json``
or, with ``--ifbench-baseline-dir DIR``, to ``DIR/<suite dir relative to the
rootdir>/<suite stem>/<id>.json``. ``--snapshot-update`` accepts the current
run as the new baseline and deletes the snapshots of instances that no longer
exist. See docs/baselines.md.

This module holds the plugin (options and hooks); the storage is
:mod:`.baseline_extension`, the payload and the comparison :mod:`.baseline_compare`.
It also owns the options of ``--baseline-results BASE.json`` (a whole earlier results
file, compared at the end of the run) and registers :mod:`.compare_run` when given.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from syrupy.exceptions import SnapshotDoesNotExist

from .._collect import CheckFailed, CheckUndecided, InstanceItem, failure_message
from .baseline_compare import Comparison, compare, instance_pair, kept, payload, undecided
from .baseline_extension import DIRNAME, BaselineExtension, _Stored
from .baseline_gate import GATES, GateGroup, evaluate, gate_lines, regressions
from .compare_run import add_options as add_compare_options
from .compare_run import configure as configure_compare
from .compare_run import summary_lines as compared_lines

# ---------------------------------------------------------------------------
# the plugin


class BaselineRegression(CheckFailed):
    """A check passed in the baseline and fails now; the message is the whole story
    (a ``CheckFailed``, so ``InstanceItem.repr_failure`` shows just the message)."""


@dataclass(kw_only=True)
class _Settings:
    tolerance: float
    #: "tolerance" (each check against the tolerance) or "paired" (the run-level paired test)
    gate: str
    alpha: float
    update: bool
    new_only: bool
    directory: str
    #: controller: every instance's comparison, by node id
    comparisons: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: controller: the paired gate's groups, computed once at the end
    gate_groups: list[GateGroup] | None = None


SETTINGS_KEY = pytest.StashKey[_Settings]()
COMPARISON_KEY = pytest.StashKey[Comparison]()
DESELECTED_KEY = pytest.StashKey[list[pytest.Item]]()

#: The defaults of the gate's settings (their options default to None: given, they imply --ifbench-baseline).
_DEFAULTS: dict[str, Any] = {"ifbench_baseline_tolerance": 0.25, "ifbench_baseline_gate": "tolerance",
                             "ifbench_baseline_alpha": 0.05}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ifbench")
    group.addoption("--ifbench-baseline", dest="ifbench_baseline", action="store_true",
                    help="compare each instance's check outcomes with the stored baseline (syrupy snapshots) and "
                         "fail only on regressions; --snapshot-update records the current run as the baseline")
    group.addoption("--ifbench-baseline-dir", dest="ifbench_baseline_dir", default=None, metavar="DIR",
                    help=f"store baselines under DIR (mirroring the suites' paths) instead of a {DIRNAME}/ "
                         "directory beside each suite; implies --ifbench-baseline")
    # Their defaults are None, so that giving one is seen (it implies --ifbench-baseline); pytest_configure
    # puts the real defaults (_DEFAULTS) in their place.
    group.addoption("--ifbench-baseline-tolerance", dest="ifbench_baseline_tolerance", type=float, default=None,
                    metavar="RATE",
                    help="for checks with a pass rate (samples, judge panels): a drop of more than RATE "
                         f"is a regression (default: {_DEFAULTS['ifbench_baseline_tolerance']}); implies "
                         "--ifbench-baseline")
    group.addoption("--ifbench-baseline-gate", dest="ifbench_baseline_gate", choices=GATES, default=None,
                    help="tolerance (default): a check that regressed beyond the tolerance fails; paired: no "
                         "single check fails, the run fails when a benchmark's ISR or CSR over the instances "
                         "dropped significantly (exact McNemar / sign-flip permutation test, "
                         "--ifbench-baseline-alpha); implies --ifbench-baseline")
    group.addoption("--ifbench-baseline-alpha", dest="ifbench_baseline_alpha", type=float, default=None,
                    metavar="A", help="significance level of --ifbench-baseline-gate=paired and of "
                                      f"--baseline-results (default: {_DEFAULTS['ifbench_baseline_alpha']}); "
                                      "implies --ifbench-baseline unless --baseline-results is given")
    add_compare_options(group)


def pytest_configure(config: pytest.Config) -> None:
    implied = _given_settings(config)
    alpha = config.getoption("ifbench_baseline_alpha")
    if not 0.0 < alpha < 1.0:
        raise pytest.UsageError(f"--ifbench-baseline-alpha must be between 0 and 1 (exclusive), got {alpha}")
    tolerance = config.getoption("ifbench_baseline_tolerance")
    if not 0.0 <= tolerance <= 1.0:
        raise pytest.UsageError(f"--ifbench-baseline-tolerance must be between 0 and 1, got {tolerance}")
    configure_compare(config)
    directory = config.getoption("ifbench_baseline_dir", None)
    if implied or directory:
        # Like --ifbench-baseline-dir, a setting of the baseline's gate asks for the baseline: set the flag
        # itself, so every plugin asking whether a baseline is in play hears it.
        config.option.ifbench_baseline = True
    if not config.getoption("ifbench_baseline", False):
        return
    if not config.pluginmanager.hasplugin("syrupy"):
        raise pytest.UsageError("--ifbench-baseline needs the syrupy plugin (it is disabled or not installed)")
    if directory:
        path = Path(directory)
        BaselineExtension.custom_dir = path if path.is_absolute() else Path(config.invocation_params.dir) / path
    else:
        BaselineExtension.custom_dir = None
    BaselineExtension.rootdir = Path(config.rootpath)
    settings = config.stash[SETTINGS_KEY] = _Settings(
        tolerance=tolerance, gate=config.getoption("ifbench_baseline_gate"), alpha=alpha,
        update=bool(config.option.update_snapshots),
        new_only=bool(getattr(config.option, "update_new_snapshots_only", False)),
        directory=directory or f"{DIRNAME}/ beside each suite",
    )
    config.pluginmanager.register(_Collector(settings), "ifbench-baseline-collector")


def _given_settings(config: pytest.Config) -> bool:
    """Whether a setting of the baseline's gate was given (then it implies ``--ifbench-baseline``); puts the
    defaults in place of those not given. ``--ifbench-baseline-alpha`` with ``--baseline-results`` is that
    comparison's level, and asks for no baseline."""
    given = False
    for dest, default in _DEFAULTS.items():
        if config.getoption(dest) is None:
            setattr(config.option, dest, default)
        elif dest != "ifbench_baseline_alpha" or not config.getoption("ifbench_baseline_results", None):
            given = True
    return given


def pytest_unconfigure(config: pytest.Config) -> None:
    if SETTINGS_KEY in config.stash:
        BaselineExtension.custom_dir = None
        BaselineExtension.rootdir = None


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        if SETTINGS_KEY in item.config.stash and _is_instance(item):
            item.config.stash.setdefault(DESELECTED_KEY, []).append(item)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Tell syrupy that deselected instances did not run, as it is told of skipped tests.

    syrupy keeps the snapshots of skipped tests, but matches ``-k`` against snapshot
    names only: ``pytest -k "not slow"`` (no path argument) would call the baselines
    of instances deselected by a marker unused, and ``--snapshot-update`` would delete
    them. Uses syrupy's session API; without it, syrupy's own rules apply.
    """
    deselected = session.config.stash.get(DESELECTED_KEY, None)
    syrupy = getattr(session.config, "_syrupy", None)
    if not deselected or not all(hasattr(syrupy, name) for name in ("collect_items", "select_items", "ran_item")):
        return
    syrupy.collect_items(deselected)
    syrupy.select_items(deselected)
    for item in deselected:
        syrupy.ran_item(item.nodeid, "skipped")


def _is_instance(item: pytest.Item) -> bool:
    return isinstance(item, InstanceItem)


def _assertion(item: pytest.Item) -> Any:
    """syrupy's ``snapshot`` fixture of this item, storing with :class:`BaselineExtension`."""
    snapshot = item._request.getfixturevalue("snapshot")  # type: ignore[attr-defined]
    return snapshot.use_extension(BaselineExtension)


def _assert(assertion: Any, data: Any) -> bool:
    """Run syrupy's comparison (it records the snapshot as used, and writes it when
    updating) without raising: the decision is ours, per check."""
    return bool(assertion == data)


def _read(assertion: Any) -> str | None:
    try:
        return assertion.extension.read_snapshot(test_location=assertion.test_location, index=0,
                                                 session_id=str(id(assertion.session)))
    except SnapshotDoesNotExist:
        return None


def pytest_ifbench_instance_verified(item: pytest.Item, record: dict[str, Any]) -> None:
    settings = item.config.stash.get(SETTINGS_KEY, None)
    if settings is None:
        return
    assertion = _assertion(item)
    stored = _read(assertion)
    current = payload(record)
    left = undecided(record)
    expected = [c.id for c in item.spec.all_checks() if c.scored]  # type: ignore[attr-defined]
    if stored is None:
        comparison = Comparison(nodeid=item.nodeid, status="new")
        if settings.update or settings.new_only:  # --snapshot-update(-new-only) writes it
            _assert(assertion, current)
            comparison.status = "updated" if settings.update else "new"
            comparison.changed = sorted(current["checks"])
    else:
        try:
            baseline = json.loads(stored)
            if not isinstance(baseline, dict) or not isinstance(baseline.get("checks"), dict):
                raise ValueError("no 'checks' mapping")
        except ValueError as exc:
            comparison = Comparison(nodeid=item.nodeid, status="broken", error=str(exc))
            baseline = None
        if baseline is not None:
            paired = settings.gate == "paired"
            comparison = compare(item.nodeid, baseline, current, 0.0 if paired else settings.tolerance, expected,
                                 left)
            if paired:
                comparison.defer()
                # An instance with an undecided check errored: no pair, as one that could not run.
                comparison.pair = {} if left else instance_pair(baseline, current, expected)
        current = kept(current, baseline, left)  # stored and diffed: an undecided check keeps its old entry
        if settings.update:
            # Accept the current run: syrupy writes the snapshot when it differs.
            _assert(assertion, current)
            old = (baseline or {}).get("checks", {})
            comparison.changed = sorted(k for k in set(old) | set(current["checks"])
                                        if old.get(k) != current["checks"].get(k))
            comparison.status = "updated"
            comparison.regressions.clear()
            comparison.unreached.clear()
        elif comparison.regressions or comparison.unreached or comparison.status == "broken":
            # Compare the current outcomes: syrupy counts the snapshot as failed (with a diff).
            _assert(assertion, current)
        else:
            # No regression: the stored snapshot is used as it is (improvements are not written).
            _assert(assertion, _Stored(stored))
    comparison.benchmark = item.spec.benchmark  # type: ignore[attr-defined]
    item.stash[COMPARISON_KEY] = comparison
    item.user_properties.append(("ifbench_baseline", comparison.note()))


def _headline(nodeid: str, check_id: str, how: str, outcome: Any) -> str:
    evidence = ""
    if outcome is not None:
        if outcome.error:
            evidence = outcome.error
        elif outcome.verdict is not None and outcome.verdict.evidence:
            evidence = outcome.verdict.evidence
    first = evidence.strip().splitlines()[0][:200] if evidence.strip() else ""
    return f"regression: {nodeid} check {check_id!r} {how}" + (f": {first}" if first else "")


@pytest.hookimpl(tryfirst=True)
def pytest_ifbench_report_check(item: pytest.Item, name: str, outcomes: list[Any]) -> bool | None:
    comparison = item.stash.get(COMPARISON_KEY, None)
    if comparison is None:
        return None
    if comparison.status == "broken":
        raise BaselineRegression(f"{item.nodeid}: cannot read its baseline ({comparison.error}); "
                                 "record it again with --snapshot-update")
    regressed = [o for o in outcomes if o.check.id in comparison.regressions]
    if regressed:
        raise BaselineRegression("\n".join(
            _headline(item.nodeid, o.check.id, comparison.regressions[o.check.id], o) + "\n"
            + "\n".join("  " + line for line in failure_message(o).splitlines())
            for o in regressed
        ))
    # A check nothing decided is an error whatever the baseline holds (the built-in's CheckUndecided), never a
    # known failure, nor a pass because the baseline is new or being updated.
    left = [o for o in outcomes if o.error is not None and o.applicable]
    if left:
        raise CheckUndecided("\n".join(failure_message(o) for o in left))
    return True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    result = yield
    comparison = item.stash.get(COMPARISON_KEY, None)
    if comparison is not None and comparison.unreached:
        ended = (getattr(item, "ifbench_record", None) or {}).get("ended", "")
        raise BaselineRegression("\n".join(
            f"regression: {item.nodeid} check {check_id!r} {how}" + (f" (dialogue ended: {ended})" if ended else "")
            for check_id, how in comparison.unreached.items()
        ))
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    settings = item.config.stash.get(SETTINGS_KEY, None)
    if settings is None or not _is_instance(item):
        return report
    if call.when == "setup" and report.failed and COMPARISON_KEY not in item.stash:
        # The instance errored (model or judge failure): nothing to compare, but its
        # baseline must stay (syrupy would otherwise call it unused, and delete it on update).
        assertion = _assertion(item)
        stored = _read(assertion)
        comparison = Comparison(nodeid=item.nodeid, status="kept" if stored is not None else "new")
        if stored is not None:
            _assert(assertion, _Stored(stored))
        item.stash[COMPARISON_KEY] = comparison
        report.ifbench_baseline = comparison.to_json()
    elif call.when == "call" and COMPARISON_KEY in item.stash:
        report.ifbench_baseline = item.stash[COMPARISON_KEY].to_json()
    return report


def _gate_groups(settings: _Settings) -> list[GateGroup]:
    if settings.gate_groups is None:
        settings.gate_groups = evaluate(settings.comparisons.values())
    return settings.gate_groups


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The paired gate fails a run that passed when a benchmark dropped significantly (controller)."""
    settings = session.config.stash.get(SETTINGS_KEY, None)
    if settings is None or settings.gate != "paired" or settings.update or hasattr(session.config, "workerinput"):
        return
    if regressions(_gate_groups(settings), settings.alpha) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


class _Collector:
    """Gathers the comparisons from the reports (under xdist they arrive from the workers)."""

    def __init__(self, settings: _Settings) -> None:
        self.settings = settings

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "ifbench_baseline", None)
        if data is not None and not hasattr(report, "context"):  # skip subtest reports
            self.settings.comparisons[data["nodeid"]] = data


def overview(config: pytest.Config) -> dict[str, Any] | None:
    """Totals and the instances behind them, for the terminal and the summary file (controller); with
    ``--baseline-results``, also the comparison with that run (``compared``: lines)."""
    settings = config.stash.get(SETTINGS_KEY, None)
    compared = compared_lines(config)
    if settings is None or not settings.comparisons:
        return {"compared": compared} if compared else None
    rows = sorted(settings.comparisons.values(), key=lambda c: c["nodeid"])

    def listing(key: str) -> list[tuple[str, str, str]]:
        return [(c["nodeid"], check, how) for c in rows for check, how in (c.get(key) or {}).items()]

    return {
        "compared": compared,
        "update": settings.update,
        "tolerance": settings.tolerance,
        "gate": None if settings.gate != "paired" or settings.update else gate_lines(_gate_groups(settings),
                                                                                     settings.alpha),
        "alpha": settings.alpha,
        "directory": settings.directory,
        "regressions": listing("regressions") + listing("unreached"),
        "drops": listing("drops"),
        "improvements": listing("improvements"),
        "known_failures": listing("known_failures"),
        "new_instances": [c["nodeid"] for c in rows if c["status"] == "new"],
        "new_checks": [(c["nodeid"], check) for c in rows for check in c.get("new_checks", [])],
        "kept": [c["nodeid"] for c in rows if c["status"] == "kept"],
        "broken": [(c["nodeid"], c.get("error", "")) for c in rows if c["status"] == "broken"],
        "setup_changed": [(c["nodeid"], c["setup_changed"]) for c in rows if c.get("setup_changed")],
        "updated": [(c["nodeid"], c.get("changed", [])) for c in rows if c["status"] == "updated" and c.get("changed")],
    }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def overview_lines(data: dict[str, Any], limit: int = 20, compared: bool = True) -> list[str]:
    """The overview as lines: the snapshots' (when compared with them), then ``--baseline-results``'s."""
    lines = _snapshot_lines(data, limit) if "update" in data else []
    return lines + (data.get("compared") or [] if compared else [])


def _snapshot_lines(data: dict[str, Any], limit: int) -> list[str]:
    if data["update"]:
        lines = [f"baseline updated: {_plural(len(data['updated']), 'instance')} written "
                 f"({_plural(len(data['new_instances']), 'new instance')}, "
                 f"{_plural(len(data['kept']), 'errored instance')} kept)"]
        shown = data["updated"][:limit]
        lines += [f"  updated      {nodeid} [{', '.join(checks)}]" for nodeid, checks in shown]
        return lines
    lines = [
        f"baseline: {_plural(len(data['regressions']), 'regression')}, "
        + (f"{_plural(len(data['drops']), 'drop')}, " if data.get("gate") else "")
        + f"{_plural(len(data['improvements']), 'improvement')}, "
        f"{_plural(len(data['known_failures']), 'known failure')}, "
        f"{_plural(len(data['new_instances']), 'new instance')}"
        + (f", {_plural(len(data['kept']), 'errored instance')} (baseline kept)" if data["kept"] else "")
        + (f" (paired test, alpha {data['alpha']:g})" if data.get("gate") else f" (tolerance {data['tolerance']:g})")
    ]
    lines += data.get("gate") or []
    for label, key in (("regression ", "regressions"), ("drop       ", "drops"), ("improvement", "improvements")):
        entries = data[key]
        lines += [f"  {label}  {nodeid} [{check}] {how}" for nodeid, check, how in entries[:limit]]
        if len(entries) > limit:
            lines.append(f"  ... and {len(entries) - limit} more {key}")
    lines += [f"  new          {nodeid}" for nodeid in data["new_instances"][:limit]]
    lines += [f"  unreadable   {nodeid}: {error}" for nodeid, error in data["broken"][:limit]]
    if data["setup_changed"]:
        lines.append(f"  note: {_plural(len(data['setup_changed']), 'instance')} recorded with another model "
                     f"({data['setup_changed'][0][1]}); keep one baseline per model (--ifbench-baseline-dir)")
    if data["improvements"] or data["new_instances"]:
        lines.append("  run with --snapshot-update to record improvements and new instances in the baseline")
    return lines


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    data = overview(config)
    if data is None or "update" not in data:
        return  # --baseline-results alone: its own section (compare_run)
    terminalreporter.section("ifbench baseline")
    for line in overview_lines(data, compared=False):
        terminalreporter.write_line(line)
