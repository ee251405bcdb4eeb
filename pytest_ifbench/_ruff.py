"""Batched ruff runs: one ruff process per response for every ruff-backed check.

Checks whose settings cannot disturb each other share a process; the JSON
violations are mapped back to each check by rule-code prefix. A setting only
splits runs when it influences rules another check selects (its ``scope``).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

from ._registry import RuffSetting


@dataclass(frozen=True, slots=True, kw_only=True)
class RuffCheck:
    key: str
    select: tuple[str, ...]
    settings: tuple[RuffSetting, ...] = ()


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


class RuffError(RuntimeError):
    pass


@lru_cache(maxsize=1)
def ruff_binary() -> str:
    from ruff.__main__ import find_ruff_bin

    return str(find_ruff_bin())


def _overlaps(a: str, b: str) -> bool:
    return a.startswith(b) or b.startswith(a)


def _touches(setting: RuffSetting, selects: Sequence[str]) -> bool:
    return any(_overlaps(rule, scope) for rule in selects for scope in setting.scope)


def _compatible(group: list[RuffCheck], check: RuffCheck) -> bool:
    group_settings = {s.key: s for c in group for s in c.settings}
    group_selects = [rule for c in group for rule in c.select]
    own = {s.key: s for s in check.settings}
    for key, setting in own.items():
        other = group_settings.get(key)
        if other is not None and other.value != setting.value:
            return False
        if other is None and _touches(setting, group_selects):
            return False
    for key, setting in group_settings.items():
        if key not in own and _touches(setting, check.select):
            return False
    return True


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


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value))


def ruff_command(checks: Sequence[RuffCheck]) -> list[str]:
    selects = sorted({rule for check in checks for rule in check.select})
    cmd = [
        ruff_binary(), "check", "--isolated", "--no-cache", "--ignore-noqa", "--no-fix",
        "--output-format", "json", "--select", ",".join(selects),
        "--stdin-filename", "candidate.py",
    ]
    seen: set[str] = set()
    for check in checks:
        for setting in check.settings:
            if setting.key not in seen:
                seen.add(setting.key)
                cmd += ["--config", f"{setting.key} = {_toml(setting.value)}"]
    return cmd + ["-"]


def run_group(code: str, checks: Sequence[RuffCheck], *, timeout: float = 60.0) -> list[Violation]:
    proc = subprocess.run(
        ruff_command(checks), input=code, capture_output=True, text=True, timeout=timeout,
    )
    if proc.returncode not in (0, 1):
        raise RuffError(f"ruff exited {proc.returncode}: {proc.stderr.strip()[:500]}")
    lines = code.splitlines()
    out = []
    for item in json.loads(proc.stdout or "[]"):
        row = item.get("location", {}).get("row", 0) or 0
        out.append(Violation(
            code=item.get("code"), message=item.get("message", ""), row=row,
            column=item.get("location", {}).get("column", 0) or 0,
            line=lines[row - 1] if 0 < row <= len(lines) else "",
        ))
    return out


def check_code(code: str, checks: Sequence[RuffCheck]) -> dict[str, list[Violation]]:
    """Violations per check key. Syntax errors are reported to every check.

    Code that does not parse fails every ruff check: an instruction about
    style cannot be satisfied by code that is not Python.
    """
    result: dict[str, list[Violation]] = {check.key: [] for check in checks}
    for group in plan_runs(checks):
        violations = run_group(code, group)
        syntax = [v for v in violations if v.code is None]
        for check in group:
            result[check.key] = syntax + [
                v for v in violations
                if v.code is not None and any(v.code.startswith(rule) for rule in check.select)
            ]
    return result
