"""Under xdist, an instance's passed checks travel to the controller with its call report.

An xdist worker sends every report to the controller as a message of its own: with the item's
``logstart``, ``logfinish`` and ``runtest_protocol_complete``, eleven for an instance with five checks.
Each is a round of execnet framing, a hand-over between the controller's receiving thread and its
main loop, and a turn of xdist's event loop; the controller handles every worker's reports, so its
CPU bounds a large ``-n``. On a cached run of 6,000 instances under ``-n 2`` it used 9.7-9.9 CPU
seconds, about as much as the whole run in one process; with the checks carried, 8.3-8.5.

On a worker, :class:`WorkerChecks` logs a passed check to every plugin there but xdist's sender
(``pytest_runtest_logreport`` through a subset of the hook, as pytest itself leaves out the conftests
of other directories; and the worker's terminal reporter, whose output goes to the null device) and
keeps its serialised mapping; the instance's call report, which comes right after its checks,
carries them (:func:`WorkerChecks.attach`; a check that failed or was skipped
travels at once, as before, and carries the passed ones before it: xdist counts failures for
``--maxfail`` as they arrive). On the controller they are rebuilt with the report that carried them
(:func:`detach`) and logged, each through the whole hook as before, right before it
(:class:`ControllerChecks`). So the controller's plugins see what they always saw, in the same order:
setup, the checks as they were made, call, teardown.

What differs: a passed check reaches the controller when its instance's call ends instead of as it is
made (an instance's checks are made one after the other at the end of its call), and a worker that
crashes between an instance's checks and its call report takes those passed checks with it (xdist
then reports the instance as crashed). Without xdist's worker plugin in the expected place (another
xdist), every check travels on its own as before.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from ._xdist import worker_interactor

#: The name an xdist worker's :class:`WorkerChecks` is registered under.
WORKER_CHECKS = "ifbench-worker-checks"
#: The key of the checks' mappings in the call report's mapping.
BUNDLE_KEY = "ifbench_checks"
#: The rebuilt checks on the controller's call report, until they are logged.
_PENDING_ATTR = "_ifbench_checks"
#: What xdist adds to each report's mapping on the worker; a carried check gets its call report's.
_XDIST_KEYS = ("item_index", "worker_id", "testrun_uid")


def _unseen_terminal(config: pytest.Config) -> Any:
    """The worker's terminal reporter when what it writes goes nowhere (execnet points a worker's
    standard output at the null device), else None. It wrote and flushed a letter for every check
    (0.3 ms of a worker's ~2.5 ms per cached instance, for nothing anyone reads)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return None
    try:
        unseen = os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(os.devnull))
    except (OSError, ValueError, AttributeError):  # a replaced stdout without a file descriptor
        return None
    return reporter if unseen else None


class WorkerChecks:
    """An xdist worker's passed checks, kept for their instance's call report."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._sender: Any = None
        self._sender_looked_up = False
        self._left_out: list[Any] = []
        self._callers: dict[frozenset[int], Any] = {}
        self._pending: dict[str, list[Any]] = {}
        self._keeping = False

    def log(self, item: pytest.Item, report: Any) -> bool:
        """Log ``report`` (a check's) on this worker and keep it for the call report; False when it
        must travel on its own (not passed, or no xdist sender to leave out): the caller logs it."""
        if not report.passed:
            return False
        caller = self._caller(item)
        if caller is None:
            return False
        caller(report=report)
        self._keeping = True
        try:
            data = self._config.hook.pytest_report_to_serializable(config=self._config, report=report)
        finally:
            self._keeping = False
        self._pending.setdefault(report.nodeid, []).append(data)
        return True

    def attach(self, report: Any, data: dict[str, Any]) -> None:
        """Put the kept checks of ``report``'s instance into the mapping ``data`` of the next report of
        it that travels (its call report, or a failed check before it: the order stays the order made)."""
        if self._keeping:  # a kept check's own mapping
            return
        checks = self._pending.pop(getattr(report, "nodeid", None), None)
        if checks:
            data[BUNDLE_KEY] = checks

    def _caller(self, item: pytest.Item) -> Any:
        """``pytest_runtest_logreport`` for ``item`` without xdist's sender (None: no sender found)."""
        if not self._sender_looked_up:
            self._sender, self._sender_looked_up = worker_interactor(self._config), True
            self._left_out = [self._sender, *filter(None, [_unseen_terminal(self._config)])]
        if self._sender is None:
            return None
        ihook = item.ihook
        unused = getattr(ihook, "remove_mods", None)  # pytest's proxy without other directories' conftests
        if unused is None:
            if ihook is not self._config.hook:
                return None
            unused = ()
        key = frozenset(map(id, unused))
        caller = self._callers.get(key)
        if caller is None:
            caller = self._callers[key] = self._config.pluginmanager.subset_hook_caller(
                "pytest_runtest_logreport", remove_plugins=[*unused, *self._left_out])
        return caller


def detach(config: pytest.Config, data: dict[str, Any]) -> list[Any] | None:
    """Take the carried checks out of a report's mapping ``data`` (on the controller, before the
    report is rebuilt) and rebuild them; :func:`hold` puts them on the rebuilt report."""
    checks = data.pop(BUNDLE_KEY, None)
    if not checks:
        return None
    extras = {key: data[key] for key in _XDIST_KEYS if key in data}
    return [config.hook.pytest_report_from_serializable(config=config, data={**check, **extras})
            for check in checks]


def hold(report: Any, checks: list[Any] | None) -> Any:
    if checks:
        report.__dict__[_PENDING_ATTR] = checks
    return report


class ControllerChecks:
    """Logs a report's carried checks right before the report itself (see the module doc)."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logreport(self, report: Any) -> Any:
        checks = report.__dict__.pop(_PENDING_ATTR, None) if hasattr(report, "__dict__") else None
        if checks:
            node = getattr(report, "node", None)
            for check in checks:
                if node is not None:
                    check.node = node  # as xdist sets it on every report it receives
                self._config.hook.pytest_runtest_logreport(report=check)
        return (yield)
