"""What an agent run changed in its workspace, kept beside its trajectory so that a re-score has it.

``ifbench score --trajectories`` decides an agent run's checks again without running the agent. Trajectory
checks and the judge need only the trajectory; the checks of the final workspace (``ifbench.file_*``,
``ifbench.workspace_command``) and a judge shown the deliverables need the files the agent left. So with
``--ifbench-trajectories DIR`` each run's workspace is written beside its trajectory, as
``<trajectory stem>.workspace.tar.gz``, once its HOME and ``/tmp`` are cleared: what its checks saw.

Only the changes against the instance's environment are kept (the files, links and directories that are new
or differ, byte for byte or in mode, and the names of those removed, in the archive's PAX header
``ifbench.removed``): the environment is the suite's own, there again at the re-score, and a repository an
agent changed three files of keeps three files, not the repository. A re-score copies the environment, applies
the changes (:func:`rebuild`) and opens a fresh sandbox workspace on the result, where those checks run as
they ran live.

Packed: regular files (a file with holes as a GNU sparse member, its data only), directories, symbolic links
as they were (wherever they point: in the re-score's sandbox a link is only a name) and hard links. Owners
become root's (the sandbox's uid is the run's own); permission bits are kept, set-uid, set-gid and sticky bits
are not. The workspace is the agent's: whatever it left, :func:`pack` never raises for it. Changes holding more
than :data:`MAX_BYTES` of data or :data:`MAX_SIZE` of file sizes (holes included), a workspace of more than
:data:`MAX_ENTRIES` entries (its walk stops there), a tree deeper than :data:`MAX_DEPTH`, a FIFO, socket or
device among the changes (the live checks saw it, ``file_exists`` or a command's ``test -p``, and a re-score's
workspace cannot hold one: left out, the re-score would decide them otherwise), or anything that cannot be read
are not packed, and the record says why; a re-score then errors the checks that read the workspace.

Unpacking (:func:`rebuild`) removes what the run removed, then writes the members in archive order, each
replacing what the environment had at its name (a directory where a file was, ...). It refuses what the packer
never writes, member by member just before it is written (:func:`_unpack_filter`, in place of tarfile's
``data`` filter, which refuses links leading out and resets modes): absolute names, ``..``, names deeper than
:data:`MAX_DEPTH`, special files, a name written twice, a name or a hard link's target that goes through a link
(nothing is written, linked or chmod-ed through one), and archives over the limits.
"""

from __future__ import annotations

import errno
import filecmp
import json
import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .._text import printable
from ..sandbox.backend import Limits

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_ENTRIES", "MAX_SIZE", "archive_path", "pack", "rebuild", "reopen"]

#: The largest change packed, in bytes of its files' data (100 MiB); the holes of a sparse file are not data.
MAX_BYTES = 100 << 20
#: The largest change packed, in bytes of its files' sizes, holes included (1 GiB): a re-score copies the
#: rebuilt workspace into its sandbox, where holes become data.
MAX_SIZE = 1 << 30
#: The deepest name packed, in directories: a re-score copies the workspace with recursive functions.
MAX_DEPTH = 256
#: The most entries (files, links, directories) a workspace packed holds, the run's own cap
#: (``Limits.max_workspace_entries``); a run's 642,570 empty files took 180 s to pack.
MAX_ENTRIES = Limits().max_workspace_entries
_SUFFIX = ".workspace.tar.gz"
_REMOVED = "ifbench.removed"
_CHUNK = 1 << 20


class _NotKept(Exception):
    """Why a workspace is not packed."""


def archive_path(trajectory: Path) -> Path:
    """Where the workspace of the run whose trajectory is ``trajectory`` is kept."""
    return trajectory.with_name(trajectory.name.removesuffix(".json") + _SUFFIX)


