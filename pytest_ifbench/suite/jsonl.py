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


def iter_jsonl(lines: Iterable[str], *, expected: str = "expected a JSON object per line") -> Iterator[
        tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line; :class:`JsonlError` at the first bad one.

    ``expected`` is the reason given for a line that is valid JSON but not an object.
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise JsonlError(number, f"not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise JsonlError(number, expected)
        yield number, value
