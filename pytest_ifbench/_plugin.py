"""The pytest plugin entry point (``pytest11``): options, hooks and wiring.

Each concern lives in its own module; this one only connects them to pytest.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from . import _ast_guard
from ._check_bundle import WORKER_CHECKS
from ._collect import CheckUndecided, InstanceError, InstanceItem, SuiteFile
from ._startup_checks import check_models, check_selected
from ._state import RECORDS_KEY, STATE_KEY, build_state
from ._xdist import worker_interactor
from .reports.terminal_text import clean_report, printable
from .suite.detect import is_suite_file
from .suite.run_settings import settings_by_benchmark

_ast_guard.install()  # before any thread of ours starts; see the module for the CPython bug

#: Plugins shipped with the core (reporters, the scale plugins, the spending limit, the start-up checks
#: under xdist); each owns its options
#: (``-p no:ifbench_<name>`` disables one).
_REPORTERS = {"ifbench_baseline": "reports.baseline", "ifbench_allure": "reports.allure",
              "ifbench_summary_file": "reports.summary_file",
              "ifbench_shard": "scale.shard", "ifbench_shared_cache": "scale.shared",
              "ifbench_live_status": "reports.live_status", "ifbench_max_cost": "_max_cost",
              "ifbench_rootdir": "scale.rootdir", "ifbench_startup_checks": "_startup_checks"}


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from importlib import import_module

    from . import _hookspecs
    from ._composition import register_benchmarks

    pluginmanager.add_hookspecs(_hookspecs)
    for plugin_name, module in _REPORTERS.items():
        if not pluginmanager.has_plugin(plugin_name) and not pluginmanager.is_blocked(plugin_name):
            pluginmanager.register(import_module(f"{__package__}.{module}"), plugin_name)
    # Benchmarks, shipped or third-party, arrive through their entry points: `-p no:<name>` blocks one.
    register_benchmarks(pluginmanager)


def pytest_plugin_registered(plugin: Any, manager: pytest.PytestPluginManager) -> None:
    """A ``conftest.py`` or ``-p`` module declaring a ``Benchmark``: register the declaration's hooks."""
    from ._composition import register_declared

    register_declared(manager, plugin)


def pytest_addoption(parser: pytest.Parser) -> None:
    from ._options import add_options

    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    from ._termination import install

    install(config)
    _choose_sandbox(config)
    config.stash[STATE_KEY] = build_state(config)
    config.stash[RECORDS_KEY] = {}
    from .reports.results_collector import ResultsCollector

    config.pluginmanager.register(ResultsCollector(config), "ifbench-results")
    from ._heap import SessionHeap

    config.pluginmanager.register(SessionHeap(config), "ifbench-heap")
    from ._kept_reports import KeptReports

    config.pluginmanager.register(KeptReports(config), "ifbench-kept-reports")
    _register_check_bundles(config)
    from . import _collect

    if not config.pluginmanager.is_registered(_collect):
        config.pluginmanager.register(_collect, "ifbench-collect")
    config.addinivalue_line("markers", "ifbench: every pytest-ifbench instance")
    # litellm/pydantic warn lazily from the background generator thread; pytest would pin
    # that noise on whichever instance happens to be running.
    for module in ("pydantic", "litellm", "httpx", "aiohttp"):
        config.addinivalue_line("filterwarnings", rf"ignore::Warning:{module}(\..*)?")
    if config.getoption("markers", False):
        _register_markers_of_args(config)


_PREFETCH_CHECKED = pytest.StashKey[bool]()


def pytest_collectstart(collector: pytest.Collector) -> None:
    """At the first suite file, start importing litellm if this process will call a model through it."""
    if isinstance(collector, SuiteFile) and not collector.config.stash.get(_PREFETCH_CHECKED, False):
        collector.config.stash[_PREFETCH_CHECKED] = True
        _prefetch_model_stack(collector.config)


def _prefetch_model_stack(config: pytest.Config) -> None:
    """Start importing litellm now, in a background thread, when this process will surely call a model
    through it: the ~3 s import then overlaps collection instead of delaying the first request.

    Only once a suite file is being collected (a run without suites never pays for it), not on an
    xdist controller (its workers call), not for ``--collect-only``, pre-recorded responses or models
    on the direct path, and not when the response cache has entries (a re-score may never call; the
    first cache miss imports it then, off the event loop).
    """
    state = config.stash[STATE_KEY]
    if (config.getoption("collectonly") or state.responses is not None
            or (getattr(config.option, "numprocesses", None) and not _is_worker(config))):
        return
    models = {state.model_name, *state.judge_names}
    if not any(state.providers.for_model(model, state.api_base).needs_litellm for model in models):
        return
    if state.cache is None or next(state.cache.root.glob("*/*.json"), None) is None:
        from .models.client import prefetch_litellm

        prefetch_litellm()


