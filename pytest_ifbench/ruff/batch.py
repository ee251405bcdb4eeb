"""Ruff-backed checks of many replies in one ruff process: :func:`check_many` and its batcher.

:func:`check_many` is :func:`.check.check_code` for many replies at once
(one temporary tree, one ``ruff check`` over all files).

A :class:`RuffBatcher` collects replies whose ruff-backed checks will be
evaluated soon: a suite queues an instance's replies when its background
generation finishes, ``ifbench verify`` queues every line of its input. The
first time :func:`_verify.evaluate` asks for a queued reply, every reply
queued so far (up to ``max_replies``) is checked in one ruff process, and the
others' results wait, keyed by their content, for their own ``evaluate``.
Nothing waits for a time window: a reply that arrives last is checked as soon
as its item asks, with whatever else is queued by then.

Results are keyed by the extracted code and the exact checks, so an
``evaluate`` call that asks for something not queued (another turn, a
protocol's own early evaluation) simply runs ruff itself: batching can only
make verdicts faster, never different.
"""

from __future__ import annotations

import contextvars
import json
import os
import re
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .._registry import Registry
from .._text import extract_code
from .._types import CheckSpec
from .check import (
    RuffCheck,
    RuffError,
    Violation,
    _assign,
    _merged,
    _runnable,
    _toml,
    _violation,
    check_code,
    enabled_codes,
    plan_runs,
    ruff_binary,
)

#: The results of one reply's ruff checks: violations (or the error) per check key.
RuffResults = dict[str, "list[Violation] | RuffError"]

_ACTIVE: contextvars.ContextVar[RuffBatcher | None] = contextvars.ContextVar("ifbench_ruff_batcher", default=None)


def ruff_checks(checks: Sequence[CheckSpec], registry: Registry) -> list[tuple[CheckSpec, RuffCheck]]:
    """The ruff-backed checks among ``checks``, each with the :class:`RuffCheck` it runs as."""
    out = []
    for check in checks:
        verifier = registry.get(check.verifier)
        if verifier.kind == "ruff" and verifier.ruff is not None:
            out.append((check, RuffCheck(key=check.id, select=verifier.ruff.select(check.params),
                                         settings=verifier.ruff.settings(check.params))))
    return out


def _key(code: str, checks: Sequence[RuffCheck]) -> tuple[str, tuple[tuple[str, tuple[str, ...], str], ...]]:
    return code, tuple((check.key, check.select, repr(check.setting_pairs)) for check in checks)


class RuffBatcher:
    """Queues replies and checks them in batches, one ruff process per batch.

    ``queue`` is cheap and may be called from any thread (the generation
    thread calls it); ``results`` runs the batch in the calling thread.
    """

    def __init__(self, registry: Registry, *, max_replies: int = 1000) -> None:
        self.registry = registry
        self.max_replies = max_replies
        self._queued: deque[tuple[Sequence[CheckSpec], str]] = deque()
        self._ready: dict[tuple, deque[tuple[RuffResults, float]]] = {}
        self._lock = threading.Lock()
        self._run_lock = threading.Lock()
        #: Batches run and replies checked (for tests and benchmarks).
        self.batches = 0
        self.replies = 0

    def queue(self, checks: Sequence[CheckSpec], response: str) -> None:
        """Check ``response``'s ruff-backed ``checks`` in the next batch (other checks are ignored)."""
        try:
            wanted = any(self.registry.get(check.verifier).kind == "ruff" for check in checks)
        except Exception:  # noqa: BLE001 - never fail the caller (a generation job): evaluate reports it
            return
        if wanted:
            with self._lock:
                self._queued.append((checks, response))

    def results(self, code: str, checks: Sequence[RuffCheck]) -> tuple[RuffResults, float] | None:
        """The results for ``checks`` on ``code`` and the seconds per check they took, or None when
        nothing queued matches (the caller runs ruff itself). Each queued reply is handed out once."""
        key = _key(code, checks)
        while True:
            with self._lock:
                ready = self._ready.get(key)
                if ready:
                    found = ready.popleft()
                    if not ready:
                        del self._ready[key]
                    return found
                if not self._queued:
                    return None
            self._run_batch()

    def _run_batch(self) -> None:
        with self._run_lock:
            with self._lock:
                batch = [self._queued.popleft() for _ in range(min(self.max_replies, len(self._queued)))]
            if not batch:
                return
            items = []
            for checks, response in batch:
                found = ruff_checks(checks, self.registry)
                if found:
                    items.append((extract_code(response), [rc for _, rc in found]))
            start = time.perf_counter()
            try:
                results = check_many(items)
            except Exception:  # noqa: BLE001 - each reply then runs ruff itself, which reports per check
                return
            share = (time.perf_counter() - start) / max(1, sum(len(rcs) for _, rcs in items))
            with self._lock:
                for (code, rcs), result in zip(items, results):
                    self._ready.setdefault(_key(code, rcs), deque()).append((result, share))
                self.batches += 1
                self.replies += len(items)

    @property
    def unclaimed(self) -> int:
        """Replies queued or checked whose results no ``evaluate`` has asked for yet."""
        with self._lock:
            return len(self._queued) + sum(len(ready) for ready in self._ready.values())

    @contextmanager
    def active(self) -> Iterator[RuffBatcher]:
        """Make ``evaluate`` calls in this context (that pass no batcher) use this one."""
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)


