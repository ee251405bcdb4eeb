"""Batched ruff runs: one ruff process per response for every ruff-backed check.

Each check's selectors are expanded to exact rule codes by ruff itself
(``--show-settings``, cached per process), so a combined run enables exactly
the rules each check would enable alone, and violations are mapped back by
exact code (``PT`` never receives ``PTH`` violations). Checks share a process
unless that could change a verdict: a setting (``line-length``, a pydocstyle
convention...) that influences rules another check enables, the same setting
with different values, or rules ruff treats as incompatible (D203/D211,
D212/D213). A group that fails is retried check by check, so a broken check
errors alone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .._registry import RuffSetting
from .rules_store import RuleStore

#: Rules ruff refuses to enable together (it silently drops one).
INCOMPATIBLE = (("D203", "D211"), ("D212", "D213"))

#: Which rules a setting can influence, by key prefix; unknown keys influence everything.
_SCOPES: tuple[tuple[str, tuple[str, ...]], ...] = (
    # SIM108 is only reported when the rewrite fits the line length.
    ("line-length", ("E501", "I", "SIM108")),
    ("lint.pycodestyle.max-line-length", ("E501",)),
    ("lint.pycodestyle.max-doc-length", ("W505",)),
    ("lint.pycodestyle.", ("E", "W")),
    ("lint.pydocstyle.", ("D",)),
    ("lint.pylint.max-args", ("PLR0913",)),
    ("lint.pylint.max-positional-args", ("PLR0917",)),
    ("lint.pylint.max-branches", ("PLR0912",)),
    ("lint.pylint.max-returns", ("PLR0911",)),
    ("lint.pylint.max-statements", ("PLR0915",)),
    ("lint.pylint.max-locals", ("PLR0914",)),
    ("lint.pylint.max-bool-expr", ("PLR0916",)),
    ("lint.pylint.max-nested-blocks", ("PLR1702",)),
    ("lint.pylint.max-public-methods", ("PLR0904",)),
    ("lint.pylint.allow-magic-value-types", ("PLR2004",)),
    ("lint.pylint.", ("PL",)),
    ("lint.mccabe.max-complexity", ("C901",)),
    ("lint.mccabe.", ("C90",)),
    ("lint.flake8-quotes.", ("Q",)),
    ("lint.isort.", ("I",)),
    ("lint.pep8-naming.", ("N",)),
    ("lint.flake8-annotations.", ("ANN",)),
    ("lint.flake8-tidy-imports.", ("TID",)),
    ("lint.flake8-builtins.", ("A",)),
    ("lint.flake8-bugbear.", ("B",)),
    ("lint.pyupgrade.", ("UP",)),
    ("lint.flake8-comprehensions.", ("C4",)),
    ("lint.flake8-errmsg.", ("EM",)),
)


def setting_scope(key: str) -> tuple[str, ...]:
    for prefix, scope in _SCOPES:
        if key == prefix or key.startswith(prefix):
            return scope
    return ("ALL",)


def ruff_setting(key: str, value: Any) -> RuffSetting:
    """A setting with the scope ruff gives that key."""
    return RuffSetting(key=key, value=value, scope=setting_scope(key))


class RuffError(RuntimeError):
    pass


_BINARY: list[str] = []
_BINARY_LOCK = threading.Lock()

#: Settings that change which rules are enabled (the rest only change how rules judge).
_ENABLING_KEYS = ("lint.pydocstyle.convention", "preview", "lint.preview", "lint.explicit-preview-rules")


def ruff_binary() -> str:
    """The ruff executable (resolved once; ruff's finder is not safe to call from threads)."""
    with _BINARY_LOCK:
        if not _BINARY:
            _BINARY.append(_find_ruff())
        return _BINARY[0]


def _find_ruff() -> str:
    """ruff's own finder, else the ``ruff`` beside this interpreter or on PATH.

    The finder reads ``sysconfig``, whose lazily built variables another thread (a background
    import) may be building at that moment -- it then fails with a TypeError, not a verdict.
    """
    try:
        from ruff.__main__ import find_ruff_bin

        return str(find_ruff_bin())
    except (ImportError, FileNotFoundError, TypeError):
        pass
    import shutil

    beside = os.path.join(os.path.dirname(sys.executable), "ruff")
    found = beside if os.access(beside, os.X_OK) else shutil.which("ruff")
    if found is None:
        raise RuffError("the ruff executable was not found (pip install ruff)")
    return found


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value))