def _register_markers_of_args(config: pytest.Config) -> None:
    """``pytest --markers suites/`` lists the markers the suites' instances get."""
    from ._collect import instance_markers, register_marker

    state = config.stash[STATE_KEY]
    for path in _suite_paths(config):
        try:
            suite = state.load(path)
        except Exception:
            continue
        for instance in suite.instances:
            for name, help_text in instance_markers(instance):
                register_marker(state, name, help_text)


_ARGUMENT_PATHS = pytest.StashKey[tuple[Path, ...]]()


def _argument_paths(config: pytest.Config) -> tuple[Path, ...]:
    """The files and directories the run's arguments name (node ids without their ``::`` part), absolute;
    the invocation directory when there are none. Worked out once a run: every collected file asks."""
    paths = config.stash.get(_ARGUMENT_PATHS, None)
    if paths is None:
        base = Path(config.invocation_params.dir)
        args = [a.split("::")[0] for a in config.args] or [str(base)]
        paths = config.stash[_ARGUMENT_PATHS] = tuple(Path(os.path.abspath(base / arg)) for arg in args)
    return paths


def _suite_paths(config: pytest.Config) -> list[Path]:
    out = []
    for path in _argument_paths(config):
        candidates = [path] if path.is_file() else sorted(path.rglob("*.y*ml")) if path.is_dir() else []
        out.extend(p for p in candidates if is_suite_file(p))
    return out


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if is_suite_file(file_path):  # a YAML file that mentions an `ifbench` key: SuiteFile says if it is none
        return SuiteFile.from_parent(parent, path=file_path)
    if file_path.suffix in (".json", ".jsonl", ".yaml", ".yml") and _named_by_args(parent.config, file_path):
        from .suite.errors import SuiteError
        from .suite.importers import import_suite_data

        try:
            data = import_suite_data(parent.config, file_path)
        except SuiteError:  # an importer's own file, malformed: SuiteFile.collect reports it by name
            return SuiteFile.from_parent(parent, path=file_path)
        if data is not None:  # keep it: SuiteFile.collect would otherwise import the file again
            parent.config.stash[STATE_KEY].imported[file_path] = data
            return SuiteFile.from_parent(parent, path=file_path)
    return None


def _named_by_args(config: pytest.Config, path: Path) -> bool:
    """Whether the run's arguments name ``path`` or a directory above it. pytest collects a file argument
    through its directory, offering every sibling to ``pytest_collect_file``: an importer would read (and
    warn about) data files nobody asked for."""
    return any(path == named or named in path.parents for named in _argument_paths(config))


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if config.pluginmanager.hasplugin("dsession") and not config.getoption("collectonly"):
        # xdist controller: the workers collect, so sniff the arguments for suites up front.
        state = config.stash[STATE_KEY]
        if state.responses is None and _suite_paths(config):
            check_models([state.model_name], config)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Instances marked ``full`` (the long tail of the shipped suites) run only when asked for:
    ``--ifbench-full``, a ``-m`` expression that names ``full``, explicit node ids, or naming their
    file itself (``pytest coding.json`` runs the whole official file; ``pytest suites/`` does not)."""
    names_full = "full" in re.findall(r"\w+", config.getoption("markexpr") or "")
    if config.getoption("ifbench_full") or names_full or any("::" in a for a in config.args):
        return
    named_files = {path.resolve() for path in map(Path, config.args) if path.is_file()}
    kept, dropped = [], []
    for item in items:
        left_out = (isinstance(item, InstanceItem) and "full" in item.spec.markers
                    and item.path.resolve() not in named_files)
        (dropped if left_out else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    instances = [i for i in session.items if isinstance(i, InstanceItem)]
    if not instances or config.getoption("collectonly"):
        return
    if not _is_worker(config):  # an xdist controller checks the workers' collection (see _startup_checks)
        check_selected([i.spec for i in instances], config)
    state = config.stash[STATE_KEY]
    if state.responses is not None and not _is_worker(config):
        state.unmatched_responses = sorted(set(state.responses) - {i.spec.id for i in instances})
    from .models.lookahead import Lookahead, width_for

    state.lookahead = Lookahead(width_for(state.generation().concurrency))
    if not _is_worker(config):
        # Jobs start in item order, each with its index as priority (the limiter keeps that order under
        # contention), the first ones now and the rest as items run (see pytest_runtest_protocol).
        state.lookahead.queue((item, index) for index, item in enumerate(instances))
        state.lookahead.advance()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n`` (``--dist load``) on suites: each worker gets its share of the collection up front, so its
    generator keeps ``--ifbench-concurrency`` calls in flight for all of it (see :mod:`.models.xdist_feed`).
    Other ``--dist`` modes, and runs that name no suite, keep xdist's own scheduling."""
    if config.getvalue("dist") != "load":
        return None
    named = [Path(a.split("::")[0]) for a in config.args]
    if not _suite_paths(config) and not any(p.suffix in (".json", ".jsonl") for p in named):
        return None
    from .models.xdist_feed import share_scheduler

    return share_scheduler(config, log)


