"""One live status line for long runs: instances done and running, agent steps, tokens, cost, elapsed, the rest.

::

    ifbench: 12/40 instances done, 2 agent runs going, 183 steps, 2,104,332 tokens, $3.1250, 41m07s, ~1h36m left

What it counts. Instances are the collected ifbench items and those finished; agent runs, steps (model
calls of the built-in loop and of real CLIs behind the proxy) and the prompt + completion tokens and
cost of the steps this run paid for (a step served from the cache adds none) come from
:data:`pytest_ifbench.agents.progress.BOARD`, which the loop and the proxy's meter fill step by step.
When an instance finishes, its record settles its figures: what the run paid for its calls
(model, judges, agent steps; a reply served from a cache is not paid for), as the summary's ``tokens
in/out`` and ``cost`` count it, takes the place of what the board counted for it (see :func:`settled`),
so the final line agrees with the summary, and a re-run from the cache ends at 0 tokens and $0. With
``--ifbench-max-cost`` the money is instead what every
call of the run (model, judges, agents; every worker's) has paid, against the limit (``$3.1200 of $20.00
paid``), read off the run's ledger. The rest is estimated from the pace so far (elapsed / done x instances left).

Where it shows (``--ifbench-live-status``):

- ``auto`` (default): on a terminal, the line sits after pytest's own output on the current line and is
  redrawn every second; before pytest writes anything (a test's dot, a warning, the summary) it is
  erased, so pytest's output stays exactly as it would be. When the output is not a terminal, or live
  logging (``--log-cli-level``) already prints every step: a plain line every
  ``--ifbench-live-status-every`` seconds (default 60; 0: none). Either way one plain final line.
- ``tty`` / ``plain`` force either form; ``off`` shows nothing.

The line is written from a thread, and most of a long run is spent inside a test whose output pytest
captures (fd 1 then points at a temporary file). The thread writes to its own duplicate of the terminal's
file descriptor, taken before the first item, and never touches the capture: lifting it from another
thread let the test's prints through to the terminal for that moment, and raced pytest's own lifting of
it around a subtest's report (which then put pytest's output, or the line's erasing, into the capture).
The main thread flushes pytest's writer before the line is erased and after each writing hook, so the
two writers' bytes reach the terminal in the order they were written.

Under ``-n`` the steps happen in the workers. xdist has no public channel for a worker to tell the
controller something in the middle of a test (its report channel carries test reports, which come only
when an item ends -- and an agent run's steps happen long before, in the background generation loop),
so each worker writes its cumulative snapshot (``{total, done, running, runs, steps, tokens, cost}``,
JSON) to a file of its own in a directory the controller hands it (``pytest_configure_node``), at most
twice a second and only when something changed, replacing it atomically; the controller reads the
directory once a second and adds the snapshots up. Cumulative snapshots cannot lose an event (a missed
poll only delays it), the cost is one small file write per half second per worker, and nothing depends
on xdist internals.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from .._max_cost import status as spending_status
from ..agents.progress import BOARD
from ..models.spending import usd

MODES = ("auto", "tty", "plain", "off")
#: The xdist worker input naming the directory of snapshots.
DIRECTORY_KEY = "ifbench_live_dir"
_VIEW_NAME = "ifbench_live_status_view"
_WRITER_NAME = "ifbench_live_status_writer"
_COUNTS = ("done", "running", "runs", "steps", "tokens")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ifbench")
    group.addoption("--ifbench-live-status", dest="ifbench_live_status", choices=MODES, default="auto",
                    help="a live status line (instances, agent steps, tokens, cost, time left): auto (on a "
                         "terminal: one line redrawn in place; otherwise plain lines), tty, plain or off")
    group.addoption("--ifbench-live-status-every", dest="ifbench_live_status_every", type=float, default=60.0,
                    metavar="SECONDS", help="how often a plain status line is printed (default: 60; 0: only "
                                            "the final one)")


def _duration(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def status_line(snapshot: Mapping[str, Any], elapsed: float) -> str:
    """The line for a (summed) snapshot ``elapsed`` seconds into the run."""
    total, done = int(snapshot.get("total") or 0), int(snapshot.get("done") or 0)
    running, steps = int(snapshot.get("running") or 0), int(snapshot.get("steps") or 0)
    parts = [f"ifbench: {done}/{total} instances done"]
    if snapshot.get("runs"):
        parts.append(f"{running} agent run{'s' if running != 1 else ''} going")
        parts.append(f"{steps:,} step{'s' if steps != 1 else ''}")
    parts.append(f"{int(snapshot.get('tokens') or 0):,} tokens")
    if snapshot.get("limit"):  # --ifbench-max-cost: what every call of the run paid, against the limit
        parts.append(f"{usd(float(snapshot.get('paid') or 0.0))} of {usd(float(snapshot['limit']))} paid")
    else:
        cost = float(snapshot.get("cost") or 0.0)
        parts.append(f"${cost:.4f}" if cost else "$0")
    parts.append(_duration(elapsed))
    if 0 < done < total:
        parts.append(f"~{_duration(elapsed / done * (total - done))} left")
    return ", ".join(parts)


def add_up(snapshots: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Worker snapshots as one: ``total`` the largest (every worker collects every item), the rest summed."""
    out: dict[str, Any] = {"total": max((int(s.get("total") or 0) for s in snapshots), default=0),
                           "cost": sum(float(s.get("cost") or 0.0) for s in snapshots)}
    for key in _COUNTS:
        out[key] = sum(int(s.get(key) or 0) for s in snapshots)
    return out