def active_batcher() -> RuffBatcher | None:
    """The batcher of the innermost :meth:`RuffBatcher.active` context, if any."""
    return _ACTIVE.get()


@contextmanager
def batch_verify_cases(registry: Registry, lines: Iterable[str | bytes]) -> Iterator[RuffBatcher]:
    """Within this context, ``verify_one`` reads batched ruff results for the ruff-backed cases
    among ``ifbench verify`` input lines (each parsed and validated as ``verify_one`` will be).

    Lines that are not a well-formed ruff-backed case are skipped here: their
    own verification reports them exactly as before.
    """
    import json

    batcher = RuffBatcher(registry)
    for line in lines:
        try:
            case = json.loads(line)
            verifier = registry.get(case["verifier"])
            if verifier.kind != "ruff" or not isinstance(case["response"], str):
                continue
            params = verifier.validate(verifier.validate(case.get("params")))
        except Exception:  # noqa: BLE001 - anything wrong is reported by the line's own verification
            continue
        batcher.queue([CheckSpec(id="case", verifier=verifier.id, params=params)], case["response"])
    with batcher.active():
        yield batcher


# --------------------------------------------------------------------------- many replies at once

#: Setting names (last key segment) whose meaning could differ between ``--config`` overrides on
#: the command line and a ``ruff.toml`` (rule selection layers, paths resolved against the file,
#: other configuration files): groups that set one are checked on stdin, as :func:`check_code` does.
_STDIN_ONLY = frozenset({
    "select", "extend-select", "ignore", "extend-ignore", "per-file-ignores", "extend-per-file-ignores",
    "explicit-preview-rules", "fixable", "unfixable", "extend-fixable", "extend-unfixable", "extend",
    "include", "extend-include", "exclude", "extend-exclude", "force-exclude", "respect-gitignore", "src",
    "namespace-packages", "cache-dir", "required-version", "builtins", "typing-modules",
})
#: Rules whose verdict could change with the checked file's name, folder or mode (on stdin a reply
#: is ``candidate.py`` in the working directory, in the batch tree ``c<k>/candidate_<n>.py`` on
#: disk): groups with one run on stdin. N999 and A005 also read the module name, but both names
#: are valid identifiers and shadow no standard module, so their verdicts agree.
_PATH_RULES = frozenset({"EXE001", "EXE002", "INP001", "PLW0406"})
#: Most files per ruff process of :func:`check_many` (keeps the argument list short).
FILES_PER_PROCESS = 2000
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml_key(key: str) -> str:
    return ".".join(part if _BARE_KEY.fullmatch(part) else json.dumps(part) for part in key.split("."))


