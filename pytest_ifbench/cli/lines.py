"""Reading one JSONL input line: whatever cannot be read errors that line alone (a :class:`CaseError`)."""

from __future__ import annotations

import json
from typing import Any

from .errors import CaseError


def text_line(line: str | bytes) -> str:
    """One input line as text: bytes are decoded strictly, so a bad byte errors its own line only."""
    if isinstance(line, str):
        return line
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CaseError(f"not UTF-8: byte {line[exc.start]:#04x} at column {exc.start + 1}") from None


def json_line(line: str) -> Any:
    """``json.loads(line)``; whatever the decoder refuses is a :class:`CaseError` for this line."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise CaseError(f"not JSON: {exc}") from None
    except ValueError as exc:  # e.g. an integer over 4,300 digits
        raise CaseError(f"unreadable JSON: {str(exc)[:200]}") from None
    except RecursionError:
        raise CaseError("unreadable JSON: nested too deeply") from None
