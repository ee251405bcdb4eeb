"""What a CLI loads or starts when it starts, as the run left it: changed between two commands, the agent changed the
CLI.

A real CLI of a multi-turn instance starts again for every user turn, and some load code into their own process
at start-up from places the agent's tool commands can write: Kilo imports the custom tools of
``{tool,tools}/*`` in its global configuration directory (``~/.config/kilo``) and in the workspace's
``.kilo``/``.kilocode``, whatever ``KILO_PURE`` says, and reads its system prompt's instruction file from HOME.
A tool written in turn 1 ran as the CLI in turn 2 (posting to the relay as the CLI, writing files with no tool
call). A CLI declares those places (:attr:`~.clis.AgentCli.loads_at_start`); the runner takes
:func:`snapshot` once the CLI is configured and compares it before every later command (:func:`changed`): a file
added, changed or removed there is the agent's doing, and its run ends before the CLI could load it.

Some of what a CLI starts is named inside a file rather than by where it lies: an MCP server's entry in a file the
CLI also keeps its own state in (Claude Code's ``~/.claude.json``, rewritten by the CLI itself), and the program a
local (stdio) MCP server runs -- ``sh /workspace/tool.sh``, ``node ./server.js``, ``python server.py`` -- which the
CLI starts as its own child. A CLI compares those through :meth:`~.clis.AgentCli.startup_state`, with the helpers
here: :func:`read_config` and :func:`digest` (only the part of a file that decides what starts: the CLI's own writes
to the rest are not the agent's), and :func:`programs` (the files a command line names in the workspace or HOME,
resolved against the workspace as the CLI's working directory: the agent rewriting one ends its run as well).

Nothing is followed out of the workspace or HOME: a symbolic link is compared by where it points, a directory
reached through one is not read, and only regular files are read (their first 4 MiB and their size; up to 64 MiB
of a configuration file is parsed, a larger one is compared as it is). What a program itself reads is not
followed: the modules a ``server.py`` imports, the files a script sources, a ``python -m`` module; nor a program
named by a bare name (found on the sandbox's ``PATH``, which holds no directory the agent's commands write; a
``PATH`` the CLI's own configuration sets, as Claude Code's settings ``env`` can, is the CLI's to compare), nor
environment variables in a command line other than ``HOME`` and ``PWD``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import posixpath
import re
import shlex
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..sandbox.backend import HOME, MOUNT

__all__ = ["changed", "digest", "programs", "read_config", "sandbox_path", "snapshot"]

_READ = 4 << 20
#: How much of a configuration file :func:`read_config` parses (more is unparsable, compared as it is).
_CONFIG_READ = 64 << 20
_REGULAR = re.compile(r"[0-9a-f]{64} [0-9]+")


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


def sandbox_path(path: str) -> str:
    """The sandbox path of a pattern's path (``~/...``: below HOME, others below the workspace)."""
    return f"{HOME}/{path[2:]}" if path.startswith("~/") else f"{MOUNT}/{path}"


def _walk(shown: str, *, workspace: Path, home: Path) -> tuple[Path | None, str | None]:
    """(host path, None) of the entry at the sandbox path ``shown`` (normalized, in the workspace or HOME) when every
    directory on the way is one, not a link; else (None, the state of the first that is not, or None when absent);
    (None, None) for a path elsewhere."""
    roots = [(root, top) for root, top in ((workspace, MOUNT), (home, HOME))
             if shown == top or shown.startswith(top + "/")]
    if not roots:
        return None, None
    (root, top), = roots
    parts = PurePosixPath(shown).relative_to(top).parts
    directory, seen = root, top
    for part in parts[:-1]:
        directory, seen = directory / part, f"{seen}/{part}"
        state = _state(directory)
        if state != "directory":
            return None, None if state is None else f"{seen}: {state}"
    return directory / parts[-1] if parts else root, None


def read_config(path: str, *, workspace: Path, home: Path,
                parse: Callable[[str], Any] = json.loads) -> tuple[Any, str | None]:
    """What the configuration file at ``path`` (a pattern's path, no glob) holds, parsed: (data, None); (None, None)
    when nothing is there; (None, its state) when what is there is no regular file that ``parse`` reads (a link, a
    directory, unreadable or malformed text): compared as it is."""
    host, odd = _walk(sandbox_path(path), workspace=workspace, home=home)
    state = odd if host is None else _state(host)
    if host is None or state is None or not _REGULAR.fullmatch(state):
        return None, state
    try:
        with host.open("rb") as handle:
            return parse(handle.read(_CONFIG_READ).decode("utf-8")), None
    except (OSError, ValueError) as exc:  # (UnicodeDecodeError and the parsers' errors are ValueErrors)
        return None, f"{state} (unparsable: {type(exc).__name__})"


def digest(value: Any) -> str | None:
    """A value's state, as its canonical JSON: None when it is empty (no entry, ``{}``, ``[]``, ``false``, ``""``)."""
    if value in (None, {}, [], False, ""):
        return None
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


_VARIABLE = re.compile(r"\$\{(HOME|PWD)\}|\$(HOME|PWD)\b")


def programs(argvs: Iterable[Iterable[Any]], *, workspace: Path, home: Path, cwd: str = MOUNT) -> dict[str, str]:
    """The files the command lines ``argvs`` name in the workspace or HOME, by sandbox path, as :func:`snapshot`
    reports them: each word (and a shell command's words, and what follows a ``--flag=``) resolved against ``cwd``,
    ``~``, ``$HOME`` and ``$PWD`` expanded. A name that is no file there now is left out (one created later is an
    addition); see the module doc for what is not followed."""
    found: dict[str, str] = {}
    for argv in argvs:
        for word in _words(argv):
            word = _VARIABLE.sub(lambda m: HOME if "HOME" in m.group(0) else cwd, word)
            if word.startswith("~/"):
                word = HOME + word[1:]
            shown = posixpath.normpath(posixpath.join(cwd, word))
            host, odd = _walk(shown, workspace=workspace, home=home)
            if odd is not None:
                found[shown] = odd
            elif host is not None and (state := _state(host)) is not None:
                found[shown] = state
    return found


def _words(argv: Iterable[Any]) -> list[str]:
    words: list[str] = []
    for item in argv:
        if not isinstance(item, str) or not item.strip() or "\0" in item:
            continue
        words.append(item)
        if any(char.isspace() for char in item):  # a shell command (``sh -c "python x.py"``)
            try:
                words += shlex.split(item)
            except ValueError:
                words += item.split()
    words += [word.split("=", 1)[1] for word in words if word.startswith("-") and "=" in word]
    return list(dict.fromkeys(words))
