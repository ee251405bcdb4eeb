"""The results file written as instances finish: a JSON Lines journal beside it, assembled at the end.

Each record goes to ``<results>.partial.jsonl`` (one JSON document per line after a header line) as
its instance is reported -- handed to the operating system within a quarter of a second, by a timer when
no later record comes (the next instance may take minutes) -- so a run that is killed,
runs out of memory or loses its machine keeps every finished instance's record (``ifbench merge``
and ``ifbench compare`` read the journal like a results file, :mod:`.results_reader`). The session
keeps only the byte offset of each record; at the end the journal is copied, in node-id order, into the one JSON results
file (the same format as ever, docs/results-format.md) and removed. That copy is a sort of the node
ids plus one sequential read and one write: linear in the run, with no record held in memory.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from .._redact import redact
from .._version import __version__
from .records import RESULTS_FORMAT, dumps_record
from .results_reader import JOURNAL_KEY

#: A queued record reaches the journal within this many seconds...
FLUSH_SECONDS = 0.25
#: ...or once this many characters of records are queued.
FLUSH_BYTES = 256 * 1024
#: A journal line's length is kept in the low bits of its index entry (a line of 1 TiB is never held).
_LENGTH_BITS = 40
_LENGTH_MASK = (1 << _LENGTH_BITS) - 1


def journal_path(results: Path) -> Path:
    """``ifbench-results.json`` -> ``ifbench-results.partial.jsonl`` (beside the results file)."""
    stem = results.name[: -len(results.suffix)] if results.suffix else results.name
    return results.with_name(f"{stem}.partial.jsonl")


class ResultsJournal:
    """Appends records to the journal as they arrive and assembles the results file from it."""

    def __init__(self, target: Path, meta: Mapping[str, Any], *, journal: Path | None = None,
                 header: Callable[[], Mapping[str, Any]] | None = None) -> None:
        """``journal``: where to keep the journal instead of :func:`journal_path` (``ifbench merge``'s spool);
        ``header``: more entries for the header line, asked for when the first record opens the journal."""
        self.target = target
        self.path = journal or journal_path(target)
        self._meta = dict(meta)
        self._header = header
        self._file: IO[bytes] | None = None
        self._offset = 0
        self._pending: list[tuple[str, str]] = []
        self._pending_chars = 0
        self._flushed = time.monotonic()
        #: node id -> where its latest line is in the journal, ``offset << _LENGTH_BITS | length``: one int
        #: instead of a tuple of two (~90 bytes less per instance).
        self._index: dict[str, int] = {}
        #: The journal is written from the caller's thread and from :attr:`_timer`'s.
        self._lock = threading.Lock()
        #: Writes the queued records when no later record does (armed while records are queued).
        self._timer: threading.Timer | None = None

    def __len__(self) -> int:
        return len(self._index) + len(self._pending)

    def add(self, record: Mapping[str, Any], text: str | None = None) -> None:
        """Queue ``record`` (``text``: its :func:`~.records.dumps_record` text, when the caller has it); a
        later record of the same node id replaces it. Queued records reach the operating system (redacted)
        within :data:`FLUSH_SECONDS` or :data:`FLUSH_BYTES`, whichever comes first: reading the
        secret-looking environment variables costs ~0.07 ms per redaction, so a batch is redacted at once.
        Raises ``OSError`` when the journal cannot be written."""
        if text is None:
            text = dumps_record(record)
        with self._lock:
            if self._file is None:
                self._open()
            self._pending.append((str(record.get("nodeid")), text))
            self._pending_chars += len(text)
            if self._pending_chars >= FLUSH_BYTES or time.monotonic() - self._flushed >= FLUSH_SECONDS:
                self._flush()
            elif self._timer is None:
                self._timer = threading.Timer(FLUSH_SECONDS, self._flush_late)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> None:
        """Write every queued record to the journal and hand it to the operating system."""
        with self._lock:
            self._flush()

    def _flush_late(self) -> None:
        """The timer's: the records queued since the last write, when no later record wrote them. A write
        that fails (a full disk) leaves them queued, for the next record or the end to report."""
        with self._lock:
            self._timer = None
            try:
                self._flush()
            except OSError:
                pass

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _flush(self) -> None:
        if not self._pending or self._file is None:
            return
        pending, self._pending, self._pending_chars = self._pending, [], 0
        # One redaction for the batch; redaction never adds a line break, so the lines stay one per record.
        lines = redact("\n".join(text for _, text in pending)).encode("utf-8", "replace").split(b"\n")
        if len(lines) != len(pending):  # cannot happen (see above); never misplace a record if it did
            lines = [redact(text).encode("utf-8", "replace") for _, text in pending]
        entries, offset = {}, self._offset
        for (nodeid, _), line in zip(pending, lines):
            entries[nodeid] = offset << _LENGTH_BITS | len(line)
            offset += len(line) + 1
        try:
            self._file.write(b"\n".join(lines) + b"\n")
            self._file.flush()
        except BaseException:  # a full disk: the batch stays queued (take_pending hands it over), not indexed
            self._pending = pending + self._pending
            self._pending_chars = sum(len(text) for _, text in self._pending)
            raise
        self._index.update(entries)
        self._offset = offset
        self._flushed = time.monotonic()

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("wb")
        more = dict(self._header()) if self._header is not None else {}
        header = json.dumps({"format": RESULTS_FORMAT, "plugin_version": __version__, JOURNAL_KEY: True,
                             **more, **self._meta}, ensure_ascii=False, separators=(",", ":"), default=str)
        data = redact(header).encode("utf-8", "replace") + b"\n"
        handle.write(data)
        handle.flush()
        self._file, self._offset = handle, len(data)

    def finish(self, meta: Mapping[str, Any]) -> None:
        """Write the results file (records sorted by node id, ``meta`` at the top) and remove the journal."""
        with self._lock:
            self._stop_timer()
            if self._file is None:
                return
            self._flush()
            self._file.close()
            self._file = None
        head = dumps_record({"format": RESULTS_FORMAT, "plugin_version": __version__, **meta, "instances": []})
        tmp = self.target.with_suffix(self.target.suffix + ".tmp")
        try:
            with self.path.open("rb") as source, tmp.open("wb") as out:
                out.write(redact(head[:-2]).encode("utf-8", "replace"))  # head ends with `"instances":[]}`
                fd = source.fileno()
                separator = b""
                for nodeid in sorted(self._index):
                    span = self._index[nodeid]
                    out.write(separator)
                    out.write(os.pread(fd, span & _LENGTH_MASK, span >> _LENGTH_BITS))
                    separator = b","
                out.write(b"]}")
            tmp.replace(self.target)
        except BaseException:  # a full disk: no half-written file beside the journal, which stays
            tmp.unlink(missing_ok=True)
            raise
        self.path.unlink(missing_ok=True)

    def take_pending(self) -> list[dict[str, Any]]:
        """The queued records that never reached the journal (after a write failed), as records; the
        journal is closed without writing them."""
        with self._lock:
            self._stop_timer()
            pending, self._pending, self._pending_chars = self._pending, [], 0
            if self._file is not None:
                try:
                    self._file.close()
                except OSError:
                    pass
                self._file = None
        return [json.loads(text) for _, text in pending]

    def close(self) -> None:
        """Stop writing; the journal stays on disk (the run ended before its results file was written)."""
        with self._lock:
            self._stop_timer()
            if self._file is not None:
                self._flush()
                self._file.close()
                self._file = None

    def discard(self) -> None:
        """Stop writing and remove the journal (nothing is to be written from it)."""
        with self._lock:
            self._stop_timer()
            self._pending, self._pending_chars, self._index = [], 0, {}
            if self._file is not None:
                self._file.close()
                self._file = None
        self.path.unlink(missing_ok=True)
