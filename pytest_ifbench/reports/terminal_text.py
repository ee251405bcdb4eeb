"""What of a model's or an agent's text may reach the terminal as it is.

Reports carry text the model or the agent under test wrote: a failed check's evidence, a workspace command's
output, a provider's error. Printed raw, its control characters drive the reader's terminal (an agent set the
window title and cleared the screen), and its bidirectional overrides reorder what the reader sees (Trojan
Source: ``\\u202e`` shows ``passed`` where the text says ``dessap``). Both are shown escaped instead; the results
file keeps the exact text. Zero-width joiners and the like are left alone: emoji are built with them.
"""

from __future__ import annotations

import re

import pytest

__all__ = ["clean_report", "printable"]

#: C0 and C1 controls but newline and tab, and the bidirectional embeddings, overrides and isolates.
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[{_UNSAFE}]")
#: The same but for colour sequences (``ESC [ ... m``): pytest colours the level names of a captured log with them.
_CONTROL_BUT_COLOUR = re.compile(f"(\x1b\\[[0-9;]*m)|[{_UNSAFE}]")


def _escaped(match: re.Match[str]) -> str:
    if match.lastindex:
        return match.group(1)
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, colours: bool = False) -> str:
    """``text`` for the terminal: each unsafe character (see the module) shown as ``\\xNN`` or ``\\uNNNN`` (with
    ``colours``, colour sequences kept). Only what is printed changes: the results file keeps the exact text."""
    return (_CONTROL_BUT_COLOUR if colours else _CONTROL).sub(_escaped, text)


def clean_report(report: pytest.TestReport) -> None:
    """The last guard before a report's text reaches the terminal, JUnit XML or another process: errors
    are redacted where they arise, but captured output and logs (litellm's included) are not; and unsafe
    characters are made visible (see the module)."""
    from .._redact import redact

    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (path, line, reason)
        report.longrepr = (longrepr[0], longrepr[1], printable(redact(str(longrepr[2]))))
    elif longrepr is not None:
        text = str(longrepr)
        clean = printable(redact(text))
        if clean != text:  # keep pytest's rendering unless there is something to hide
            report.longrepr = clean
    if report.sections:
        report.sections = [(title, printable(redact(content), colours=True)) for title, content in report.sections]
