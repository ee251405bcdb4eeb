"""The controller's side of the result records: streamed to the results journal as reports arrive
(:mod:`.results_stream`), kept in memory only as compact views (:class:`~.records.SummaryViews`) for
the end-of-run tables, and assembled into the results file when the session finishes."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any

import pytest

from .._state import RECORDS_KEY, RESULTS_PROBLEM_KEY, STATE_KEY
from .records import RECORD_TEXT_ATTR, SummaryViews


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def results_target(config: pytest.Config) -> Path | None:
    """The results file this run writes (``--ifbench-results``, relative to the invocation directory)."""
    target = config.getoption("ifbench_results", None)
    if not target:
        return None
    path = Path(target)
    return path if path.is_absolute() else Path(config.invocation_params.dir) / path


def results_meta(config: pytest.Config, meta: Mapping[str, Any]) -> dict[str, Any]:
    """What plugins add to the results file (``pytest_ifbench_results_meta``), without ``meta``'s keys and
    the other keys the core writes."""
    added: dict[str, Any] = {}
    for entries in config.hook.pytest_ifbench_results_meta(config=config):
        added.update(entries or {})
    core = {"format", "plugin_version", "instances", "generation", "metrics", *meta}
    return {key: value for key, value in added.items() if key not in core}


class ResultsCollector:
    """Gathers result records from reports; under xdist they arrive from the workers.

    Each record is written to the journal the moment its report is logged and then dropped from the
    report (pytest's terminal reporter keeps every report to the end); the session keeps its compact
    view in ``config.stash[RECORDS_KEY]``. When the journal cannot be written the full records are
    kept instead and the results file is written from them at the end, as before streaming.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        #: node id -> the first failure of a test that reported no record (a crashed xdist worker's item).
        self.unrecorded: dict[str, str] = {}
        self.views = SummaryViews()
        self.journal: Any = None
        self.journal_path: Path | None = None
        #: Full records kept when there is no journal to put them in (it could not be written).
        self.unjournaled: dict[str, dict[str, Any]] = {}
        self.journal_error: OSError | None = None
        self.lock: Any = None
        target = results_target(config)
        if target is not None and not _is_worker(config):
            from .results_stream import ResultsJournal

            state = config.stash[STATE_KEY]
            meta = {"model": state.model_name, "judges": state.judge_names}
            # the plugins' entries (a shard's) when the first record arrives: a killed run's journal has them
            self.journal = ResultsJournal(target, meta, header=lambda: results_meta(config, meta))
            self.journal_path = self.journal.path

    def lock_results(self) -> None:
        """One run at a time writes the results file (:mod:`.results_lock`): raises :class:`pytest.UsageError`
        when another run holds it. Asked once the run's instances are known (``_startup_checks``), before any
        is run: a run of the project's own tests, which writes no results, takes no lock."""
        from .results_lock import ResultsInUse, ResultsLock

        target = results_target(self.config)
        if self.lock is not None or target is None or _is_worker(self.config):
            return
        lock = ResultsLock(target)
        try:
            if lock.acquire():
                self.lock = lock
        except ResultsInUse as exc:
            raise pytest.UsageError(f"pytest-ifbench: {exc}") from None

    def pytest_unconfigure(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, Any, Any]:
        result = yield  # every other plugin (xdist's sender on a worker, Allure, JUnit) has seen the record
        if not hasattr(report, "context"):  # not a subtest's report
            self._collect(report)
        return result

    def _collect(self, report: pytest.TestReport) -> None:
        record = report.__dict__.pop("ifbench_record", None)
        text = report.__dict__.pop(RECORD_TEXT_ATTR, None)  # as a worker wrote it (under xdist)
        if record is not None:
            if not _is_worker(self.config):
                self.add(record, text)
        elif report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            text = crash.message if crash is not None else str(report.longrepr).strip()
            self.unrecorded.setdefault(report.nodeid, (text.splitlines() or ["failed"])[0])

    def add(self, record: dict[str, Any], text: str | None = None) -> None:
        """Stream ``record`` to the journal (``text``: its JSON text, when known) and keep its compact view."""
        nodeid = record["nodeid"]
        if self.journal is not None:
            try:
                self.journal.add(record, text)
            except OSError as exc:  # a full disk, a directory that cannot be made: keep the records
                self.journal_error = exc
                for queued in self.journal.take_pending():
                    self.unjournaled[queued["nodeid"]] = queued
                self.journal = None
        if self.journal is None and results_target(self.config) is not None:
            self.unjournaled[nodeid] = record
        self.config.stash[RECORDS_KEY][nodeid] = self.views.view(record)

    def crash_records(self) -> list[dict[str, Any]]:
        """An error record (``error_kind: crashed``) for every instance that failed without a record:
        its worker died (xdist reports that item as failed, ``worker 'gw0' crashed while running ...``),
        or the plugin failed before the record was made. Non-instance tests are left out."""
        from .._redact import redact
        from .records import error_record

        records = self.config.stash[RECORDS_KEY]
        state = self.config.stash[STATE_KEY]
        suites: dict[str, dict[str, Any]] = {}
        out = []
        for nodeid, text in self.unrecorded.items():
            file, _, name = nodeid.partition("::")
            if nodeid in records or not name or Path(file).suffix not in (".json", ".jsonl", ".yaml", ".yml"):
                continue
            if file not in suites:
                try:
                    suites[file] = {i.id: i for i in state.load(Path(self.config.rootpath) / file).instances}
                except Exception:  # not a suite after all
                    suites[file] = {}
            instance = suites[file].get(name)
            if instance is not None:
                out.append(error_record(nodeid, instance, state.model_name, state.judge_names, redact(text),
                                        "crashed"))
        return out

    def write(self, meta: dict[str, Any]) -> None:
        """The results file: assembled from the journal, or written from the records kept in memory. When
        it cannot be written (a full disk) the run goes on to its summary, which says so
        (``RESULTS_PROBLEM_KEY``): how many records the journal holds and where."""
        target = results_target(self.config)
        if target is None:
            return
        try:
            if self.journal is not None and len(self.journal):
                self.journal.finish(meta)
            elif self.unjournaled:
                from .records import write_results

                records = {**self._journaled_before_error(), **self.unjournaled}
                write_results(target, list(records.values()), meta)
                if self.journal_path is not None:
                    self.journal_path.unlink(missing_ok=True)
        except OSError as exc:
            self.config.stash[RESULTS_PROBLEM_KEY] = self._not_written(exc)

    def keep_journal(self) -> bool:
        """An interrupted run (Ctrl-C, a CI job cancelled or out of time: SIGINT first) writes no results file:
        one assembled from the journal would look like a finished run's -- its rates over the instances that
        happened to finish -- and replace an earlier complete file. Its journal stays, as a killed run's does
        (``ifbench merge`` and ``compare`` read it, and name it a run that did not finish). False when there is
        no journal to keep (it could not be written): the records in memory are written as ever."""
        if self.journal is None or not len(self.journal):
            return False
        self.journal.close()
        self.config.stash[RESULTS_PROBLEM_KEY] = (
            f"not written: the run was interrupted; the {len(self.journal)} record(s) it finished are in "
            f"{self.journal_path} (ifbench merge and compare read it; a re-run resumes from the cache)")
        return True

    def _not_written(self, exc: OSError) -> str:
        total = len(self.config.stash[RECORDS_KEY])
        journaled = self._journaled_nodeids()
        where = (f"{len(journaled)} of the {total} records are in {self.journal_path} (ifbench merge and compare "
                 "read it)") if journaled and self.journal_path else f"none of the {total} records could be kept"
        return f"not written ({exc.strerror or exc}); {where}"

    def _journaled_nodeids(self) -> set[str]:
        """The node ids the journal holds, read back one record at a time."""
        from .results_reader import ResultsReader

        if self.journal_path is None or not self.journal_path.is_file():
            return set()
        try:
            with self.journal_path.open(encoding="utf-8", errors="replace", newline="") as handle:
                return {str(record.get("nodeid")) for record, _ in ResultsReader(handle)}
        except (OSError, ValueError, RecursionError):
            return set()

    def _journaled_before_error(self) -> dict[str, Any]:
        """The records the journal took before it failed (read back; empty when it holds none)."""
        from .results_reader import read_results

        if self.journal_path is None or not self.journal_path.is_file():
            return {}
        try:
            with self.journal_path.open(encoding="utf-8", errors="replace", newline="") as handle:
                data = read_results(handle)
        except (OSError, ValueError, RecursionError):
            return {}
        return {r["nodeid"]: r for r in data.get("instances", []) if isinstance(r, dict) and "nodeid" in r}