def _config_args(settings: Sequence[tuple[str, Any]]) -> list[str]:
    out: list[str] = []
    for key, value in settings:
        out += ["--config", f"{key} = {_toml(value)}"]
    return out


@lru_cache(maxsize=4096)
def enabled_codes(selectors: tuple[str, ...], settings: tuple[tuple[str, Any], ...] = ()) -> frozenset[str]:
    """The exact rule codes ruff enables for these selectors and settings (kept on disk per ruff
    binary, :mod:`._ruff_rules_store`)."""
    store = _rule_store()
    known = store.get((selectors, settings))
    if known is not None:
        return known
    codes = _ask_ruff_for_codes(selectors, settings)
    store.put((selectors, settings), codes)
    return codes


@lru_cache(maxsize=1)
def _rule_store() -> RuleStore:
    return RuleStore(ruff_binary())


def _ask_ruff_for_codes(selectors: tuple[str, ...], settings: tuple[tuple[str, Any], ...]) -> frozenset[str]:
    proc = subprocess.run(
        [ruff_binary(), "check", "--isolated", "--select", ",".join(selectors), *_config_args(settings),
         "--show-settings", os.devnull],
        capture_output=True, text=True, timeout=60,
    )
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or ["unknown error"])
        raise RuffError("; ".join(line.strip() for line in reason if line.strip())[:400])
    codes = set()
    inside = False
    for line in proc.stdout.splitlines():
        if line.startswith("linter.rules.enabled"):
            inside = True
            continue
        if inside:
            if line.startswith("]"):
                break
            if line.rstrip().endswith("),"):
                codes.add(line.rstrip()[:-2].rsplit("(", 1)[1])
    return frozenset(codes)


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@dataclass(frozen=True, slots=True, kw_only=True)
class RuffCheck:
    key: str
    select: tuple[str, ...]
    settings: tuple[RuffSetting, ...] = ()
    _codes: list[frozenset[str]] = field(default_factory=list, compare=False, repr=False)

    @property
    def setting_pairs(self) -> tuple[tuple[str, Any], ...]:
        return tuple((s.key, _hashable(s.value)) for s in self.settings)

    @property
    def codes(self) -> frozenset[str]:
        """Rule codes this check enables (raises RuffError for bad selectors/settings)."""
        if not self._codes:
            self._codes.append(enabled_codes(*self.expansion))
        return self._codes[0]

    @property
    def expansion(self) -> tuple[tuple[str, ...], tuple[tuple[str, Any], ...]]:
        """The arguments of :func:`enabled_codes` for this check.

        Only enabling settings go into the (cached) expansion: one ruff call per
        distinct convention, not per distinct line length.
        """
        return self.select, tuple(p for p in self.setting_pairs if p[0] in _ENABLING_KEYS)


@dataclass(frozen=True, slots=True, kw_only=True)
class Violation:
    code: str | None
    message: str
    row: int
    column: int
    line: str

    def render(self) -> str:
        code = self.code or "syntax-error"
        shown = self.line if len(self.line) <= 120 else self.line[:117] + "..."
        return f"line {self.row}: {code} {self.message}\n    {shown}"


def _influences(setting: RuffSetting, codes: frozenset[str]) -> bool:
    return bool(enabled_codes(setting.scope) & codes)


def _compatible(group: list[RuffCheck], check: RuffCheck) -> bool:
    for member in group:
        for mine in check.settings:
            for theirs in member.settings:
                if mine.key == theirs.key and mine.value != theirs.value:
                    return False
        for a, b in ((check, member), (member, check)):
            shared = {(s.key, _hashable(s.value)) for s in b.settings}
            for setting in a.settings:
                if (setting.key, _hashable(setting.value)) not in shared and _influences(setting, b.codes):
                    return False
    union = check.codes.union(*(m.codes for m in group))
    return not any(x in union and y in union for x, y in INCOMPATIBLE)


