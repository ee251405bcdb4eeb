"""Each check of an instance reported as a pytest subtest, without a fresh capture per check.

``subtests.test(msg=name)`` (pytest's built-in ``subtests``) opens a new output capture for every
block: a ``CaptureFixture`` with two temporary files and ``dup2`` calls, plus a log handler. With
five checks per instance that was 40 % of a cached run. A check's block only calls the
``pytest_ifbench_report_check`` hooks, which rarely write anything, so :func:`report_subtest` takes
the block's output from the capture the item already has instead: what the item had written before
is set aside, what the block wrote becomes the subtest report's "Captured stdout/stderr call"
sections (as with pytest's own capture), and the item's text is put back afterwards. Its log records
are read from the item's log handler, where pytest's subtests leave them too.

The report itself is made exactly as pytest's subtests make it (the same hooks in the same order,
the same ``SubtestReport``), so the terminal, JUnit XML, xdist and Allure see the same thing. With
a pytest whose subtests module lacks the pieces used here, :func:`subtest_reporter` returns None
and the caller falls back to ``subtests.test()``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from ._check_bundle import WORKER_CHECKS
from ._kept_reports import check_context

try:
    from _pytest.runner import CallInfo, check_interactive_exception, get_reraise_exceptions
    from _pytest.subtests import Captured, CapturedLogs, SubtestContext, SubtestReport, failed_subtests_key
except ImportError:  # pragma: no cover - another pytest layout: fall back to subtests.test()
    SubtestReport = None  # type: ignore[assignment,misc]


class _SharedCapture:
    """Reads one block's output from the item's capture and its logs from the item's log handler."""

    def __init__(self, config: pytest.Config) -> None:
        capman = config.pluginmanager.getplugin("capturemanager")
        fixture_active = capman is not None and getattr(capman, "_capture_fixture", None) is not None
        capturing = capman is not None and capman.is_globally_capturing()
        #: pytest's subtests capture only with --capture=fd/sys and no capsys/capfd fixture active.
        self._capman = capman if capturing and not fixture_active and \
            config.getoption("capture", None) in ("fd", "sys") else None
        logging_plugin = config.pluginmanager.getplugin("logging-plugin")
        self._logs = getattr(logging_plugin, "report_handler", None)
        self._log_start = 0
        self._held: tuple[str, str] = ("", "")
        self._suspend = capman.global_and_fixture_disabled if capman is not None else _nothing

    def hold(self) -> None:
        """Set aside what the item wrote so far (put back by :meth:`release`)."""
        if self._capman is not None:
            out, err = self._capman.read_global_capture()
            self._held = (self._held[0] + out, self._held[1] + err)

    def start(self) -> None:
        if self._logs is not None:
            self._log_start = self._logs.stream.tell()

    def finish(self) -> tuple[Captured | None, CapturedLogs | None]:
        captured = None
        if self._capman is not None:
            out, err = self._capman.read_global_capture()
            captured = Captured(out=out, err=err)
        logs = None
        if self._logs is not None and self._logs.stream.tell() > self._log_start:
            logs = _LogSlice(self._logs.stream.getvalue()[self._log_start:])
        return captured, logs  # type: ignore[return-value]

    def release(self) -> None:
        """Put the item's own output back into its capture, for its report."""
        out, err = self._held
        self._held = ("", "")
        for stream, text in ((sys.stdout, out), (sys.stderr, err)):
            if text:  # the capture's own stand-in for the stream: the text lands back in the capture
                stream.write(text)
                stream.flush()

    def suspended(self) -> Any:
        return self._suspend()


class _LogSlice:
    """What ``SubtestReport._new`` reads from a ``CapturedLogs``: ``handler.stream.getvalue()``."""

    def __init__(self, text: str) -> None:
        self.handler = self
        self.stream = self
        self._text = text

    def getvalue(self) -> str:
        return self._text


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


