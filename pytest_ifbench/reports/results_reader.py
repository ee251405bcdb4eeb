"""Reading a results file, or the journal a killed run left, one record at a time.

A results file is one JSON document whose ``instances`` list holds every record, so parsing it whole
holds the run in memory (~32 KB an instance as Python objects): 1.6 GB to merge the shards of a
50,000-instance run. :class:`ResultsReader` walks the document's top level instead and hands out each
element of ``instances`` with its exact text, decoded by the standard library's C decoder
(``JSONDecoder.raw_decode``) from a buffer of ~1 MiB, so a reader holds one record at a time. The keys
around ``instances`` (the run's metadata) may come in any order, and a journal (a header line, then one
record per line: :mod:`.results_stream`) is read the same way. A record larger than the buffer makes it
grow (doubling), never re-read more than twice its size.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from typing import IO, Any

#: A journal's header line has this key set: a journal, not a finished results file.
JOURNAL_KEY = "partial"
CHUNK = 1 << 20
_BLANK = re.compile(r"[ \t\n\r]*")
#: What may follow a number up to the end of the buffer when the buffer cut it.
_CUT_NUMBER = re.compile(r"[0-9eE.+-]*\Z")
_DECODER = json.JSONDecoder()


class _Buffer:
    """The text read so far that is not consumed yet, and where in the file it starts."""

    def __init__(self, handle: IO[str]) -> None:
        self._handle = handle
        self.text = ""
        self.pos = 0
        #: Characters consumed before ``text`` (for error messages).
        self.before = 0
        self.eof = False

    def more(self) -> bool:
        """Read on (at least as much as is still unconsumed, so a long value doubles the buffer); False at
        the end of the file."""
        if self.eof:
            return False
        rest = len(self.text) - self.pos
        chunk = self._handle.read(max(CHUNK, rest))
        if not chunk:
            self.eof = True
            return False
        self.before += self.pos
        self.text = self.text[self.pos:] + chunk
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not blank ('' at the end of the file), not consumed."""
        while True:
            self.pos = _BLANK.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""

    def take(self, *expected: str) -> str:
        char = self.peek()
        if char not in expected:
            found = repr(char) if char else "the end of the file"
            raise ValueError(f"expected {' or '.join(map(repr, expected))} at character {self.where}, found {found}")
        self.pos += 1
        return char

    def value(self) -> tuple[Any, str]:
        """The next JSON value and its text."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if self.more():  # cut by the end of the buffer, perhaps
                    continue
                raise ValueError(f"{exc.msg} at character {self.before + exc.pos}") from None
            if not isinstance(value, (dict, list, str)) and _CUT_NUMBER.match(self.text, end) and self.more():
                continue  # a number the buffer may have cut: "-1.5" of "-1.5e10", "12" of "123"
            text = self.text[self.pos:end]
            self.pos = end
            return value, text

    def line(self) -> str | None:
        """The rest of the current line (without its line break); None at the end of the file."""
        while True:
            end = self.text.find("\n", self.pos)
            if end >= 0:
                line, self.pos = self.text[self.pos:end], end + 1
                return line
            if not self.more():
                if self.pos >= len(self.text):
                    return None
                line, self.pos = self.text[self.pos:], len(self.text)
                return line

    @property
    def where(self) -> int:
        return self.before + self.pos


class ResultsReader:
    """Iterating yields ``(record, text)`` for each record of a results file or journal, in the file's
    order (a journal may hold a node id twice: the later record is the one that counts); :attr:`meta` is
    complete once the iteration ends. Raises ``ValueError`` for text that is neither."""

    def __init__(self, handle: IO[str]) -> None:
        self._buffer = _Buffer(handle)
        #: The top-level keys other than ``instances`` (a journal's: its header line's, without the marker).
        self.meta: dict[str, Any] = {}
        #: Whether the document has an ``instances`` list (a journal always has).
        self.has_instances = False
        self.journal = False

    def __iter__(self) -> Iterator[tuple[dict[str, Any], str]]:
        buffer = self._buffer
        if buffer.peek() != "{":
            raise ValueError("neither a JSON document nor a JSON Lines results journal")
        buffer.take("{")
        if buffer.peek() == "}":
            buffer.take("}")
        else:
            while True:
                key, _ = buffer.value()
                if not isinstance(key, str):
                    raise ValueError(f"expected a key at character {buffer.where}")
                buffer.take(":")
                if key == "instances" and buffer.peek() == "[":
                    self.has_instances = True
                    yield from self._elements()
                else:
                    self.meta[key] = buffer.value()[0]
                if buffer.take(",", "}") == "}":
                    break
        if self.meta.pop(JOURNAL_KEY, False):
            self.journal = self.has_instances = True
            yield from self._lines()
        elif buffer.peek():
            raise ValueError(f"extra data after the JSON document at character {buffer.where}")

    def _elements(self) -> Iterator[tuple[dict[str, Any], str]]:
        buffer = self._buffer
        buffer.take("[")
        if buffer.peek() == "]":
            buffer.take("]")
            return
        while True:
            value, text = buffer.value()
            if isinstance(value, dict):
                yield value, text
            if buffer.take(",", "]") == "]":
                return

    def _lines(self) -> Iterator[tuple[dict[str, Any], str]]:
        """The journal's records, one per line after the header. Its last line may be cut (the run was
        killed while writing it) and is then skipped; a line that is not JSON before the last is an error."""
        buffer = self._buffer
        if (rest := buffer.line()) and rest.strip():
            raise ValueError("extra data after the journal's header line")
        number = 1
        while (line := buffer.line()) is not None:
            number += 1
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                if not buffer.peek():
                    return
                raise ValueError(f"line {number} of the journal is not JSON") from None
            if isinstance(record, dict):
                yield record, line


def read_results(handle: IO[str]) -> dict[str, Any]:
    """A results file's data whole: its metadata plus ``instances``, the records (a journal's: the last
    record of each node id, in node-id order). Raises ``ValueError`` for text that is neither."""
    reader = ResultsReader(handle)
    records = [record for record, _ in reader]
    if reader.journal:
        last = {str(record.get("nodeid")): record for record in records}
        records = [last[key] for key in sorted(last)]
    return {**reader.meta, "instances": records} if reader.has_instances else dict(reader.meta)


def read_results_text(text: str) -> dict[str, Any]:
    """:func:`read_results` of a text already read."""
    return read_results(io.StringIO(text, newline=""))