def pack(workspace: Path, target: Path, *, environment: Path | None = None, max_bytes: int = MAX_BYTES,
         max_size: int = MAX_SIZE) -> str | None:
    """Write what ``workspace`` changed against ``environment`` (None: an empty one) to ``target``; None when
    written, else why it was not. Never raises for what the workspace holds: it is the agent's, and a problem
    packing it is the archive's (not kept), never an error of the instance."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        _pack(workspace, partial, environment, max_bytes, max_size)
        os.replace(partial, target)
    except _NotKept as exc:
        problem = str(exc)
    except OSError as exc:
        problem = f"{exc.strerror or exc}" + (f": {str(exc.filename)[-300:]}" if exc.filename else "")
    except Exception as exc:  # noqa: BLE001 - whatever the agent left (odd names, ...), never the instance's error
        problem = f"{type(exc).__name__}: {exc}"
    else:
        return None
    try:
        partial.unlink(missing_ok=True)
    except OSError:
        pass
    return f"not kept: {printable(problem)}"  # a name in it may not be UTF-8: the trajectory must hold it


def _pack(workspace: Path, partial: Path, environment: Path | None, max_bytes: int, max_size: int) -> None:
    root = os.fspath(workspace)
    changed = sorted(_changed(root, None if environment is None else os.fspath(environment)))
    holes: dict[str, list[tuple[int, int]]] = {}  # the data segments of each changed file that has holes
    data = size = 0
    for name, st in changed:
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            # The live checks saw it (``file_exists``, a command's ``test -p``): left out, a re-score would
            # decide them otherwise; not kept, it says they cannot be decided again.
            raise _NotKept(f"it holds a special file (FIFO, socket or device), which a re-score cannot make again: "
                           f"{name[:300]}")
        if stat.S_ISREG(st.st_mode):
            segments = _segments(os.path.join(root, name), st)
            data += sum(length for _, length in segments)
            size += st.st_size
            if segments != ([(0, st.st_size)] if st.st_size else []):
                holes[name] = segments
    if data > max_bytes:
        raise _NotKept(f"its changes hold {data:,} bytes of files, over the {max_bytes:,} kept")
    if size > max_size:
        raise _NotKept(f"its changed files are {size:,} bytes long (holes included), over the {max_size:,} kept")
    removed = sorted(_removed(root, os.fspath(environment))) if environment is not None else []
    with tarfile.open(partial, "w:gz", compresslevel=1, format=tarfile.PAX_FORMAT,
                      pax_headers={_REMOVED: json.dumps(removed)}) as tar:
        # The root first: tarfile cannot read an archive holding no member (its header alone), which a run
        # that changed nothing, or only removed files, would otherwise write.
        tar.addfile(_plain(tar.gettarinfo(root, arcname=".")))
        for name, _ in changed:
            _add(tar, os.path.join(root, name), name, holes.get(name))


def rebuild(archive: Path, into: Path, *, environment: Path | None, max_bytes: int = MAX_BYTES,
            max_size: int = MAX_SIZE) -> None:
    """The final workspace in the empty directory ``into``: a copy of ``environment`` with the archive's changes
    applied. ``ValueError`` when the archive is not one :func:`pack` could have written (too large, unsafe, not
    a gzipped tar)."""
    if not hasattr(tarfile, "data_filter"):  # Python 3.11.0-3.11.3: no extraction filters
        raise ValueError(f"{archive}: unpacking a workspace safely needs Python 3.11.4 or later")
    if environment is not None:
        shutil.copytree(environment, into, symlinks=True, dirs_exist_ok=True)
    try:
        with tarfile.open(archive, "r:gz") as tar:
            removed = json.loads(tar.pax_headers.get(_REMOVED, "[]"))
            if not isinstance(removed, list) or not all(isinstance(name, str) for name in removed):
                raise ValueError(f"{archive}: not a workspace archive: {_REMOVED} is not a list of names")
            members = tar.getmembers()
            if len(members) > MAX_ENTRIES + 1:  # and the workspace's root
                raise ValueError(f"{archive}: it holds {len(members):,} entries, over the {MAX_ENTRIES:,} a "
                                 "workspace may")
            files = [member for member in members if member.isreg()]
            if any(member.size < 0 or min(sum(member.sparse or [], ()), default=0) < 0 for member in files):
                raise ValueError(f"{archive}: not a workspace archive: a negative size")
            data = sum(_data(member) for member in files)
            if data > max_bytes:
                raise ValueError(f"{archive}: its files hold {data:,} bytes, over the {max_bytes:,} a workspace may")
            size = sum(member.size for member in files)
            if size > max_size:
                raise ValueError(f"{archive}: its files are {size:,} bytes long, over the {max_size:,} a workspace may")
            # What the run removed goes first (it lies in directories that stay directories); then each member,
            # in archive order, replaces what the environment has at its name (:func:`_unpacker`).
            _remove(into, removed)
            tar.extractall(into, members=members, filter=_unpacker())
    except (tarfile.TarError, EOFError, OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{archive}: not a workspace archive: {exc}") from None


def reopen(archive: Path, *, environment: Path | None, parent: Path | None, keep: bool, backend: Any) -> Any:
    """A fresh sandbox workspace (:class:`~.workspace.Workspace`) holding the final workspace ``archive`` kept
    (see :func:`rebuild`); ``ValueError`` for an archive it refuses, :class:`~.workspace.SandboxUnavailable`
    without a sandbox."""
    from .workspace import Workspace

    with tempfile.TemporaryDirectory(prefix="ifbench-reopen-") as files:
        rebuild(archive, Path(files), environment=environment)
        return Workspace.create(files, parent=parent, keep=keep, backend=backend)


def _walk(root: str, descend: Callable[[str], bool] = lambda name: True) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry below ``root``, by relative name, with its ``lstat``; the directories ``descend`` accepts
    are walked too, never a link. Without recursion (``os.walk`` recurses: a tree 1,100 directories deep made
    it raise ``RecursionError``), and not below :data:`MAX_DEPTH`."""
    stack = [""]
    while stack:
        directory = stack.pop()
        with os.scandir(os.path.join(root, directory) if directory else root) as entries:
            found = [(entry.name, entry.stat(follow_symlinks=False)) for entry in entries]
        for entry, st in found:
            name = f"{directory}/{entry}" if directory else entry
            if name.count("/") >= MAX_DEPTH:
                raise _NotKept(f"it holds a name over {MAX_DEPTH} directories deep: {name[:200]}...")
            yield name, st
            if stat.S_ISDIR(st.st_mode) and descend(name):
                stack.append(name)