def paid(record: Mapping[str, Any]) -> tuple[int, float]:
    """The prompt + completion tokens and the cost this run paid for a record's calls: what the summary's
    ``tokens in/out`` and ``cost`` add up (``cached_*`` tokens and ``cached_cost`` are the cache's)."""
    tokens = record.get("tokens") or {}
    return int(tokens.get("prompt") or 0) + int(tokens.get("completion") or 0), float(record.get("cost") or 0.0)


def counted_by_board(record: Mapping[str, Any]) -> tuple[int, float]:
    """The tokens and cost the board counted for an agent instance's steps while it ran.

    The board counts the steps this run paid for (a step served from the cache adds no tokens or cost)
    and sees no judge call. A record's ``tokens`` and ``cost`` hold every paid call of the instance (every
    sample's steps and judge calls), and ``judge_calls`` lists every judge call, paid or cached (as a
    text instance's record does): the board's part is what was paid less the paid judge calls. Nothing
    for an instance that ran no agent."""
    if record.get("protocol") != "agent" and not record.get("agent"):
        return 0, 0.0
    tokens, cost = paid(record)
    judges = [call for call in record.get("judge_calls") or () if isinstance(call, Mapping) and not call.get("cached")]
    judged = sum(int(call.get("prompt_tokens") or 0) + int(call.get("completion_tokens") or 0) for call in judges)
    return tokens - judged, cost - sum(float(call.get("cost") or 0.0) for call in judges)


def settled(record: Mapping[str, Any]) -> tuple[int, float]:
    """What a finished instance adds to the line's tokens and cost: what it paid, less what the board
    already counted for it (the line then says what the records, and the summary, say)."""
    (paid_tokens, paid_cost), (board_tokens, board_cost) = paid(record), counted_by_board(record)
    return paid_tokens - board_tokens, paid_cost - board_cost


class _Items:
    """This process's ifbench items: how many were collected and how many have finished (counted where
    they run: in one process, or on each xdist worker; the controller runs none)."""

    def __init__(self) -> None:
        self.total = 0
        self.done = 0
        #: What the finished instances' records settled on top of the board's figures (:func:`settled`).
        self.tokens = 0
        self.cost = 0.0

    def snapshot(self) -> dict[str, Any]:
        board = BOARD.snapshot()
        return {"total": self.total, "done": self.done, **board, "tokens": board["tokens"] + self.tokens,
                "cost": round(board["cost"] + self.cost, 8)}

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: the core has put the record on the report
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Generator[None, Any, Any]:
        report = yield
        record = report.__dict__.get("ifbench_record")
        if isinstance(record, dict):
            tokens, cost = settled(record)
            self.tokens += tokens
            self.cost += cost
        return report

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from .._collect import InstanceItem

        self.total = sum(isinstance(item, InstanceItem) for item in session.items)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, Any, Any]:
        from .._collect import InstanceItem

        try:
            return (yield)
        finally:
            if isinstance(item, InstanceItem):
                self.done += 1


