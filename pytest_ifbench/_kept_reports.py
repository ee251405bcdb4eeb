"""Which of an instance's reports pytest keeps to the end of the session.

pytest's terminal reporter keeps every report it is given in ``stats``, by the category its
``pytest_report_teststatus`` hooks give it. A passed setup or teardown, and at the default verbosity
a passed subtest, have the empty category: kept under ``stats[""]``, which nothing in pytest reads
(the summary line, its colour and the ``-r`` lists skip the empty key; xdist, JUnit XML and Allure
take reports from the hooks as they come). For an instance that is two of its reports at any
verbosity (~0.9 KB of the ~10 KB it kept) and one per check at the default one.

:class:`KeptReports` takes an instance's report back out of ``stats[""]`` right after the terminal
reporter put it there. With ``-q`` or ``-v`` a passed check is filed under ``"subtests passed"``
instead, which pytest only counts: there the report stays (conftests read every report in ``stats``,
``nodeid`` and ``caplog`` included), but its two empty lists, ``sections`` and ``user_properties``,
become one shared empty tuple (112 bytes a check; every plugin got the report with its own lists
through the hook). Every other report filed under a category (passed, failed, error, skipped...)
and every report of another test stays as pytest keeps it.

What is kept shares what is equal: an instance's reports one keywords dict and one parsed node id,
the reports of a check one context (:class:`ReportParts`, where pytest makes the reports and on the
xdist controller, which rebuilds every report from a worker's mapping; :func:`check_context`).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

try:
    from _pytest.subtests import SubtestContext
except ImportError:  # pragma: no cover - a pytest without subtests: no contexts to share
    SubtestContext = None  # type: ignore[assignment,misc]

#: The marker every instance carries (see ``_collect.instance_markers``); reports name it in their
#: keywords, in one process and on the xdist controller alike.
INSTANCE_KEYWORD = "ifbench"


#: What a kept passed check's empty ``sections`` and ``user_properties`` become.
_NOTHING: tuple[()] = ()
_COUNTED_CATEGORY = "subtests passed"


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
        elif report.passed and hasattr(report, "context"):
            counted = stats.get(_COUNTED_CATEGORY)
            if counted and counted[-1] is report:
                # attribute by attribute: asking for __dict__ would give the report a dict of its own
                if not report.sections:
                    report.sections = _NOTHING  # type: ignore[assignment]
                if not report.user_properties:
                    report.user_properties = _NOTHING  # type: ignore[assignment]


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