def _changed(workspace: str, environment: str | None) -> Iterator[tuple[str, os.stat_result]]:
    """What is new or different in ``workspace`` (directories, files and links): relative names, ``lstat``.
    Its walk stops past :data:`MAX_ENTRIES` entries (changed or not)."""
    for count, (name, st) in enumerate(_walk(workspace), 1):
        if count > MAX_ENTRIES:
            raise _NotKept(f"it holds more than {MAX_ENTRIES:,} entries")
        if environment is None or not _same(os.path.join(workspace, name), st, os.path.join(environment, name)):
            yield name, st


def _same(path: str, mine: os.stat_result, base: str) -> bool:
    try:
        theirs = os.lstat(base)
    except OSError:
        return False
    if stat.S_IFMT(mine.st_mode) != stat.S_IFMT(theirs.st_mode) or stat.S_IMODE(mine.st_mode) != stat.S_IMODE(
            theirs.st_mode):
        return False
    if stat.S_ISLNK(mine.st_mode):
        return os.readlink(path) == os.readlink(base)
    if stat.S_ISREG(mine.st_mode):
        return mine.st_size == theirs.st_size and filecmp.cmp(path, base, shallow=False)
    return stat.S_ISDIR(mine.st_mode)


def _removed(workspace: str, environment: str) -> Iterator[str]:
    """Relative names in ``environment`` that ``workspace`` no longer has (the topmost of a removed tree; below
    a directory the workspace replaced by a file or a link, nothing: the member replacing it says it)."""

    def still_a_directory(name: str) -> bool:
        try:
            return stat.S_ISDIR(os.lstat(os.path.join(workspace, name)).st_mode)
        except OSError:
            return False

    for name, _ in _walk(environment, still_a_directory):
        if not os.path.lexists(os.path.join(workspace, name)):
            yield name


