"""Batched ruff runs: one ruff process per response for every ruff-backed check.

Each check's selectors are expanded to exact rule codes by ruff itself
(``--show-settings``, cached per process), so a combined run enables exactly
the rules each check would enable alone, and violations are mapped back by
exact code (``PT`` never receives ``PTH`` violations). Checks share a process
unless that could change a verdict: a setting (``line-length``, a pydocstyle
convention...) that influences rules another check enables, the same setting
with different values, or rules ruff treats as incompatible (D203/D211,
D212/D213). A group that fails is retried check by check, so a broken check
errors alone. Many replies in one process: :func:`.batch.check_many`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
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


#: The file name a reply on stdin is checked under.
CANDIDATE = "candidate.py"


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
