"""What the judge is shown of a task's files: the question's attachments, the files the agent produced
(new or changed in the final workspace versus the environment) and the reference answer's files.

Each file becomes a :class:`Material`: its text (:func:`.documents.convert`) and, for images and rendered
HTML/SVG, PNG data URLs for a vision judge. Agent files are read through ``Workspace.read_bytes`` (no
symbolic link followed, no special file) into a private temporary directory before any library opens them.

The agent chose the names and the bytes: a tree deeper than :data:`MAX_DEPTH` is left out with a note (the
walk does not recurse: ``os.walk`` raised ``RecursionError`` on one 1,200 directories deep), and names, texts
and notes are made encodable, names printable too, before a judge call carries them.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ifbench import printable, utf8_safe

from . import documents, screenshot

MAX_FILES = 30
MAX_FILE_BYTES = 20 << 20
_SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv"})
#: The deepest file shown, in directories (a kept workspace's own limit, ``agents.workspace_archive``).
MAX_DEPTH = 256
_SHOWN_DEEP = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class Material:
    """One file as the judge sees it: ``text`` always, ``images`` (data URLs) when it has a picture."""

    name: str
    text: str
    images: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def material(path: Path, *, name: str | None = None, limit: int = documents.DEFAULT_LIMIT,
             render: bool = True) -> Material:
    """``path`` converted; images (and HTML/SVG screenshots when ``render``) as PNG data URLs."""
    name = printable(name or path.name)
    text = documents.convert(path, limit=limit, name=name)
    suffix = path.suffix.lower()
    images: list[str] = []
    notes: list[str] = []
    if suffix in documents.IMAGE_SUFFIXES and (url := documents.image_payload(path)):
        images.append(url)
    elif suffix in documents.RENDERED_SUFFIXES and render:
        shot = screenshot.render(path)
        notes.append(shot.note)
        if shot.png is not None:
            with tempfile.TemporaryDirectory(prefix="ifbench-shot-") as tmp:
                png = Path(tmp) / "shot.png"
                png.write_bytes(shot.png)
                if url := documents.image_payload(png):
                    images.append(url)
    return Material(name=name, text=utf8_safe(text), images=tuple(images),
                    notes=tuple(utf8_safe(note) for note in notes))


def from_paths(paths: Iterable[tuple[str, Path]], **kwargs: Any) -> list[Material]:
    """Materials of ``(name, path)`` pairs; a missing file becomes a "cannot read" material."""
    return [material(path, name=name, **kwargs) for name, path in paths]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _environment_digests(environment: Path | None) -> dict[str, str]:
    out: dict[str, str] = {}
    if environment is None or not environment.is_dir():
        return out
    for relative in workspace_files(environment):
        out[relative] = _digest((environment / relative).read_bytes())
    return out


def workspace_files(root: Path, notes: list[str] | None = None) -> list[str]:
    """Relative paths of the regular files under ``root`` (links and special files skipped, tool
    directories such as ``.git`` left out), sorted. What lies over :data:`MAX_DEPTH` directories deep, and a
    directory that cannot be listed, is left out, said in ``notes``."""
    deep: list[str] = []

    def unreadable(name: str, exc: OSError) -> None:
        if notes is not None:
            notes.append(f"left out, cannot list {printable(name or '.')}: {exc.strerror or exc}")

    entries = _walk(os.fspath(root), deep.append, unreadable)
    found = sorted(name for name, st in entries if stat.S_ISREG(st.st_mode))
    if deep and notes is not None:
        shown = ", ".join(printable(name[:200]) + "..." for name in deep[:_SHOWN_DEEP])
        more = f" and {len(deep) - _SHOWN_DEEP:,} more" if len(deep) > _SHOWN_DEEP else ""
        notes.append(f"left out, over {MAX_DEPTH} directories deep: {shown}{more}")
    return found


def _walk(root: str, too_deep: Callable[[str], object],
          unreadable: Callable[[str, OSError], None]) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry below ``root`` by relative name, with its ``lstat``, without recursion; no link and no tool
    directory walked. A name over :data:`MAX_DEPTH` directories deep goes to ``too_deep``, a directory that
    cannot be listed to ``unreadable`` (``""``: ``root``); neither is walked."""
    stack = [""]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(os.path.join(root, directory) if directory else root) as entries:
                found = [(entry.name, entry.stat(follow_symlinks=False)) for entry in entries]
        except OSError as exc:
            unreadable(directory, exc)
            continue
        for entry, st in found:
            name = f"{directory}/{entry}" if directory else entry
            if name.count("/") >= MAX_DEPTH:
                too_deep(name)
            else:
                yield name, st
                if stat.S_ISDIR(st.st_mode) and entry not in _SKIP_DIRS:
                    stack.append(name)


def produced(workspace: Any, environment: Path | None) -> tuple[list[str], list[str]]:
    """(new or changed files of the final workspace, notes on what was left out)."""
    before = _environment_digests(environment)
    changed: list[str] = []
    notes: list[str] = []
    for relative in workspace_files(Path(workspace.path), notes):
        try:
            data = workspace.read_bytes(relative, max_bytes=MAX_FILE_BYTES + 1)
        except (OSError, ValueError) as exc:
            notes.append(printable(f"cannot read {relative}: {exc}"))
            continue
        if before.get(relative) != _digest(data):
            changed.append(relative)
    if len(changed) > MAX_FILES:
        notes.append(printable(f"{len(changed) - MAX_FILES} more produced files not shown: "
                               f"{', '.join(changed[MAX_FILES:])}"))
        changed = changed[:MAX_FILES]
    return changed, notes


def produced_materials(workspace: Any, environment: Path | None, **kwargs: Any) -> tuple[list[Material], list[str]]:
    """The agent's new or changed files as materials, copied out of the workspace first."""
    names, notes = produced(workspace, environment)
    out = []
    with tempfile.TemporaryDirectory(prefix="ifbench-agentif-") as tmp:
        for index, relative in enumerate(names):
            data = workspace.read_bytes(relative, max_bytes=MAX_FILE_BYTES + 1)
            if len(data) > MAX_FILE_BYTES:
                out.append(Material(name=printable(relative),
                                    text=f"cannot read {printable(relative)}: over {MAX_FILE_BYTES:,} bytes"))
                continue
            copy = Path(tmp) / str(index) / Path(relative).name
            copy.parent.mkdir()
            copy.write_bytes(data)
            out.append(material(copy, name=relative, **kwargs))
    return out, notes


def attachment_paths(instance: Any) -> list[tuple[str, Path]]:
    """The task's attachments: every file of its environment, by relative name."""
    environment = instance.environment
    if environment is None or not Path(environment).is_dir():
        return []
    return [(rel, Path(environment) / rel) for rel in workspace_files(Path(environment))]


def reference_paths(instance: Any) -> list[tuple[str, Path]]:
    """The reference answer's files (``metadata.reference_attachments``, relative to the suite file)."""
    base = Path(instance.suite).parent
    files: Sequence[str] = instance.metadata.get("reference_attachments") or ()
    return [(Path(name).name, (base / name)) for name in files]