def _segments(path: str, st: os.stat_result) -> list[tuple[int, int]]:
    """The (offset, length) of the data of the regular file ``path``; its holes are not in them. A file with
    all its blocks, or on a file system that cannot say, is all data."""
    if st.st_blocks * 512 >= st.st_size or not hasattr(os, "SEEK_DATA"):
        return [(0, st.st_size)] if st.st_size else []
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        out: list[tuple[int, int]] = []
        offset = 0
        while offset < st.st_size:
            try:
                start = os.lseek(fd, offset, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # a hole to the end
                    break
                return [(0, st.st_size)]
            if start >= st.st_size:
                break
            end = min(os.lseek(fd, start, os.SEEK_HOLE), st.st_size)
            out.append((start, end - start))
            offset = end
        return out
    finally:
        os.close(fd)


def _add(tar: tarfile.TarFile, path: str, name: str, segments: list[tuple[int, int]] | None) -> None:
    """Add ``path`` as ``name``; a file with holes (``segments``: its data) as a GNU sparse 1.0 member: its data
    after a table of the segments, its size in ``GNU.sparse.realsize`` (tarfile reads it, and writes it with
    its holes)."""
    info = _plain(tar.gettarinfo(path, arcname=name))
    if info is None:
        return
    if not info.isreg():
        tar.addfile(info)
        return
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as source:
        if segments is None:
            tar.addfile(info, source)
            return
        table = "".join(f"{number}\n" for number in (len(segments), *sum(segments, ()))).encode()
        table += b"\0" * (-len(table) % tarfile.BLOCKSIZE)
        info.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": name,
                            "GNU.sparse.realsize": str(info.size)}
        info.size = len(table) + sum(length for _, length in segments)
        tar.addfile(info, _Chunks(table, source, segments))


class _Chunks:
    """A file object reading ``head``, then the ``segments`` of ``source``."""

    def __init__(self, head: bytes, source: Any, segments: list[tuple[int, int]]) -> None:
        self._chunks = self._read(head, source, segments)
        self._chunk, self._at = b"", 0

    @staticmethod
    def _read(head: bytes, source: Any, segments: list[tuple[int, int]]) -> Iterator[bytes]:
        yield head
        for offset, length in segments:
            source.seek(offset)
            while length > 0:
                chunk = source.read(min(length, _CHUNK))
                if not chunk:  # shorter than it was: tarfile says "unexpected end of data"
                    return
                length -= len(chunk)
                yield chunk

    def read(self, n: int) -> bytes:
        parts = []
        while n > 0:
            if self._at >= len(self._chunk):
                self._chunk, self._at = next(self._chunks, b""), 0
                if not self._chunk:
                    break
            part = self._chunk[self._at:self._at + n]
            self._at += len(part)
            n -= len(part)
            parts.append(part)
        return b"".join(parts)


def _data(member: tarfile.TarInfo) -> int:
    """The bytes of data a file member writes: its holes are not written."""
    return member.size if member.sparse is None else sum(length for _, length in member.sparse)


class _Refused(tarfile.FilterError):
    """A member no archive :func:`pack` writes holds."""


def _parts(name: str) -> list[str]:
    """The parts of a member's name, which stays below the destination and within :data:`MAX_DEPTH`."""
    if name.startswith("/") or os.path.isabs(name):
        raise _Refused(f"an absolute name: {name!r}")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise _Refused(f"a name leading out: {name!r}")
    if len(parts) > MAX_DEPTH:
        raise _Refused(f"a name over {MAX_DEPTH} directories deep: {name[:200]!r}...")
    return parts