class _Writer(_Items):
    """An xdist worker's side: its snapshot, written to ``<directory>/<worker id>.json`` when it changes."""

    def __init__(self, directory: Path, worker: str) -> None:
        super().__init__()
        self.path = directory / f"{worker}.json"
        self._stop = threading.Event()
        self._last: dict[str, Any] | None = None
        self._thread = threading.Thread(target=self._run, name="ifbench-live-status", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.write()

    def write(self) -> None:
        snapshot = self.snapshot()
        if snapshot == self._last:
            return
        temporary = self.path.with_suffix(f".{os.getpid()}.tmp")
        with contextlib.suppress(OSError):
            temporary.write_text(json.dumps(snapshot), encoding="utf-8")
            os.replace(temporary, self.path)
            self._last = snapshot

    def pytest_sessionfinish(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.write()


class _View(_Items):
    """The controller's (or a lone process's) side: gathers the snapshots and shows the line."""

    def __init__(self, config: pytest.Config) -> None:
        super().__init__()
        self.config = config
        self.mode = "off"  # decided when the run starts (the terminal reporter is there by then)
        self.every = float(config.getoption("ifbench_live_status_every") or 0.0)
        self.directory: Path | None = None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._drawn = 0
        self._shown = ""
        #: The line's own duplicate of the terminal's descriptor (:meth:`start`).
        self._out: int | None = None
        self._began = time.monotonic()
        self._last_plain = self._began
        #: Whether an item has started (the line is shown from then on).
        self.items_started = False

    # -- where the numbers come from ------------------------------------------------------------------
    def gather(self) -> dict[str, Any]:
        if self.directory is None:
            snapshot = self.snapshot()
        else:
            snapshots = []
            for path in sorted(self.directory.glob("*.json")):
                with contextlib.suppress(OSError, ValueError):
                    snapshots.append(json.loads(path.read_text(encoding="utf-8")))
            snapshot = add_up(snapshots)
        spent = spending_status(self.config)  # the run's ledger, every worker's calls in it
        if spent is not None:
            snapshot.update(limit=spent.limit, paid=spent.spent)
        return snapshot

    def line(self) -> str | None:
        """The status now; None in a session without ifbench items (agent runs a plain test makes are not shown)."""
        snapshot = self.gather()
        if not snapshot["total"]:
            return None
        return status_line(snapshot, time.monotonic() - self._began)

    # -- drawing --------------------------------------------------------------------------------------
    @property
    def _tw(self) -> Any:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        return None if reporter is None else reporter._tw

    def _emit(self, text: str) -> None:
        """``text`` on the terminal through the line's own descriptor, whatever the capture is doing."""
        data = text.encode(getattr(self._tw._file, "encoding", None) or "utf-8", "replace")
        while data and self._out is not None:
            data = data[os.write(self._out, data):]

    def _draw(self, line: str) -> None:
        """TTY: the line after whatever pytest left on the current line (cut to fit), cursor after it."""
        tw = self._tw
        room = tw.fullwidth - tw.width_of_current_line - 3
        if self._drawn or room < 24:
            return
        text = ("  " + line)[:room]
        self._emit(text)
        self._drawn, self._shown = len(text), line

    def _erase(self) -> None:
        """TTY: back to where pytest left the cursor, the line's rest cleared."""
        if not self._drawn:
            return
        self._emit(f"\x1b[{self._drawn}D\x1b[K")
        self._drawn = 0

    def _plain(self, line: str) -> None:
        tw = self._tw
        self._emit(("\n" if tw.width_of_current_line else "") + line + "\n")
        tw._current_line = ""  # pytest's writer goes on at the start of a line, as after its own tw.line()

    def _flush_pytest(self) -> None:
        """What pytest's writer holds, onto the terminal (main thread, in a writing hook: not captured)."""
        tw = self._tw
        if self._out is not None and tw is not None:
            with contextlib.suppress(OSError, ValueError):
                tw._file.flush()

    def _run(self) -> None:
        """Redraw (TTY) or print (plain) from a thread, only when the line changed."""
        while not self._stop.wait(0.5 if self.mode == "tty" else 1.0):
            if not self.items_started or self._tw is None:  # xdist's own lines come before the first item
                continue
            if self.mode != "tty" and (self.every <= 0 or time.monotonic() - self._last_plain < self.every):
                continue
            line = self.line()
            if line is None or (self._drawn and line == self._shown):
                continue
            with self._lock:
                if self.mode == "tty":
                    self._erase()
                    self._draw(line)
                else:
                    self._last_plain = time.monotonic()
                    self._plain(line)

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """No status on screen while pytest writes (held on the main thread around its writing hooks)."""
        with self._lock:
            self._flush_pytest()
            self._erase()
            try:
                yield
            finally:
                self._flush_pytest()

    def start(self) -> None:
        """Called before the first item, with the capture lifted: fd 1 is the terminal (or the log) here."""
        self.mode = _mode(self.config) if self._tw is not None else "off"
        self._began = self._last_plain = time.monotonic()
        if self.mode == "off":
            return
        try:
            self._out = os.dup(self._tw._file.fileno())
        except (AttributeError, OSError, ValueError):  # no descriptor (an in-process pytester run): the final line only
            return
        self._thread = threading.Thread(target=self._run, name="ifbench-live-status", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
        with self._lock:
            self._flush_pytest()
            self._erase()
            if self._out is not None:
                os.close(self._out)
                self._out = None

    # -- hooks ----------------------------------------------------------------------------------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist, on the controller: hand each worker the directory its snapshots go to."""
        if self.directory is None:
            self.directory = Path(tempfile.mkdtemp(prefix="ifbench-live-"))
        node.workerinput[DIRECTORY_KEY] = str(self.directory)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtestloop(self) -> Iterator[None]:
        self.start()
        try:
            yield
        finally:
            self.stop()

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        snapshot = self.gather()
        if self.mode != "off" and self.items_started and snapshot["total"]:  # else nothing ran: nothing shown
            terminalreporter.write_line(status_line(snapshot, time.monotonic() - self._began))

    def pytest_unconfigure(self) -> None:
        self._stop.set()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)


def _quiet_around(name: str, *, optional: bool = False) -> Any:
    """A main-thread hook wrapper that keeps the status off the screen while the hook writes
    (``optional``: a hook only xdist defines)."""

    def wrapper(self: _View, *args: Any, **kwargs: Any) -> Iterator[None]:
        with self.quiet():
            yield

    wrapper.__name__ = name
    return pytest.hookimpl(hookwrapper=True, tryfirst=True, optionalhook=optional)(wrapper)


#: The hooks in which pytest's terminal reporter (and xdist's) writes during the run.
WRITING_HOOKS = ("pytest_runtest_logstart", "pytest_runtest_logreport", "pytest_runtest_logfinish",
                 "pytest_collectreport", "pytest_internalerror",
                 "pytest_keyboard_interrupt", "pytest_sessionfinish")
for _hook in WRITING_HOOKS:
    if _hook == "pytest_runtest_logstart":  # below: it notes that items started, too
        continue
    setattr(_View, _hook, _quiet_around(_hook))
_XDIST_HOOKS = ("pytest_testnodedown", "pytest_testnodeready", "pytest_xdist_node_collection_finished")
for _hook in _XDIST_HOOKS:
    setattr(_View, _hook, _quiet_around(_hook, optional=True))


def _logstart(self: _View) -> Iterator[None]:
    with self.quiet():
        self.items_started = True
        yield


_View.pytest_runtest_logstart = pytest.hookimpl(hookwrapper=True, tryfirst=True)(_logstart)  # type: ignore[method-assign]


def _mode(config: pytest.Config) -> str:
    mode = config.getoption("ifbench_live_status") or "auto"
    if mode != "auto":
        return mode
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    tty = reporter is not None and getattr(reporter, "isatty", False) and hasattr(reporter._tw, "_file")
    live_logging = config.getoption("log_cli_level", None) is not None or config.getini("log_cli")
    return "tty" if tty and not live_logging else "plain"


def pytest_configure(config: pytest.Config) -> None:
    BOARD.reset()
    worker_input = getattr(config, "workerinput", None)
    if worker_input is not None:
        if worker_input.get(DIRECTORY_KEY):
            writer = _Writer(Path(worker_input[DIRECTORY_KEY]), str(worker_input.get("workerid") or os.getpid()))
            config.pluginmanager.register(writer, _WRITER_NAME)
        return
    if (config.getoption("ifbench_live_status") or "auto") != "off":
        config.pluginmanager.register(_View(config), _VIEW_NAME)
