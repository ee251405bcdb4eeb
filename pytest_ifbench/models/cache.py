"""The on-disk response cache, content-addressed by what changes the output.

The key is built from an explicit list of fields (model, messages, tools,
generation parameters, response format, sample index); transport settings
(api base, keys, timeouts) are left out, so pointing at another endpoint
for the same model still hits the cache. Entries are written atomically
(temp file + ``os.replace``), so xdist workers can share a directory and an
interrupted run leaves only complete entries behind.

A second tier (:class:`SharedTier`, e.g. a bucket or a Redis database every shard of
a run reads: :mod:`pytest_ifbench.scale.tier`) may stand behind the directory: a
local miss asks it and writes what it returns into the directory (backfill), and
every entry written here is offered to it (write-through), as the same redacted
text. The tier decides what is worth the network; this module only calls it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from .._redact import redact

CACHE_FORMAT = 1


def cache_key(
    *,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    params: Mapping[str, Any],
    sample: int = 0,
    tools: Sequence[Mapping[str, Any]] = (),
    response_format: Mapping[str, Any] | None = None,
) -> str:
    payload = {
        "format": CACHE_FORMAT,
        "model": model,
        "messages": list(messages),
        "params": dict(sorted(params.items())),
        "sample": sample,
        "tools": list(tools),
        "response_format": response_format,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class SharedTier(Protocol):
    """What the cache asks behind its directory. Neither call may raise; ``fetch`` returns the
    entry's JSON text or None, ``offer`` takes the text of an entry the directory holds."""

    def fetch(self, key: str) -> str | None: ...

    def offer(self, key: str, text: str) -> None: ...


class ResponseCache:
    """One JSON file per entry under ``root/<2 hex>/<key>.json``; optionally a :class:`SharedTier` behind it."""

    def __init__(self, root: Path, shared: SharedTier | None = None) -> None:
        self.root = Path(root)
        self.shared = shared

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            text = self._path(key).read_text(encoding="utf-8")
        except (OSError, ValueError):  # absent, or not UTF-8
            text = None
        entry = _entry(text)
        if self.shared is None:
            return entry
        if entry is not None:
            self.shared.offer(key, text)  # type: ignore[arg-type]  # a tier that lacks it (an earlier run's) gets it
            return entry
        fetched = self.shared.fetch(key)
        entry = _entry(fetched)
        if entry is not None:
            self._write(key, redact(fetched))  # type: ignore[arg-type]  # backfill, redacted like a put
        return entry

    def put(self, key: str, entry: Mapping[str, Any]) -> None:
        text = redact(json.dumps(dict(entry), ensure_ascii=False, indent=1))
        self._write(key, text)
        if self.shared is not None:
            self.shared.offer(key, text)

    def _write(self, key: str, text: str) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def __len__(self) -> int:
        if not self.root.exists():
            return 0
        # A write killed half-way leaves a ``.tmp-*.json`` file; it is never read, so not an entry.
        return sum(1 for p in self.root.glob("*/*.json") if not p.name.startswith(".tmp-"))


def _entry(text: str | None) -> dict[str, Any] | None:
    """A cache entry from its text; damaged (not JSON, absurd nesting, not an object): a miss."""
    if text is None:
        return None
    try:
        entry = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return entry if isinstance(entry, dict) else None
