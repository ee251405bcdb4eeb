"""The on-disk response cache, content-addressed by what changes the output.

The key is built from an explicit list of fields (model, messages, tools,
generation parameters, response format, sample index, and the provider's
revision where it declares one); transport settings
(api base, keys, timeouts) are left out, so pointing at another endpoint
for the same model still hits the cache. Entries are written atomically
(temp file + ``os.replace``), so xdist workers can share a directory and an
interrupted run leaves only complete entries behind.

A second tier (:class:`SharedTier`, e.g. a bucket or a Redis database every shard of
a run reads: :mod:`pytest_ifbench.scale.tier`) may stand behind the directory: a
local miss asks it and writes what it returns into the directory (backfill), and
every entry written here is offered to it (write-through), as the same redacted
text. The tier decides what is worth the network; this module only calls it.

While a process asks the model for a key it keeps a mark beside the entry
(``<key>.inflight``: host, pid, the process's start time), so that another
process sharing the directory waits for the reply instead of paying for it
(:meth:`ResponseCache.claim`; the waiting is ``ModelClient.complete``'s).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from .._atomic_file import replace_file
from .._owner import gone, this_process
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
    revision: str | None = None,
) -> str:
    payload: dict[str, Any] = {
        "format": CACHE_FORMAT,
        "model": model,
        "messages": list(messages),
        "params": dict(sorted(params.items())),
        "sample": sample,
        "tools": list(tools),
        "response_format": response_format,
    }
    if revision is not None:  # (a provider's; see Provider.revision)
        payload["revision"] = revision
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def kept_reply(entry: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The reply a response-cache entry keeps; None for none or a damaged one (then the model is asked). The
    shared tier judges an entry it fetches by this rule too (:func:`~..scale.tier.usable`)."""
    response = entry.get("response") if entry is not None else None
    return response if isinstance(response, dict) and isinstance(response.get("raw_text"), str) else None


class SharedTier(Protocol):
    """What the cache asks behind its directory. No call may raise; ``fetch`` returns the entry's JSON
    text or None (``fresh``: even one the tier did not know of when the run started), ``offer`` takes
    the text of an entry the directory holds; ``claim`` leases a key to this process before it asks
    the model (False: a process elsewhere is asking), ``release`` ends the lease once the entry is in."""

    def fetch(self, key: str, fresh: bool = False) -> str | None: ...

    def offer(self, key: str, text: str) -> None: ...

    def claim(self, key: str) -> bool: ...

    def release(self, key: str) -> None: ...


class ResponseCache:
    """One JSON file per entry under ``root/<2 hex>/<key>.json``; optionally a :class:`SharedTier` behind it."""

    def __init__(self, root: Path, shared: SharedTier | None = None) -> None:
        self.root = Path(root)
        self.shared = shared

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str, fresh: bool = False) -> dict[str, Any] | None:
        """The entry, from the directory or else the shared tier (``fresh``: see :class:`SharedTier`)."""
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
        fetched = self.shared.fetch(key, fresh)
        entry = _entry(fetched)
        if entry is not None:
            self._write(key, redact(fetched))  # type: ignore[arg-type]  # backfill, redacted like a put
        return entry

    def claim(self, key: str) -> bool:
        """Mark ``key`` as being asked of the model by this process (a ``.inflight`` file beside the entry,
        naming the host and process): True when no other live process has marked it, so another process
        (an xdist worker sharing the directory) waits for this one's reply instead of paying for its own.
        A mark whose process is gone (same host) or older than an hour (another host) is taken over.
        With a shared tier, the key is then leased there too, for processes on other machines; when a
        process there holds the lease, this one's mark goes again and the answer is False."""
        if not self._mark(key):
            return False
        if self.shared is not None and not self.shared.claim(key):
            self._unmark(key)
            return False
        return True

    def _mark(self, key: str) -> bool:
        path = self._path(key).with_suffix(".inflight")
        for _ in range(2):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:
                if not _abandoned(path):
                    return False
                path.unlink(missing_ok=True)
                continue
            except OSError:  # a read-only or full directory: nobody can wait on this process
                return True
            with os.fdopen(fd, "w") as handle:
                handle.write(this_process())
            return True
        return False

    def release(self, key: str) -> None:
        """Remove this process's mark on ``key``, and end its lease in the shared tier (see :meth:`claim`)."""
        self._unmark(key)
        if self.shared is not None:
            self.shared.release(key)

    def _unmark(self, key: str) -> None:
        try:
            self._path(key).with_suffix(".inflight").unlink(missing_ok=True)
        except OSError:  # a directory made read-only meanwhile: the mark is taken over once this process ends
            pass

    def put(self, key: str, entry: Mapping[str, Any]) -> None:
        text = redact(json.dumps(dict(entry), ensure_ascii=False, indent=1))
        self._write(key, text)
        if self.shared is not None:
            self.shared.offer(key, text)

    def _write(self, key: str, text: str) -> None:
        replace_file(self._path(key), text)

    def __len__(self) -> int:
        if not self.root.exists():
            return 0
        # A write killed half-way leaves a hidden ``.<entry>.json.*.tmp`` file; it is never read, so not an entry.
        return sum(1 for p in self.root.glob("*/*.json") if not p.name.startswith("."))


#: A mark from another host is taken over after this long (its process cannot be asked).
_MARK_MAX_AGE = 3600.0


def _abandoned(path: Path) -> bool:
    """Whether the process that wrote the mark ``path`` is gone (see :meth:`ResponseCache.claim`)."""
    try:
        owner = path.read_text(encoding="utf-8")
        fields = owner.split()
        if len(fields) != 3 or not fields[1].isdigit():
            raise ValueError(owner)
        age = time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return True
    except (OSError, ValueError):  # being written right now, or damaged
        try:
            return time.time() - path.stat().st_mtime > 10
        except OSError:
            return True
    verdict = gone(owner)
    return age > _MARK_MAX_AGE if verdict is None else verdict  # another host's process cannot be asked


def _entry(text: str | None) -> dict[str, Any] | None:
    """A cache entry from its text; damaged (not JSON, absurd nesting, not an object): a miss."""
    if text is None:
        return None
    try:
        entry = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return entry if isinstance(entry, dict) else None
