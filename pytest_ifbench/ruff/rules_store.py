"""Rule expansions that outlive the process: ``(selectors, settings) -> exact rule codes``.

Expanding a check's selectors takes one ``ruff --show-settings`` process
(~30 ms); a cold run of ruff-backed checks needs dozens of them, which cost more than
checking hundreds of replies in one batch. The answer depends only on the ruff
executable, so it is kept in one small JSON file per ruff binary (named by its
size and modification time) under ``$XDG_CACHE_HOME/pytest-ifbench`` (default
``~/.cache``); ``PYTEST_IFBENCH_RUFF_RULES=0`` turns the file off. A missing,
unreadable or damaged file is an empty store; writes are atomic (a temporary
file renamed into place), so concurrent processes at worst redo an expansion.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from .._user_cache import user_cache_dir, write_atomically


class RuleStore:
    """Expansions for one ruff binary, loaded on first use and written back on every new answer."""

    def __init__(self, binary: str) -> None:
        self._binary = binary
        self._lock = threading.Lock()
        self._entries: dict[str, list[str]] | None = None
        self._path: Path | None = None

    def _load(self) -> dict[str, list[str]]:
        if self._entries is not None:
            return self._entries
        self._entries = {}
        if os.environ.get("PYTEST_IFBENCH_RUFF_RULES") == "0":
            return self._entries
        try:
            stat = os.stat(self._binary)
            self._path = user_cache_dir() / f"ruff-rules-{stat.st_size}-{stat.st_mtime_ns}.json"
            data = json.loads(self._path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return self._entries
        if isinstance(data, dict):
            self._entries = {k: v for k, v in data.items()
                             if isinstance(v, list) and all(isinstance(c, str) for c in v)}
        return self._entries

    def get(self, key: tuple[Any, ...]) -> frozenset[str] | None:
        with self._lock:
            codes = self._load().get(repr(key))
        return frozenset(codes) if codes is not None else None

    def put(self, key: tuple[Any, ...], codes: frozenset[str]) -> None:
        with self._lock:
            entries = self._load()
            entries[repr(key)] = sorted(codes)
            if self._path is not None:  # a read-only home: expansions are then per process, as before
                write_atomically(self._path, json.dumps(entries).encode("utf-8"))
