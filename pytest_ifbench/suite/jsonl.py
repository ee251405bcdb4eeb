"""Reading JSON Lines with line numbers, for every reader of user-supplied JSONL files.

Blank lines are skipped; line numbers count from 1 in the file as written, so
error messages can point at the exact line. Callers keep their own error type
and wording: :class:`JsonlError` carries the line number and the reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any


class JsonlError(ValueError):
    """Line ``line`` is not one JSON object; ``reason`` says why (``not JSON: ...`` or what was expected)."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


def jsonl_lines(text: str) -> list[str]:
    """``text``'s lines as JSON Lines has them: split at ``\\n`` only (a ``\\r`` before it dropped).
    ``str.splitlines`` also splits at U+2028, U+2029, U+0085 and other characters JSON strings may hold as
    they are (``json.dumps(..., ensure_ascii=False)`` writes them), cutting a valid line in two."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def iter_jsonl(lines: Iterable[str] | str, *, expected: str = "expected a JSON object per line") -> Iterator[
        tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line (of a file's whole text: :func:`jsonl_lines`);
    :class:`JsonlError` at the first bad one.

    ``expected`` is the reason given for a line that is valid JSON but not an object.
    """
    for number, line in enumerate(jsonl_lines(lines) if isinstance(lines, str) else lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise JsonlError(number, f"not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise JsonlError(number, expected)
        yield number, value
