"""Replacing a file so that no reader ever sees it half-written, and no failed write leaves debris.

The run's files are read while they are written -- cache entries by other xdist workers and shards, a
trajectory by the live status, the results file by whoever waits for it -- so each is written to a
temporary file of its own beside the target (a unique name: two writers of one path never share it) and
renamed over it, which POSIX makes atomic within a directory.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["replace_file"]


def replace_file(path: Path, data: bytes | str, *, mode: int | None = None) -> None:
    """Make ``path`` hold ``data`` (text as UTF-8, a lone surrogate written as ``?``), creating its directory.

    The file is private to its owner (0600) unless ``mode`` says otherwise. Raises ``OSError`` as the write
    or the rename does; the temporary file is gone either way.
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
