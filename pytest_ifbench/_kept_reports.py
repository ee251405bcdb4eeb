"""Which of an instance's reports pytest keeps to the end of the session.

pytest's terminal reporter keeps every report it is given in ``stats``, by the category its
``pytest_report_teststatus`` hooks give it. A passed setup or teardown, and at the default verbosity
a passed subtest, have the empty category: kept under ``stats[""]``, which nothing in pytest reads
(the summary line, its colour and the ``-r`` lists skip the empty key; xdist, JUnit XML and Allure
take reports from the hooks as they come). For an instance that is two of its reports at any
verbosity (~0.9 KB of the ~10 KB it kept) and one per check at the default one.

:class:`KeptReports` takes an instance's report back out of ``stats[""]`` right after the terminal
reporter put it there. With ``-q`` or ``-v`` a passed check is filed under ``"subtests passed"``
instead, a list pytest only counts (the summary line and its colour; no ``-r`` character lists it):
there the report becomes a :class:`CountedCheck`, which keeps what names it -- its node id, keywords
and check, all shared with the instance's other reports -- and says what it was (a passed call), in 56
bytes instead of the report's ~350 (every plugin got the full report through the hook). Its duration
goes, as it does at the default verbosity, where pytest keeps no passed check: ``--durations`` lists
none. An instance's passed call report, filed under ``"passed"`` (for ``-rA``), stays, its two empty
lists, ``sections`` and ``user_properties``, one shared empty tuple (112 bytes). Every other report
filed under a category (failed, error, skipped...) and every report of another test stays as pytest
keeps it.

An instance's item, too, stays to the end (``session.items``). Once its run is over -- nothing adds
to them after its teardown -- its empty ``extra_keyword_matches`` set and its empty
``user_properties`` and ``_report_sections`` lists become shared empty ones, its fixture names the
suite's shared list again, and what pytest stashed for its phases goes (the outcomes for ``tmp_path``,
the evaluated ``xfail`` mark), with the stash's table (~0.8 KB an instance).

What is kept shares what is equal: an instance's reports one keywords dict and one parsed node id,
the reports of a check one context (:class:`ReportParts`, where pytest makes the reports and on the
xdist controller, which rebuilds every report from a worker's mapping; :func:`check_context`).
"""

from __future__ import annotations

import functools
from collections.abc import Generator
from typing import Any

import pytest

try:
    from _pytest.subtests import SubtestContext
except ImportError:  # pragma: no cover - a pytest without subtests: no contexts to share
    SubtestContext = None  # type: ignore[assignment,misc]
try:
    from _pytest.tmpdir import tmppath_result_key
except ImportError:  # pragma: no cover - a pytest that keeps no outcomes for tmp_path's retention
    tmppath_result_key = None
try:
    from _pytest.skipping import xfailed_key
except ImportError:  # pragma: no cover - a pytest that keeps no evaluated xfail mark per item
    xfailed_key = None

#: pytest's per-item state of a run's phases, read only while the item runs: each phase's outcome for
#: ``tmp_path``'s retention (which that fixture itself drops at its teardown) and the evaluated ``xfail``
#: mark (set at setup, read by the call and each phase's report).
_PHASE_KEYS = tuple(key for key in (tmppath_result_key, xfailed_key) if key is not None)

#: The marker every instance carries (see ``_collect.instance_markers``); reports name it in their
#: keywords, in one process and on the xdist controller alike.
INSTANCE_KEYWORD = "ifbench"


#: What the empty lists of a kept passed report and of a finished item become.
_NOTHING: tuple[()] = ()
#: What a finished item's empty ``extra_keyword_matches`` becomes.
_NO_KEYWORDS: frozenset[str] = frozenset()


class CountedCheck:
    """What pytest keeps of an instance's passed check to count it under ``-q`` or ``-v`` (see the module
    docstring): a passed call report by every field pytest or a conftest reads of one it counts."""

    __slots__ = ("_id", "keywords", "context")

    when = "call"
    outcome = "passed"
    passed = True
    failed = False
    skipped = False
    longrepr = None
    sections = _NOTHING
    user_properties = _NOTHING
    count_towards_summary = True

    def __init__(self, report: Any) -> None:
        self._id = report._id
        self.keywords = report.keywords
        self.context = report.context

    @property
    def id(self) -> Any:
        return self._id

    @property
    def nodeid(self) -> str:
        return str(self._id)

    def __repr__(self) -> str:
        return f"<CountedCheck {self.nodeid} [{getattr(self.context, 'msg', '')}] passed>"