def ruff_config(checks: Sequence[RuffCheck]) -> str:
    """A complete ``ruff.toml`` that makes ruff run ``checks`` exactly as :func:`ruff_command` does.

    Complete means ruff needs nothing else: the rules are listed, every setting
    the group needs is given, everything else is ruff's default, and ruff does
    not merge a file with the configuration of its parent folders.
    """
    codes, settings = _merged(checks)
    lines = [f"lint.select = {_toml(codes)}"]
    lines += [f"{_toml_key(key)} = {_toml(value)}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def _file_safe(group: Sequence[RuffCheck]) -> bool:
    if any(s.key.rsplit(".", 1)[-1] in _STDIN_ONLY for check in group for s in check.settings):
        return False
    return not any(check.codes & _PATH_RULES for check in group)


@dataclass(slots=True, kw_only=True)
class _Unit:
    """One reply under one shared group of checks: one file in the batch tree."""

    item: int
    code: str
    #: The reply's own checks that the shared group runs.
    checks: list[RuffCheck]
    folder: str
    path: str = ""
    violations: list[Violation] | None = None


def _signature(check: RuffCheck) -> tuple[tuple[str, ...], str]:
    """What makes two checks run identically (their keys aside)."""
    return check.select, repr(check.setting_pairs)


def check_many(items: Sequence[tuple[str, Sequence[RuffCheck]]], *,
               timeout: float = 60.0) -> list[dict[str, list[Violation] | RuffError]]:
    """:func:`check_code` for many (code, checks) items, in one ruff process for all of them.

    The distinct checks of all items are grouped as :func:`plan_runs` groups
    one reply's checks (a group enables the union of its rules, which cannot
    change any member's verdict). Each group gets a folder ``c<g>`` of the
    temporary tree with a complete ``ruff.toml``, and each reply with a check
    in that group a file ``c<g>/candidate_<n>.py`` there; one ``ruff check
    --output-format json`` over all the files (one per
    :data:`FILES_PER_PROCESS`) resolves each file's nearest configuration, and
    violations are mapped back by file name, then by exact code to the
    reply's checks. Results equal :func:`check_code`'s for every item: a
    process that fails is split in halves and rerun; a file that still fails
    alone, a reply that cannot be written as UTF-8 and checks with
    :data:`_STDIN_ONLY` settings or :data:`_PATH_RULES` go through
    :func:`check_code` itself, with its errors and check-by-check retry.
    """
    results: list[dict[str, list[Violation] | RuffError]] = [{} for _ in items]
    _expand_concurrently([check for _, checks in items for check in checks])
    runnable = [_runnable(checks, result) for (_, checks), result in zip(items, results)]
    shared: dict[tuple[tuple[str, ...], str], RuffCheck] = {}
    for checks in runnable:
        for check in checks:
            if _file_safe([check]):
                shared.setdefault(_signature(check), check)
    groups = plan_runs(list(shared.values()))
    group_of = {_signature(check): number for number, group in enumerate(groups) for check in group}
    units: list[_Unit] = []
    alone: list[tuple[int, list[RuffCheck]]] = []
    for index, ((code, _), checks) in enumerate(zip(items, runnable)):
        by_group: dict[int, list[RuffCheck]] = {}
        for check in checks:
            number = group_of.get(_signature(check))
            if number is None:
                alone.append((index, [check]))
            else:
                by_group.setdefault(number, []).append(check)
        units += [_Unit(item=index, code=code, checks=group, folder=f"c{number}") for number, group in by_group.items()]
    if units:
        configs = {f"c{number}": group for number, group in enumerate(groups)}
        with tempfile.TemporaryDirectory(prefix="ifbench-ruff-", dir=_scratch_dir()) as root:
            written = _write_tree(root, units, configs)
            for start in range(0, len(written), FILES_PER_PROCESS):
                _run_files(root, written[start:start + FILES_PER_PROCESS], timeout)
    for unit in units:
        if unit.violations is None:
            results[unit.item].update(check_code(unit.code, unit.checks))
        else:
            _assign(results[unit.item], unit.checks, unit.violations)
    for index, checks in alone:
        results[index].update(check_code(items[index][0], checks))
    return results


#: Expansions :func:`_expand_concurrently` has asked for (each answered from the cache since).
_PREFETCHED: set[tuple[Any, ...]] = set()


def _expand_concurrently(checks: Sequence[RuffCheck]) -> None:
    """Fill :func:`enabled_codes`' cache for these checks and their settings' scopes, one ruff
    process per distinct expansion, several at a time (a cold batch needs dozens)."""
    wanted: dict[tuple[Any, ...], None] = {}
    for check in checks:
        wanted[check.expansion] = None
        for setting in check.settings:
            wanted[(setting.scope, ())] = None
    todo = [key for key in wanted if _can_hash(key) and key not in _PREFETCHED]
    if len(todo) < 2:
        return

    def expand(key: tuple[Any, ...]) -> None:
        try:
            enabled_codes(*key)
            _PREFETCHED.add(key)
        except RuffError:
            pass  # raised again, for its check alone, when the check's codes are read

    ruff_binary()  # resolve once, before the threads
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1, len(todo))) as pool:
        list(pool.map(expand, todo))


