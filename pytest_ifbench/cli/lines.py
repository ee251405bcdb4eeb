"""Reading JSONL input lines: whatever cannot be read errors that line alone (a :class:`CaseError`).

Lines are read with a bound (:data:`MAX_LINE_BYTES`), so an input without line
ends (``--in /dev/zero``) costs bounded memory: the over-long line is its own
error, the rest of it is skipped, and a "line" that never ends stops the input
(:class:`UsageError`) instead of growing until the process dies.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from .errors import CaseError, UsageError

#: The longest input line read (one case, one recorded response); a longer one is that line's error.
MAX_LINE_BYTES = 64 * 1024 * 1024
#: How much of an over-long line is skipped looking for its end before the input is given up.
MAX_SKIP_BYTES = 1024 * 1024 * 1024
_SKIP_CHUNK = 1024 * 1024


def bounded_lines(stream: IO[Any], name: str) -> Iterator[bytes | str | CaseError]:
    """Each line of ``stream`` (as read, line end included), or a :class:`CaseError` in place of a line
    longer than :data:`MAX_LINE_BYTES`; :class:`UsageError` when a line has no end within
    :data:`MAX_SKIP_BYTES` (``name`` says which input)."""
    number = 0
    while line := stream.readline(MAX_LINE_BYTES + 1):
        number += 1
        end = "\n" if isinstance(line, str) else b"\n"
        if len(line) <= MAX_LINE_BYTES or line[MAX_LINE_BYTES:] == end:
            yield line
            continue
        skipped = len(line)
        while not line.endswith(end):
            line = stream.readline(_SKIP_CHUNK)
            if not line:
                break
            skipped += len(line)
            if skipped > MAX_SKIP_BYTES:
                raise UsageError(f"{name}: line {number} runs past {MAX_SKIP_BYTES:,} bytes without a line end; "
                                 "stopped reading")
        yield CaseError(f"the line is longer than the {MAX_LINE_BYTES:,} bytes allowed; left out")


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