class SubtestReporter:
    """Runs blocks as subtests of one item (see the module docstring); use :func:`subtest_reporter`."""

    def __init__(self, item: pytest.Item) -> None:
        self.item = item
        self.config = item.config
        self._capture = _SharedCapture(item.config)
        self._reraise = get_reraise_exceptions(item.config)
        #: On an xdist worker: passed checks travel with the call report (see ``_check_bundle``).
        self._bundle = item.config.pluginmanager.get_plugin(WORKER_CHECKS)

    def __enter__(self) -> SubtestReporter:
        self._capture.hold()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._capture.release()

    def run(self, name: str, body: Callable[[], object]) -> BaseException | None:
        """Run ``body`` as the subtest ``[name]`` and report it; what it raised when it failed, else None (it
        passed or was skipped).

        Exceptions are reported, not raised, as in ``subtests.test()``, except those pytest never
        swallows (``pytest.exit``, Ctrl-C) and any failure once ``-x``/``--maxfail`` has tripped.
        """
        __tracebackhide__ = True
        start, precise = time.time(), time.perf_counter()
        self._capture.start()
        error: BaseException | None = None
        try:
            body()
        except BaseException as exc:  # noqa: BLE001 - reported below, exactly as pytest's subtests do
            error = exc
        duration = time.perf_counter() - precise
        captured, logs = self._capture.finish()
        call = CallInfo[None](None, pytest.ExceptionInfo.from_exception(error) if error is not None else None,
                              start=start, stop=time.time(), duration=duration, when="call", _ispytest=True)
        ihook = self.item.ihook
        report = ihook.pytest_runtest_makereport(item=self.item, call=call)
        # The item's result record rides on its own call report only: a copy on each of its subtest
        # reports would cross xdist's transport once per check (as JSON) for the controller to drop.
        report.__dict__.pop("ifbench_record", None)
        sub_report = _subtest_report(report, check_context(name), captured, logs)
        if sub_report.failed:
            # keyed like pytest's subtests: by the structured node id its teststatus hook looks up
            self.config.stash[failed_subtests_key][self.item.id] += 1
        with self._capture.suspended():
            if self._bundle is None or not self._bundle.log(self.item, sub_report):
                ihook.pytest_runtest_logreport(report=sub_report)
        if check_interactive_exception(call, sub_report):
            ihook.pytest_exception_interact(node=self.item, call=call, report=sub_report)
        if error is not None and (isinstance(error, self._reraise) or self.item.session.shouldfail):
            raise error
        return error if sub_report.failed else None


def _subtest_report(report: pytest.TestReport, context: SubtestContext, captured: Captured | None,
                    logs: CapturedLogs | None) -> SubtestReport:
    """``SubtestReport._new(report, ...)``; for a check with no failure representation and nothing
    captured (nearly all of them) made directly, with the same fields in the same order.

    ``_new`` copies the report through its JSON form and back (6 µs per check; this takes 2.5), and
    pytest's ``__init__`` ends with ``self.__dict__.update(extra)``, which gives every report a dict
    of its own. Set one by one, the attributes stay in the object's compact inline storage
    (CPython 3.11+) until something asks for ``__dict__``, which then works as ever: 370 instead
    of 600 bytes for each check's report that pytest keeps to the end of the session."""
    plain = (report.longrepr is None and not report.sections and not (captured and (captured.out or captured.err))
             and logs is None)
    if not plain:
        sub_report = SubtestReport._new(report, context, captured_output=captured,  # type: ignore[arg-type]
                                        captured_logs=logs)  # type: ignore[arg-type]
        # pytest keeps the report to the end of the session: the copy parsed the node id again; it
        # shares the item's (its keywords are the call report's, shared already: _kept_reports)
        if getattr(sub_report, "_id", None) == getattr(report, "_id", False):
            sub_report._id = report._id
        return sub_report
    sub_report = SubtestReport.__new__(SubtestReport)
    for name, value in report.__dict__.items():  # the item's parsed node id (_id) and keywords: shared
        if name in ("user_properties", "sections"):
            value = list(value)  # as __init__ does: the report's own lists
        setattr(sub_report, name, value)
    sub_report.context = context
    return sub_report


def subtest_reporter(item: pytest.Item) -> SubtestReporter | None:
    """A reporter for ``item``'s checks, or None where this pytest's subtests cannot be reproduced."""
    if SubtestReport is None or failed_subtests_key not in item.config.stash:
        return None
    return SubtestReporter(item)
