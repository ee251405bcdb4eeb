"""ManyIH-Bench official files.

* ``pytest coding.json`` (or the instruction-following file) collects the official
  data as a suite: ids, privileges and expected winners preserved; losing
  instructions are unscored checks.
* ``compat`` (``paper`` | ``reference``) is first of all a parameter of every
  ``manyih.*`` verifier. A ManyIH suite may set it for all its checks with
  ``options: {compat: reference}`` (checks that set it themselves keep theirs), and
  ``--manyih-compat=MODE`` sets it for every ManyIH check of the run: the core does
  both for YAML suites (``Compat`` in plugin.py); official files get it here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_ifbench import ReadOptions, SuiteError

_SNIFF_BYTES = 1 << 16


def read(path: Path, options: ReadOptions) -> Any:
    """Suite data for an official ManyIH file (``options.compat``: ``--manyih-compat``), else None.

    The core calls it once per file content (its official-file cache)."""
    return _official(path, options.compat) if path.suffix == ".json" else None


def _official(path: Path, flag: str | None) -> Any:
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
        raise SuiteError(path, f"cannot import the official ManyIH file: {exc}") from None
    return result