def _below(root: str, name: str) -> str:
    """The path of ``name`` below ``root``, refused when a directory on its way is a link (or not a directory):
    nothing is written, removed, linked to or chmod-ed through a link, wherever it leads."""
    parts = _parts(name)
    path = root
    for part in parts[:-1]:
        path = os.path.join(path, part)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            break  # made as a directory by the extraction
        if not stat.S_ISDIR(st.st_mode):
            raise _Refused(f"{name!r} goes through {os.path.relpath(path, root)!r}, which is not a directory")
    return os.path.join(root, *parts)


def _unpacker() -> Callable[[tarfile.TarInfo, str], tarfile.TarInfo]:
    """The extraction filter of one archive (:func:`_unpack_filter`), which knows what its members wrote."""
    written: set[str] = set()  # the names members wrote, and the directories on their way
    return lambda member, dest: _unpack_filter(member, dest, written)


def _unpack_filter(member: tarfile.TarInfo, dest: str, written: set[str]) -> tarfile.TarInfo:
    """tarfile's extraction filter for a workspace archive, called on each member just before it is written
    (so it sees what the members before it made). Links are kept as they were, wherever they point: tarfile's
    ``data`` filter refuses one leading out (a venv's ``python`` -> ``/usr/bin/python3``), which a sandbox
    workspace holds harmlessly, and resets the modes a check may test. What it guarded against is refused
    here instead: absolute and ``..`` names, special files, writing through a link (:func:`_below`, and a name
    written twice: tarfile's ``open(name, "wb")`` would follow a link extracted there before), a hard link to
    anything but a file extracted before; set-uid, set-gid and sticky bits and owners go.

    What the environment has at the member's name goes first (a file where a link or a directory was, or the
    reverse: extraction would not overwrite a directory, nor write through a link), here, member by member:
    ``README.md/sub`` then goes through the directory ``README.md`` that replaced the environment's file.
    What ``written`` holds (a member, or a directory on a member's way) is never replaced."""
    if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
        raise _Refused(f"{member.name!r} is a special file (FIFO, socket or device)")
    target = _below(dest, member.name)
    parts = _parts(member.name)
    if not parts and not member.isdir():  # the root member, ".": the workspace's own mode
        raise _Refused(f"the workspace itself is not a directory: {member.name!r}")
    if parts and os.path.lexists(target) and not (member.isdir() and _is_directory(target)):
        if "/".join(parts) in written:
            raise _Refused(f"{member.name!r} is written twice")
        _remove(Path(dest), [member.name])
    if member.islnk():
        linked = _below(dest, member.linkname)
        if ("/".join(_parts(member.linkname)) not in written or not os.path.lexists(linked)
                or not stat.S_ISREG(os.lstat(linked).st_mode)):
            raise _Refused(f"{member.name!r} is a hard link to {member.linkname!r}, no file extracted before")
    written.add("/".join(parts))
    for end in range(len(parts) - 1, 0, -1):
        if (parent := "/".join(parts[:end])) in written:
            break
        written.add(parent)
    return member.replace(mode=None if member.issym() else member.mode & 0o777, uid=None, gid=None, uname=None,
                          gname=None, deep=False)


def _is_directory(path: str) -> bool:
    return stat.S_ISDIR(os.lstat(path).st_mode)


def _remove(root: Path, names: list[str]) -> None:
    """Remove each of ``names`` below ``root``; a name leading outside it, or through a link, is refused."""
    from .workspace import _remove as remove_tree  # whatever the tree holds (read-only, very deep)

    for name in names:
        if not _parts(name):
            raise _Refused(f"the workspace itself cannot be removed: {name!r}")
        target = _below(os.fspath(root), name)
        if os.path.lexists(target) and _is_directory(target):
            remove_tree(Path(target))
        elif os.path.lexists(target):
            os.unlink(target)


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if not (info.isreg() or info.isdir() or info.issym() or info.islnk()):
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info
