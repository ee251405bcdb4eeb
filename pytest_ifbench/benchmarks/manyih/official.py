"""ManyIH-Bench official files and the ``compat`` setting.

* ``pytest coding.json`` (or the instruction-following file) collects the official
  data as a suite: ids, privileges and expected winners preserved; losing
  instructions are unscored checks.
* ``compat`` (``paper`` | ``reference``) is first of all a parameter of every
  ``manyih.*`` verifier. A ManyIH suite may set it for all its checks with
  ``options: {compat: reference}`` (checks that set it themselves keep theirs), and
  ``--manyih-compat=MODE`` sets it for every ManyIH check of the run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...suite.detect import suite_yaml_or_none
from ...suite.format import set_check_param

COMPAT = ("paper", "reference")
_SNIFF_BYTES = 1 << 16
_cache: dict[tuple[str, int, int, str | None], Any] = {}


def suite_data(path: Path, flag: str | None) -> Any:
    """Suite data for an official ManyIH file, or a ManyIH suite with ``compat`` applied; else None.

    ``flag`` is ``--manyih-compat`` (None when not given).
    """
    if path.suffix == ".json":
        return _official(path, flag)
    if path.suffix in (".yaml", ".yml"):
        return _manyih_yaml(path, flag)
    return None


def _key(path: Path, flag: str | None) -> tuple[str, int, int, str | None] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return str(path.resolve()), stat.st_mtime_ns, stat.st_size, flag


def _official(path: Path, flag: str | None) -> Any:
    key = _key(path, flag)
    if key is None:
        return None
    if key in _cache:
        return _cache[key]
    try:
        with path.open("rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError:
        return None
    if not (b'"expected_styles"' in head or b'"suppressed_constraints"' in head or b'"hierarchy_metadata"' in head):
        return None
    import json

    from .assemble import ImportError_, official_suite, sniff

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if sniff(data) is None:
        return None
    try:
        result = official_suite(data, compat=flag or "paper")
    except ImportError_ as exc:
        from ...suite.format import SuiteError

        raise SuiteError(path, f"cannot import the official ManyIH file: {exc}") from None
    _cache[key] = result
    return result


def _manyih_yaml(path: Path, flag: str | None) -> Any:
    """Apply ``options.compat`` / ``--manyih-compat`` to a ManyIH suite's checks; None if nothing to do."""
    from ...suite.format import SuiteError

    key = _key(path, flag)
    if key is not None and key in _cache:
        return _cache[key]

    def worth_reading(raw: bytes) -> bool:  # else nothing to apply: the core loads it (no second parse)
        return flag is not None or bool(re.search(rb"(?m)^options\s*:", raw) and b"compat" in raw)

    data = suite_yaml_or_none(path, "manyih", worth_reading=worth_reading)  # None: the core loads the file
    if data is None:
        return None
    options = data.get("options") if isinstance(data.get("options"), dict) else {}
    option = options.get("compat")
    if option is not None and option not in COMPAT:
        raise SuiteError(path, f"expected paper or reference, got {option!r}", field="options.compat")
    if flag is None and option is None:
        return None
    apply_compat(data, flag=flag, default=option)
    if key is not None:
        _cache[key] = data
    return data


def apply_compat(data: dict[str, Any], *, flag: str | None, default: str | None) -> None:
    """Set ``params.compat`` on every ``manyih.*`` check: ``flag`` overrides, ``default`` fills in."""
    set_check_param(data, "manyih.", "compat", flag=flag, default=default)
