"""Which of an instance's reports pytest keeps to the end of the session.

pytest's terminal reporter keeps every report it is given in ``stats``, by the category its
``pytest_report_teststatus`` hooks give it. A passed setup or teardown, and at the default verbosity
a passed subtest, have the empty category: kept under ``stats[""]``, which nothing in pytest reads
(the summary line, its colour and the ``-r`` lists skip the empty key; xdist, JUnit XML and Allure
take reports from the hooks as they come). For an instance that is two of its reports at any
verbosity (~0.9 KB of the ~10 KB it kept) and one per check at the default one.

:class:`KeptReports` takes an instance's report back out of ``stats[""]`` right after the terminal
reporter put it there. Every report filed under a category (passed, failed, error, skipped,
"subtests passed" with ``-q``/``-v``...) and every report of another test stays as pytest keeps it.
"""

from __future__ import annotations

import pytest

#: The marker every instance carries (see ``_collect.instance_markers``); reports name it in their
#: keywords, in one process and on the xdist controller alike.
INSTANCE_KEYWORD = "ifbench"


class KeptReports:
    """Drops instances' reports from ``stats[""]`` (see the module docstring)."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if INSTANCE_KEYWORD not in report.keywords:
            return
        reporter = self._config.pluginmanager.get_plugin("terminalreporter")
        unkept = getattr(reporter, "stats", {}).get("")
        if unkept and unkept[-1] is report:  # just filed there, by the terminal reporter's own hook
            unkept.pop()