def _can_hash(key: tuple[Any, ...]) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


def _scratch_dir() -> str | None:
    """Where the temporary tree goes: memory (``/dev/shm``) when it is there and writable -- on a
    virtual disk 400 small files took 0.1-1 s to write, in memory 5 ms -- else the default."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK) else None


def _write_tree(root: str, units: list[_Unit], configs: dict[str, list[RuffCheck]]) -> list[_Unit]:
    """Write each group's folder and ``ruff.toml`` and each unit's file; the units written.

    A file per reply, not a folder: on some file systems a folder costs a
    millisecond to make and another to remove, ten times a small file.
    """
    for folder, group in configs.items():
        os.mkdir(os.path.join(root, folder))
        with open(os.path.join(root, folder, "ruff.toml"), "w", encoding="utf-8") as handle:
            handle.write(ruff_config(group))
    written = []
    for number, unit in enumerate(units):
        try:
            data = unit.code.encode("utf-8")
        except UnicodeEncodeError:  # e.g. lone surrogates: check_code reports it as today
            continue
        unit.path = os.path.join(unit.folder, f"candidate_{number}.py")
        with open(os.path.join(root, unit.path), "wb") as handle:
            handle.write(data)
        written.append(unit)
    return written


def _run_files(root: str, units: list[_Unit], timeout: float) -> None:
    """One ruff process over these units' files; on failure, halves until single units fail alone."""
    command = [ruff_binary(), "check", "--no-cache", "--ignore-noqa", "--no-fix", "--output-format", "json",
               *(unit.path for unit in units)]
    try:
        proc = subprocess.run(command, cwd=root, capture_output=True, timeout=timeout + 0.05 * len(units))
        if proc.returncode not in (0, 1):
            raise RuffError(f"ruff exited {proc.returncode}")
        found = json.loads(proc.stdout or b"[]")
    except (RuffError, OSError, ValueError, subprocess.TimeoutExpired):
        if len(units) > 1:
            half = len(units) // 2
            _run_files(root, units[:half], timeout)
            _run_files(root, units[half:], timeout)
        return  # a single failing unit keeps violations=None: check_code runs it
    by_name = {os.path.basename(unit.path): unit for unit in units}
    lines = {id(unit): unit.code.splitlines() for unit in units}
    collected: dict[int, list[Violation]] = {id(unit): [] for unit in units}
    for entry in found:
        unit = by_name.get(os.path.basename(entry.get("filename", "")))
        if unit is None:  # a file ruff was not given: trust none of this output (check_code runs them)
            return
        collected[id(unit)].append(_violation(entry, lines[id(unit)]))
    for unit in units:
        unit.violations = collected[id(unit)]