#: Collection indices of the items queued to this xdist worker that joined its run order.
_QUEUED_SEEN = pytest.StashKey[set[int]]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if not isinstance(item, InstanceItem):
        return
    lookahead = item.state.lookahead
    if lookahead is None:
        return
    if _is_worker(item.config):
        # xdist worker: this item and the next start now; the rest of what is queued to this worker so
        # far (its whole share, see pytest_xdist_make_scheduler) joins the run order, each with its
        # collection index as priority.
        for queued in (item, nextitem):
            if isinstance(queued, InstanceItem):
                queued.start_job(0)
        lookahead.queue(_newly_queued(item))
    lookahead.advance(item)


def _newly_queued(item: InstanceItem) -> list[tuple[InstanceItem, int]]:
    """The instances xdist queued to this worker since the last call, in the order they will run."""
    interactor = worker_interactor(item.config)
    if interactor is None:
        return []
    seen = item.config.stash.setdefault(_QUEUED_SEEN, set())
    fresh: list[int] = []
    with interactor.torun.lock() as pending:
        for index in reversed(pending):  # new indices arrive at the end: stop at the first one seen before
            if isinstance(index, int):
                if index in seen:
                    break
                fresh.append(index)
    seen.update(fresh)
    items = item.session.items
    return [(items[index], index + 1) for index in reversed(fresh) if isinstance(items[index], InstanceItem)]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if not isinstance(item, InstanceItem):
        return report
    if call.when == "call" and report.passed and item.failed_subtests and not hasattr(report, "context"):
        # Name the failed checks instead of pytest's generic "contains N failed subtests".
        report.outcome = "failed"
        report.longrepr = item.failure_summary()
        if item.undecided_subtests:
            report.ifbench_undecided = True
    elif call.when == "call" and call.excinfo is not None and isinstance(call.excinfo.value, CheckUndecided):
        report.ifbench_undecided = True  # a check's subtest
    if call.when == "setup" and report.failed and call.excinfo is not None \
            and isinstance(call.excinfo.value, InstanceError):
        report.longrepr = str(call.excinfo.value)  # the provider's message, not a traceback
    if item.ifbench_record is not None:
        if call.when == "call" or (call.when == "setup" and report.failed):
            report.ifbench_record = item.ifbench_record
    clean_report(report)
    return _report_parts(item.config).share(report)


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport) -> tuple[str, str, str] | None:
    """A check nothing decided (a judge left it out, its verifier raised) is an error, as the summary and the
    results count its instance: its subtest and its instance are filed as errors, not failures (``E``,
    ``SUBERROR[check]``, ``N errors`` on pytest's last line)."""
    if report.when != "call" or not report.failed or not getattr(report, "ifbench_undecided", False):
        return None
    context = getattr(report, "context", None)
    return "error", "E", f"SUBERROR[{context.msg}]" if context is not None else "ERROR"


def _register_check_bundles(config: pytest.Config) -> None:
    """Under xdist, passed checks travel with their instance's call report (see ``_check_bundle``)."""
    from ._check_bundle import ControllerChecks, WorkerChecks

    if _is_worker(config):
        config.pluginmanager.register(WorkerChecks(config), WORKER_CHECKS)
    elif getattr(config.option, "numprocesses", None) or getattr(config.option, "dist", "no") != "no":
        config.pluginmanager.register(ControllerChecks(config), "ifbench-controller-checks")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_report_to_serializable(config: pytest.Config, report: Any):
    """Result records cross xdist's transport as JSON text (see :func:`~.reports.records.record_to_wire`),
    and from a worker an instance's whole report (see ``_report_wire``): outermost, after every
    other plugin's change to the mapping."""
    from .reports.records import WIRE_ASCII_KEY, WIRE_KEY, record_to_wire

    data = yield
    if not isinstance(data, dict):
        return data
    data = record_to_wire(data)
    checks = config.pluginmanager.get_plugin(WORKER_CHECKS)
    if checks is not None:  # an xdist worker
        from ._check_bundle import BUNDLE_KEY
        from ._report_wire import pack

        checks.attach(report, data)
        data = pack(data, keep=(WIRE_KEY, WIRE_ASCII_KEY, BUNDLE_KEY))
    return data