def plan_runs(checks: Sequence[RuffCheck]) -> list[list[RuffCheck]]:
    """Greedy grouping of checks into as few ruff processes as is safe."""
    groups: list[list[RuffCheck]] = []
    for check in checks:
        for group in groups:
            if _compatible(group, check):
                group.append(check)
                break
        else:
            groups.append([check])
    return groups


def _merged(checks: Sequence[RuffCheck]) -> tuple[list[str], dict[str, Any]]:
    """The exact codes and the settings one ruff run of a (compatible) group uses."""
    codes = sorted(set().union(*(c.codes for c in checks)))
    settings: dict[str, Any] = {}
    for check in checks:
        for key, value in check.setting_pairs:
            settings.setdefault(key, value)
    return codes, settings


def ruff_command(checks: Sequence[RuffCheck]) -> list[str]:
    codes, settings = _merged(checks)
    return [
        ruff_binary(), "check", "--isolated", "--no-cache", "--ignore-noqa", "--no-fix",
        "--output-format", "json", "--select", ",".join(codes), "--stdin-filename", CANDIDATE,
        *_config_args(list(settings.items())), "-",
    ]


def run_group(code: str, checks: Sequence[RuffCheck], *, timeout: float = 60.0) -> list[Violation]:
    proc = subprocess.run(ruff_command(checks), input=code, capture_output=True, text=True, timeout=timeout)
    if proc.returncode not in (0, 1):
        raise RuffError(f"ruff exited {proc.returncode}: {proc.stderr.strip()[:500]}")
    lines = code.splitlines()
    return [_violation(item, lines) for item in json.loads(proc.stdout or "[]")]


def _violation(item: dict[str, Any], lines: list[str]) -> Violation:
    """One entry of ruff's JSON output; ``lines`` are the checked code's lines."""
    row = item.get("location", {}).get("row", 0) or 0
    rule = item.get("code")
    if rule == "invalid-syntax" or item.get("name") == "invalid-syntax":
        rule = None
    return Violation(
        code=rule, message=item.get("message", ""), row=row,
        column=item.get("location", {}).get("column", 0) or 0,
        line=lines[row - 1] if 0 < row <= len(lines) else "",
    )


def _runnable(checks: Sequence[RuffCheck], result: dict[str, list[Violation] | RuffError]) -> list[RuffCheck]:
    """The checks whose selectors expand; the others get their error in ``result`` (alone)."""
    runnable = []
    for check in checks:
        try:
            _ = check.codes
            runnable.append(check)
        except RuffError as exc:
            result[check.key] = exc
    return runnable


def _assign(result: dict[str, list[Violation] | RuffError], group: Sequence[RuffCheck],
            violations: list[Violation]) -> None:
    """Each check of a group gets the violations of its own codes, plus any syntax error."""
    syntax = [v for v in violations if v.code is None]
    for check in group:
        result[check.key] = syntax + [v for v in violations if v.code is not None and v.code in check.codes]


def check_code(code: str, checks: Sequence[RuffCheck]) -> dict[str, list[Violation] | RuffError]:
    """Violations per check key, or the error for a check that could not run.

    Code that does not parse fails every ruff check: an instruction about
    style cannot be satisfied by code that is not Python.
    """
    result: dict[str, list[Violation] | RuffError] = {}
    for group in plan_runs(_runnable(checks, result)):
        try:
            violations = run_group(code, group)
        except (RuffError, OSError, ValueError, subprocess.TimeoutExpired) as exc:
            if len(group) == 1:
                result[group[0].key] = RuffError(str(exc))
                continue
            for check in group:  # retry alone so the broken check errors by itself
                result.update(check_code(code, [check]))
            continue
        _assign(result, group, violations)
    return result


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
#: The file name a reply on stdin is checked under.
CANDIDATE = "candidate.py"
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
