"""Parsed suite files kept between runs, keyed by the file's bytes.

Loading a suite is most of collection: the shape pass of :mod:`._safe_yaml`
plus PyYAML's constructor cost about 0.7 ms per instance, and a re-run (a
cached re-score, a ``-m`` selection, each xdist worker) reads the very same
bytes again. So a document that passed the shape check and loaded is pickled
under ``<user cache>/yaml/<blake2b of the bytes>.pickle``; the next read of
identical bytes unpickles it (about a tenth of the cost) and skips both
passes. Only documents within the default limits are kept, so a hit also
means "within the limits".

Unpickling is restricted to the types the safe loader builds (plain
containers and scalars, ``datetime`` values), so a planted file can at worst
give wrong data, never run code. ``PYTEST_IFBENCH_YAML_CACHE=0`` turns it off;
at most :data:`MAX_ENTRIES` files are kept (the oldest go first).
"""

from __future__ import annotations

import datetime
import hashlib
import io
import os
import pickle
from pathlib import Path
from typing import Any

from .._user_cache import user_cache_dir, write_atomically

#: Files kept in the folder; writing one more removes the least recently written.
MAX_ENTRIES = 200

_ALLOWED = {("datetime", "date"): datetime.date, ("datetime", "datetime"): datetime.datetime,
            ("datetime", "timedelta"): datetime.timedelta, ("datetime", "timezone"): datetime.timezone,
            ("builtins", "set"): set, ("builtins", "frozenset"): frozenset}

MISS = object()


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"{module}.{name} is not a type YAML builds") from None


def _enabled() -> bool:
    return os.environ.get("PYTEST_IFBENCH_YAML_CACHE") != "0"


#: Part of every key: a document kept in an older form (before equal strings were shared, see
#: ``safe_yaml.share_equal_strings``) is not read back, the file is parsed again.
FORM = b"shared-strings"


def _path(data: bytes) -> Path:
    digest = hashlib.blake2b(data, digest_size=20, person=FORM).hexdigest()
    return user_cache_dir() / "yaml" / f"{digest}.pickle"


def get(data: bytes) -> Any:
    """The parsed document for exactly these bytes, or :data:`MISS`."""
    if not _enabled():
        return MISS
    try:
        blob = _path(data).read_bytes()
        return _SafeUnpickler(io.BytesIO(blob)).load()
    except Exception:  # noqa: BLE001 - missing, unreadable or damaged: parse the file instead
        return MISS


def known(data: bytes) -> bool:
    """Whether these bytes were loaded within the limits before (their parse is kept)."""
    return _enabled() and _path(data).is_file()


def put(data: bytes, document: Any) -> None:
    if not _enabled():
        return
    try:
        blob = pickle.dumps(document, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - e.g. a recursive structure the limits let through: just not kept
        return
    path = _path(data)
    if write_atomically(path, blob):
        _prune(path.parent)


def _prune(folder: Path) -> None:
    try:
        entries = sorted(folder.glob("*.pickle"), key=lambda p: p.stat().st_mtime)
        for stale in entries[:-MAX_ENTRIES]:
            stale.unlink(missing_ok=True)
    except OSError:
        pass