#: What an instance's reports share (see ``_kept_reports.ReportParts``), one for the session.
_REPORT_PARTS = pytest.StashKey[Any]()


def _report_parts(config: pytest.Config) -> Any:
    parts = config.stash.get(_REPORT_PARTS, None)
    if parts is None:
        from ._kept_reports import ReportParts

        parts = config.stash[_REPORT_PARTS] = ReportParts()
    return parts


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_report_from_serializable(config: pytest.Config, data: dict[str, Any]):
    from ._check_bundle import detach, hold
    from ._report_wire import unpack
    from .reports.records import record_from_wire

    unpack(data)  # outermost: before any other plugin reads the mapping
    checks = detach(config, data)
    report = yield
    return hold(_report_parts(config).share(record_from_wire(report)), checks) if report is not None else report


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    if isinstance(item, InstanceItem):  # the report has the record now; free the episodes
        item.close_workspaces()
        item.episodes, item.episode, item.ifbench_record = (), None, None


_PREVIOUS_BACKEND = pytest.StashKey[Any]()


@pytest.hookimpl(trylast=True)
def pytest_ifbench_sandbox_backend(name: str, config: pytest.Config) -> Any:
    """The built-in backends, by name (None for any other)."""
    from .sandbox.backends import BUILT_IN, make_backend

    return make_backend(name) if name in BUILT_IN else None


def _choose_sandbox(config: pytest.Config) -> None:
    """Make ``--ifbench-sandbox``'s backend the process's; one named explicitly must be able to run here."""
    from .sandbox.backend import DEFAULT_BACKEND
    from .sandbox.backends import backend_names, use_backend

    named = config.getoption("ifbench_sandbox", None)
    name = named or DEFAULT_BACKEND
    backend = config.hook.pytest_ifbench_sandbox_backend(name=name, config=config)
    if backend is None:
        raise pytest.UsageError(f"pytest-ifbench: --ifbench-sandbox={name}: no such sandbox backend "
                                f"(known: {', '.join(backend_names())})")
    if named and not config.getoption("collectonly", False) and (problem := backend.problem()):
        raise pytest.UsageError(f"pytest-ifbench: --ifbench-sandbox={name}: {problem}")
    config.stash[_PREVIOUS_BACKEND] = use_backend(backend)


def pytest_unconfigure(config: pytest.Config) -> None:
    from ._termination import uninstall

    uninstall(config)
    if _PREVIOUS_BACKEND in config.stash:
        from .sandbox.backends import use_backend

        use_backend(config.stash[_PREVIOUS_BACKEND])
    state = config.stash.get(STATE_KEY, None)
    if state is not None and state.generator is not None:
        from .models.openai_compat import close_sessions

        state.generator.shutdown(before_stop=close_sessions)  # the direct path's connections live on its loop
    background = sys.modules.get(f"{__package__}.models.background")
    if background is not None:
        background.resume_sending()  # a run stopped by Ctrl-C: the next one in this process sends again
    workspaces = sys.modules.get(f"{__package__}.agents.workspace")  # not loaded: no agent ran, none is open
    if workspaces is not None:
        workspaces.close_open_workspaces()  # finished agent runs whose items did not run (Ctrl-C)


def pytest_keyboard_interrupt(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    """Ctrl-C or SIGTERM: no further model call is sent (what is queued would be paid for nothing), and the calls
    already sent are waited for, before the session's end closes the caches (the shared one's writes included)."""
    from .models.background import DRAIN_SECONDS, stop_and_drain

    stop_and_drain(DRAIN_SECONDS, _say)


def _say(text: str) -> None:
    sys.stderr.write(f"pytest-ifbench: {text}\n")
    sys.stderr.flush()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if _is_worker(config):
        return
    collector = config.pluginmanager.get_plugin("ifbench-results")
    if collector is None:
        return
    for record in collector.crash_records():
        collector.add(record)
    records = list(config.stash[RECORDS_KEY].values())  # the compact views: all the metrics read
    if records and not (session.exitstatus == pytest.ExitCode.INTERRUPTED and collector.keep_journal()):
        from .reports.results_collector import results_meta
        from .reports.terminal import run_metrics

        state = config.stash[STATE_KEY]
        meta = {"model": state.model_name, "judges": state.judge_names,
                "generation": settings_by_benchmark(records), "metrics": run_metrics(config, records)}
        collector.write({**results_meta(config, meta), **meta})


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _is_worker(config):
        return
    records = list(config.stash[RECORDS_KEY].values())
    if not records:
        return
    from .reports.terminal import summary_lines

    terminalreporter.section("ifbench summary")
    for line in summary_lines(config, records):
        terminalreporter.write_line(printable(line))  # the first error's text: a provider's, an agent's
