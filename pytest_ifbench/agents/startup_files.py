"""What a CLI loads when it starts, as the run left it: changed between two commands, the agent changed the CLI.

A real CLI of a multi-turn instance starts again for every user turn, and some load code into their own process
at start-up from places the agent's tool commands can write: Kilo imports the custom tools of
``{tool,tools}/*`` in its global configuration directory (``~/.config/kilo``) and in the workspace's
``.kilo``/``.kilocode``, whatever ``KILO_PURE`` says, and reads its system prompt's instruction file from HOME.
A tool written in turn 1 ran as the CLI in turn 2 (posting to the relay as the CLI, writing files with no tool
call). A CLI declares those places (:attr:`~.clis.AgentCli.loads_at_start`); the runner takes
:func:`snapshot` once the CLI is configured and compares it before every later command (:func:`changed`): a file
added, changed or removed there is the agent's doing, and its run ends before the CLI could load it.

Nothing is followed out of the workspace or HOME: a symbolic link is compared by where it points, a directory
reached through one is not read, and only regular files are read (their first 4 MiB and their size).
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from ..sandbox.backend import HOME, MOUNT

__all__ = ["changed", "snapshot"]

_READ = 4 << 20


def _state(path: Path) -> str | None:
    """What ``path`` is, without following it: None when it is not there."""
    try:
        info = path.lstat()
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return "link to " + os.readlink(path)
    if stat.S_ISDIR(info.st_mode):
        return "directory"
    if not stat.S_ISREG(info.st_mode):
        return f"special file {stat.S_IFMT(info.st_mode):o}"
    try:
        with path.open("rb") as handle:
            return f"{hashlib.sha256(handle.read(_READ)).hexdigest()} {info.st_size}"
    except OSError as exc:
        return f"unreadable ({exc.strerror})"


def _matches(root: Path, shown: str, pattern: str) -> dict[str, str]:
    """The entries under ``root`` matching ``pattern`` (a relative path whose last part may hold a glob), by
    their path inside the sandbox (``shown`` is ``root`` there); a directory on the way that is a link or no
    directory ends the walk there, reported as what it is."""
    *parents, last = PurePosixPath(pattern).parts
    directory, seen = root, shown
    for part in parents:
        directory, seen = directory / part, f"{seen}/{part}"
        state = _state(directory)
        if state != "directory":
            return {seen: state} if state is not None else {}
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return {}
    return {f"{seen}/{name}": state for name in names if fnmatch.fnmatchcase(name, last)
            and (state := _state(directory / name)) is not None}


def snapshot(patterns: Iterable[str], *, workspace: Path, home: Path) -> dict[str, str]:
    """What lies at ``patterns`` (``~/...``: below HOME, others below the workspace), by sandbox path."""
    found: dict[str, str] = {}
    for pattern in patterns:
        if pattern.startswith("~/"):
            found.update(_matches(home, HOME, pattern[2:]))
        else:
            found.update(_matches(workspace, MOUNT, pattern))
    return found


def changed(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """The sandbox paths added, changed or removed between two snapshots."""
    return sorted(path for path in {*before, *after} if before.get(path) != after.get(path))
