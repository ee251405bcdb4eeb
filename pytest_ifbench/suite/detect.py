"""Telling suite files from other YAML: the cheap byte sniff collection runs on every file, and the
top-level read that separates a suite from a lookalike (an ``ifbench`` key below the top level).

A lookalike is :class:`NotASuite`; it is ``quiet`` (skipped without a word) unless something in it
looks like a misplaced suite, which collection then warns about.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from .errors import NotASuite, SuiteError, _a, _type_name
from .safe_yaml import YamlLimitError, load_yaml, read_limited

#: ``ifbench:`` as a top-level key of a block mapping: at the start of a line (after a
#: UTF-8 byte-order mark on the first), plain or quoted.
_TOP_KEY = re.compile(rb"^(?:\xef\xbb\xbf)?(?:ifbench|\"ifbench\"|'ifbench')[ \t]*:", re.MULTILINE)
#: ``ifbench:`` as a key anywhere: indented, in a block list item, or after ``{`` or ``,`` in a flow mapping.
_ANY_KEY = re.compile(rb"(?:^[ \t]*(?:-[ \t]+)*|[{,][ \t]*)(?:ifbench|\"ifbench\"|'ifbench')[ \t]*:", re.MULTILINE)
#: A document that is one flow mapping: ``{`` after the BOM, comments, directives and ``---``.
_FLOW_DOCUMENT = re.compile(rb"\A(?:\xef\xbb\xbf)?(?:\s|#[^\n]*|%[^\n]*|---)*\{")
_SUITE_SIBLINGS = frozenset({"instances", "benchmark", "defaults"})


def _holds_misplaced_suite(data: Any, depth: int = 0) -> bool:
    """Whether a mapping with an ``ifbench`` key *and* a suite's other keys sits below the top level."""
    if depth > 8:
        return False
    if isinstance(data, dict):
        if depth and "ifbench" in data and _SUITE_SIBLINGS & {k for k in data if isinstance(k, str)}:
            return True
        return any(_holds_misplaced_suite(v, depth + 1) for v in data.values())
    if isinstance(data, list):
        return any(_holds_misplaced_suite(v, depth + 1) for v in data[:1000])
    return False


def sniff_suite(path: Path) -> str | None:
    """Cheap look at a file: ``"suite"``, ``"maybe"`` or None (not worth parsing).

    ``"suite"``: a ``.yaml``/``.yml`` file with ``ifbench:`` as a top-level key -- at the
    start of a line, plain or quoted, after a byte-order mark, or anywhere in a document
    that is one flow mapping (``{ifbench: 1, ...}``). ``"maybe"``: the key appears only
    indented or inside a flow collection; parsing tells whether it is at the top level
    (if not, collection warns instead of silently collecting nothing). The whole file is
    scanned, up to the size limit (a file over it is then rejected by name).
    """
    text = _yaml_bytes(path)
    return None if text is None else _sniff(text)


def _yaml_bytes(path: Path) -> bytes | None:
    """A ``.yaml``/``.yml`` file's bytes up to one past the size limit; None for other or unreadable files."""
    if path.suffix not in (".yaml", ".yml"):
        return None
    try:
        with path.open("rb") as handle:
            return read_limited(handle)
    except OSError:
        return None


def _sniff(text: bytes) -> str | None:
    if b"ifbench" not in text:  # the common case, at memchr speed
        return None
    if _TOP_KEY.search(text) or (_FLOW_DOCUMENT.match(text) and _ANY_KEY.search(text)):
        return "suite"
    return "maybe" if _ANY_KEY.search(text) else None


def is_suite_file(path: Path) -> bool:
    """Whether collection should open ``path`` as a suite (see :func:`sniff_suite`)."""
    return sniff_suite(path) is not None


def suite_yaml_or_none(path: Path, benchmark: str | None = None, *,
                       worth_reading: Callable[[bytes], bool] | None = None) -> dict[str, Any] | None:
    """The suite mapping in ``path``, read as the core reads it (one read, bounded, cached), or None
    when it is not a suite -- of ``benchmark``, when given -- or ``worth_reading(raw bytes)`` says
    there is nothing to do with it. For a benchmark's importer of YAML suites: on None the core
    loads the file itself and reports whatever is wrong with it."""
    raw = _yaml_bytes(path)
    if raw is None or _sniff(raw) is None or (benchmark is not None and benchmark.encode() not in raw):
        return None
    if worth_reading is not None and not worth_reading(raw):
        return None
    try:
        data = _suite_mapping(raw, path)
    except SuiteError:
        return None
    return data if benchmark is None or data.get("benchmark") == benchmark else None


def read_suite_yaml(path: Path, shown: Path | str | None = None) -> dict[str, Any]:
    """The YAML mapping in a suite file, read within :data:`~._safe_yaml.LIMITS`.

    Raises :class:`SuiteError` naming ``shown`` (default ``path``) for anything unreadable,
    and :class:`NotASuite` when the document has no top-level ``ifbench`` key, saying why.
    """
    shown = shown or path
    try:
        with path.open("rb") as handle:
            raw = read_limited(handle)
    except OSError as exc:
        raise SuiteError(shown, f"cannot read: {exc}") from None
    return _suite_mapping(raw, shown)


def _suite_mapping(raw: bytes, shown: Path | str) -> dict[str, Any]:
    try:
        data = load_yaml(raw)
    except YamlLimitError as exc:
        raise SuiteError(shown, f"refused: {exc}") from None
    except yaml.YAMLError as exc:
        raise SuiteError(shown, f"invalid YAML: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - PyYAML converting a scalar: a 5,000-digit int, month 13
        raise SuiteError(shown, f"invalid YAML: a value cannot be read: {type(exc).__name__}: {exc}") from None
    if not isinstance(data, dict):
        what = "empty" if data is None else _a(_type_name(data))
        raise NotASuite(shown, f"mentions 'ifbench' but its top level is {what}, not a mapping "
                               "with 'ifbench: 1'; not collected as a suite",
                        quiet=not _holds_misplaced_suite(data))
    if "ifbench" not in data:
        raise NotASuite(shown, "has an 'ifbench' key, but not at the top level; not collected as a suite "
                               "(a suite starts with 'ifbench: 1')", quiet=not _holds_misplaced_suite(data))
    return data
