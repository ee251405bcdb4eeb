"""The per-user cache folder for what only depends on tools and file contents (never on a run).

``$XDG_CACHE_HOME/pytest-ifbench`` (default ``~/.cache/pytest-ifbench``): rule
expansions of a ruff binary, parsed suite files, the compact price table
(``models/prices.py``), agent CLIs. Everything in it can be
deleted at any time; a damaged entry is treated as missing.
"""

from __future__ import annotations

import os
from pathlib import Path

from ._atomic_file import replace_file


def user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-ifbench"


def agents_dir() -> Path:
    """Where the agent CLIs are installed (``agents/install.py``): ``$IFBENCH_AGENTS_DIR``, else ``agents`` in
    the per-user cache."""
    configured = os.environ.get("IFBENCH_AGENTS_DIR")
    return Path(configured).absolute() if configured else user_cache_dir() / "agents"


def write_atomically(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` through a temporary file renamed into place; False when it cannot."""
    try:
        replace_file(path, data)
    except OSError:
        return False
    return True
