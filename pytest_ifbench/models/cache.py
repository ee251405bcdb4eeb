"""The on-disk response cache, content-addressed by what changes the output.

The key is built from an explicit list of fields (model, messages, tools,
generation parameters, response format, sample index); transport settings
(api base, keys, timeouts) are left out, so pointing at another endpoint
for the same model still hits the cache. Entries are written atomically
(temp file + ``os.replace``), so xdist workers can share a directory and an
interrupted run leaves only complete entries behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

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


class ResponseCache:
    """One JSON file per entry under ``root/<2 hex>/<key>.json``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            with self._path(key).open(encoding="utf-8") as handle:
                entry = json.load(handle)
        except (OSError, ValueError, RecursionError):  # damaged (bad UTF-8, not JSON, absurd nesting): a miss
            return None
        return entry if isinstance(entry, dict) else None

    def put(self, key: str, entry: Mapping[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = redact(json.dumps(dict(entry), ensure_ascii=False, indent=1))
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
