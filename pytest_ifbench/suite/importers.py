"""Asking benchmark importers for suite data without letting one of them break collection.

pytest offers every ``.json``/``.jsonl``/``.yaml`` file on its path to the
``pytest_ifbench_suite_data`` hook. An importer that recognises its file but
finds it malformed raises :class:`SuiteError` -- a collection error naming the
file, as for any suite. Anything else it raises (a stray JSONL nested too deep,
a file of another shape than it assumed) is the importer's bug, not the user's
file: the file is left alone with a :class:`SuiteImportWarning` naming it and
the plugin, and every neighbouring suite still collects.

A YAML file is offered to importers only within the limits of
:mod:`._safe_yaml` (importers load YAML with PyYAML directly, and a merge-key
bomb would keep one busy for minutes); the core's own loader then reports it.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from .._composition import BenchmarkLoadWarning
from .format import SuiteError
from .safe_yaml import read_limited, within_limits


class SuiteImportWarning(BenchmarkLoadWarning):
    """A benchmark's importer failed on one file; the file was not collected."""


def import_suite_data(config: pytest.Config, path: Path) -> Any:
    """The first importer's suite data for ``path``, or None (no importer took it, or one failed).

    Raises :class:`SuiteError` when an importer rejects a file it recognised.
    """
    hook = config.hook.pytest_ifbench_suite_data
    implementations = hook.get_hookimpls()
    if not implementations or not _safe_to_offer(path):
        return None
    try:
        return hook(path=path, config=config)
    except SuiteError:
        raise
    except Exception as exc:  # noqa: BLE001 - a third-party importer's bug must not stop collection
        plugin = _raised_by(exc, implementations)
        reason = str(exc) if len(str(exc)) <= 200 else str(exc)[:199] + "…"
        warnings.warn(SuiteImportWarning(
            f"pytest-ifbench: {path}: the suite importer of benchmark plugin {plugin} failed "
            f"({type(exc).__name__}: {reason}); the file is left alone"), stacklevel=2)
        return None


def _safe_to_offer(path: Path) -> bool:
    """False for a YAML file over the size, depth or alias-expansion limits (or unreadable)."""
    if path.suffix not in (".yaml", ".yml"):
        return True
    try:
        with path.open("rb") as handle:
            within_limits(read_limited(handle))
    except Exception:  # noqa: BLE001 - unreadable, not YAML or over a limit: the core's loader says which
        return False
    return True


def _raised_by(exc: BaseException, implementations: list[Any]) -> str:
    """The name of the plugin whose hook implementation is on ``exc``'s traceback (outermost first).

    Methods share their code between instances (every benchmark declaration's importer is the same
    method): there the frame's ``self`` tells which plugin it was."""
    owners: dict[Any, list[Any]] = {}
    for impl in implementations:
        owners.setdefault(getattr(impl.function, "__code__", None), []).append(impl)
    frame = exc.__traceback__
    while frame is not None:
        found = owners.get(frame.tb_frame.f_code, [])
        if len(found) > 1:
            found = [impl for impl in found if impl.plugin is frame.tb_frame.f_locals.get("self")]
        if found:
            return repr(found[0].plugin_name)
        frame = frame.tb_next
    return "(unknown)"
