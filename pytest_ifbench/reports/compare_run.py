"""``--baseline-results BASE.json``: at the end of a run, the run compared with an earlier one.

The same comparison as ``ifbench compare BASE.json NEW.json`` (:mod:`.compare`, rendered by
:mod:`.compare_render`), with this run as NEW: its results file when it wrote one, else its records as
that file would hold them. The terminal gets an ``ifbench compare`` section (the tables, the flipped
instances, the verdict), the summary file a few lines in its Baseline section (:func:`summary_lines`,
through :func:`.baseline.overview`).

With ``--ifbench-fail-on-regression`` the run's exit status is the gate's, as ``ifbench compare
--fail-on-regression`` would exit: 1 when a benchmark's ISR, CSR or score dropped significantly at
``--ifbench-baseline-alpha``, or when the comparison was refused (a gate that cannot compare must not
pass); 0 otherwise, even though checks failed -- a model fails some checks in every run, and the
question the gate answers is whether it got worse. A run that pytest fails for anything else keeps its
status: an instance that errored (it was not scored, so nothing says it did not regress), a failed
collection, an interrupted run, and, with ``--ifbench-baseline``, the snapshots' regressions.

BASE.json is read when the run starts: an unreadable file is a usage error before anything is paid for.
Registered by :mod:`.baseline` (which owns the options) when the option is given; controller only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .compare import Comparison, NotComparable, Run, compare
from .compare_render import delta_line, outcome_line, terminal_lines

BASE_KEY = pytest.StashKey["Run"]()
_OUTCOME_KEY = pytest.StashKey["Outcome"]()
PLUGIN_NAME = "ifbench-compare-run"


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """The comparison, or why there is none (refused, or nothing ran)."""

    comparison: Comparison | None = None
    refused: str | None = None
    fail_on_regression: bool = False

    def fails(self) -> bool:
        """Whether the gate fails the run."""
        if not self.fail_on_regression:
            return False
        return self.refused is not None or bool(self.comparison and (self.comparison.regressions()
                                                                      or self.comparison.unresolved()))


def add_options(group: Any) -> None:
    group.addoption("--baseline-results", "--ifbench-baseline-results", dest="ifbench_baseline_results",
                    default=None, metavar="BASE.json",
                    help="at the end of the run, compare it with an earlier run's results file, paired by instance, "
                         "as 'ifbench compare BASE.json <this run>' does (terminal and summary file)")
    group.addoption("--ifbench-fail-on-regression", dest="ifbench_fail_on_regression", action="store_true",
                    help="with --baseline-results: fail the run when a benchmark's ISR, CSR or score dropped "
                         "significantly at --ifbench-baseline-alpha, or when the runs are not comparable")


def configure(config: pytest.Config) -> None:
    """Read BASE.json now (a bad file is a usage error before the run) and register the hooks."""
    name = config.getoption("ifbench_baseline_results", None)
    if not name:
        if config.getoption("ifbench_fail_on_regression", False):
            raise pytest.UsageError("--ifbench-fail-on-regression needs --baseline-results BASE.json")
        return
    if hasattr(config, "workerinput"):
        return
    from ..scale.merge import NotResults, load

    path = Path(name)
    if not path.is_absolute():
        path = Path(config.invocation_params.dir) / path
    try:
        loaded = load(path)
    except NotResults as exc:
        raise pytest.UsageError(f"--baseline-results: {exc}") from None
    config.stash[BASE_KEY] = Run(name=name, meta=loaded.meta, records={r["nodeid"]: r for r in loaded.records})
    if not config.pluginmanager.has_plugin(PLUGIN_NAME):
        import sys

        config.pluginmanager.register(sys.modules[__name__], PLUGIN_NAME)


def outcome(config: pytest.Config) -> Outcome | None:
    """This run compared with BASE.json (computed once, after the results file is written); None when off."""
    base = config.stash.get(BASE_KEY, None)
    if base is None:
        return None
    found = config.stash.get(_OUTCOME_KEY, None)
    if found is not None:
        return found
    fail = bool(config.getoption("ifbench_fail_on_regression", False))
    new = _this_run(config)
    if not new.records:
        found = Outcome(refused="no instance ran in this run", fail_on_regression=fail)
    else:
        try:
            found = Outcome(comparison=compare(base, new, alpha=config.getoption("ifbench_baseline_alpha")),
                            fail_on_regression=fail)
        except NotComparable as exc:
            found = Outcome(refused=str(exc), fail_on_regression=fail)
    config.stash[_OUTCOME_KEY] = found
    return found


def _this_run(config: pytest.Config) -> Run:
    """The run as its results file holds it: the file itself when written, else the records made JSON the
    same way (tuples become lists, so settings compare equal)."""
    from .._state import RECORDS_KEY, STATE_KEY
    from ..scale.merge import NotResults, load
    from ..suite.run_settings import settings_by_benchmark
    from .records import RESULTS_FORMAT, json_safe

    records = list(config.stash.get(RECORDS_KEY, {}).values())
    target = config.getoption("ifbench_results", None)
    if target and records:
        path = Path(target) if Path(target).is_absolute() else Path(config.invocation_params.dir) / target
        try:
            written = load(path)
            return Run(name=str(target), meta=written.meta, records={r["nodeid"]: r for r in written.records})
        except NotResults:
            pass  # not written (a full disk?): compare what is in memory
    from .._version import __version__

    state = config.stash[STATE_KEY]
    meta = {"format": RESULTS_FORMAT, "plugin_version": __version__, "model": state.model_name,
            "judges": state.judge_names, "generation": settings_by_benchmark(records)}
    plain = json.loads(json.dumps(json_safe({"meta": meta, "records": records})))
    return Run(name="this run", meta=plain["meta"], records={r["nodeid"]: r for r in plain["records"]})


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session):
    # A wrapper: the core's sessionfinish (which writes the results file) has run when this continues.
    result = yield
    config = session.config
    if hasattr(config, "workerinput"):
        return result
    found = outcome(config)
    if found is None or not found.fail_on_regression:
        return result
    if session.exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return result  # interrupted, internal or usage error, nothing collected: not the gate's call
    if found.fails():
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif session.exitstatus == pytest.ExitCode.TESTS_FAILED and _only_checks_failed(session):
        session.exitstatus = pytest.ExitCode.OK
    return result


def _only_checks_failed(session: pytest.Session) -> bool:
    """Whether every failure of the run is an instance's failed checks (no errored instance, no collection
    error, no failed Python test, no baseline snapshot in play)."""
    from .._state import RECORDS_KEY

    config = session.config
    if config.getoption("ifbench_baseline", False) or config.getoption("ifbench_baseline_dir", None):
        return False
    records = config.stash.get(RECORDS_KEY, {})
    if any(r.get("status") == "error" for r in records.values()):
        return False
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:  # -p no:terminal: no way to tell what failed
        return False
    stats = reporter.stats
    if stats.get("error"):
        return False
    failed = {getattr(r, "nodeid", "") for r in stats.get("failed", [])}
    return all(nodeid in records for nodeid in failed)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    found = outcome(config)
    if found is None:
        return
    terminalreporter.section("ifbench compare")
    if found.comparison is not None:
        for line in terminal_lines(found.comparison):
            terminalreporter.write_line(line)
    else:
        terminalreporter.write_line(f"compared with {config.stash[BASE_KEY].name}: refused: {found.refused}")
    if found.fails():
        terminalreporter.write_line("--ifbench-fail-on-regression: the run fails (exit 1)")


def summary_lines(config: pytest.Config) -> list[str]:
    """The comparison in a few lines for the summary file: the verdict, each benchmark's changes, the flips."""
    found = outcome(config)
    if found is None:
        return []
    base = config.stash[BASE_KEY]
    if found.comparison is None:
        return [f"compared with {base.name}: refused: {found.refused}"]
    comparison = found.comparison
    lines = [f"compared with {base.name} (model {base.meta.get('model')}): {outcome_line(comparison)}"
             + ("; the run fails (--ifbench-fail-on-regression)" if found.fails() else "")]
    for group in comparison.groups:
        label = group.benchmark if group.label == "all" else f"{group.benchmark} {group.label}"
        lines += [delta_line(label, group.pairs, delta, comparison.alpha) for delta in group.deltas]
    for direction, heading in (("regressed", "passed -> failed"), ("fixed", "failed -> passed")):
        flips = [f.nodeid for f in comparison.flips if f.direction == direction]
        if flips:
            shown = ", ".join(flips[:20]) + (f" and {len(flips) - 20} more" if len(flips) > 20 else "")
            lines.append(f"{heading} ({len(flips)}): {shown}")
    for ids, where in ((comparison.only_base, base.name), (comparison.only_new, "this run")):
        if ids:
            lines.append(f"only in {where}: {len(ids)} instance(s), not compared")
    return lines