class KeptReports:
    """Drops instances' reports from ``stats[""]`` and slims their passed checks' (see the module
    docstring)."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if INSTANCE_KEYWORD not in report.keywords:
            return
        stats = getattr(self._config.pluginmanager.get_plugin("terminalreporter"), "stats", {})
        unkept = stats.get("")
        if unkept and unkept[-1] is report:  # just filed there, by the terminal reporter's own hook
            unkept.pop()
        elif report.passed:
            check = hasattr(report, "context")
            kept = stats.get("subtests passed" if check else "passed")  # a check's, a call's
            if kept and kept[-1] is report:
                if check and hasattr(report, "_id"):
                    kept[-1] = CountedCheck(report)
                    return
                # attribute by attribute: asking for __dict__ would give the report a dict of its own
                if not report.sections:
                    report.sections = _NOTHING  # type: ignore[assignment]
                if not report.user_properties:
                    report.user_properties = _NOTHING  # type: ignore[assignment]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, Any, Any]:
        try:
            return (yield)
        finally:
            if INSTANCE_KEYWORD in item.keywords:
                _slim_finished(item)


def _slim_finished(item: pytest.Item) -> None:
    """What a finished instance's item keeps (see the module docstring)."""
    if not item.extra_keyword_matches:
        item.extra_keyword_matches = _NO_KEYWORDS  # type: ignore[assignment]
    if not item.user_properties:
        item.user_properties = _NOTHING  # type: ignore[assignment]
    if not item._report_sections:
        item._report_sections = _NOTHING  # type: ignore[assignment]
    # Its own copy of the fixture names (see _collect.SuiteFile.collect) is no longer read: the suite's shared one
    closure = getattr(getattr(item, "_fixtureinfo", None), "names_closure", None)
    if isinstance(closure, list) and item.fixturenames == closure:
        item.fixturenames = closure
    stash = item.stash
    for key in _PHASE_KEYS:
        if key in stash:
            del stash[key]
    if not len(stash):  # a dict that held keys keeps its table: a new, empty stash is 160 bytes smaller
        item.stash = pytest.Stash()
        if getattr(item, "_store", None) is stash:  # pytest's old name for it, still an alias
            item._store = item.stash


@functools.lru_cache(maxsize=4096)
def check_context(name: str) -> Any:
    """One (frozen) subtest context per check name, shared by every instance's report of that check."""
    return SubtestContext(msg=name, kwargs={})


class ReportParts:
    """An instance's reports share one keywords dict and one parsed node id, a check's reports one
    context: each report comes with its own copies (pytest's ``dict.fromkeys(item.keywords)`` per
    report where it is made; a new dict, node id and context per report where xdist's controller
    rebuilds it from a worker's mapping), and pytest's terminal reporter keeps them to the end.

    An instance's reports come in order, from setup to teardown (on the controller from one worker;
    several workers' interleave); what they share is held from its first report to its teardown."""

    def __init__(self) -> None:
        self._open: dict[str, tuple[Any, Any]] = {}

    def share(self, report: Any) -> Any:
        keywords = getattr(report, "keywords", None)
        when = getattr(report, "when", None)
        if when is None or not isinstance(keywords, dict) or INSTANCE_KEYWORD not in keywords:
            return report
        fields = report.__dict__
        node_id = fields.get("_id")
        known = self._open.get(report.nodeid)
        if known is not None and known[0] == keywords:
            report.keywords = known[0]
            if node_id is not None and known[1] == node_id:
                fields["_id"] = known[1]
        else:
            self._open[report.nodeid] = (keywords, node_id)
        context = fields.get("context")
        if context is not None and SubtestContext is not None and type(context) is SubtestContext \
                and not context.kwargs and isinstance(context.msg, str):
            fields["context"] = check_context(context.msg)
        if when == "teardown":
            self._open.pop(report.nodeid, None)
        return report
