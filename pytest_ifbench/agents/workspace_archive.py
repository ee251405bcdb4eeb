"""What an agent run changed in its workspace, kept beside its trajectory so that a re-score has it.

``ifbench score --trajectories`` decides an agent run's checks again without running the agent. Trajectory
checks and the judge need only the trajectory; the checks of the final workspace (``ifbench.file_*``,
``ifbench.workspace_command``) and a judge shown the deliverables need the files the agent left. So with
``--ifbench-trajectories DIR`` each run's workspace is written beside its trajectory, as
``<trajectory stem>.workspace.tar.gz``, once its HOME and ``/tmp`` are cleared: what its checks saw.

Only the changes against the instance's environment are kept (the files, links and directories that are new
or differ, byte for byte, and the names of those removed, in the archive's PAX header ``ifbench.removed``):
the environment is the suite's own, there again at the re-score, and a repository an agent changed three
files of keeps three files, not the repository. A re-score copies the environment, applies the changes
(:func:`rebuild`) and opens a fresh sandbox workspace on the result, where those checks run as they ran live.

Packed: regular files, directories and symbolic links (as links). FIFOs, sockets and devices are left out:
the checks refuse them anyway. Owners become root's (the sandbox's uid is the run's own); modes are kept.
Changes holding more than :data:`MAX_BYTES` of files are not packed (the record says why). Unpacking takes
tarfile's ``data`` filter: no absolute names, no links leading out, no special files, no set-uid bits.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["MAX_BYTES", "archive_path", "pack", "rebuild", "reopen"]

#: The largest change packed, in bytes of its regular files (100 MiB).
MAX_BYTES = 100 << 20
_SUFFIX = ".workspace.tar.gz"
_REMOVED = "ifbench.removed"


def archive_path(trajectory: Path) -> Path:
    """Where the workspace of the run whose trajectory is ``trajectory`` is kept."""
    return trajectory.with_name(trajectory.name.removesuffix(".json") + _SUFFIX)


def pack(workspace: Path, target: Path, *, environment: Path | None = None, max_bytes: int = MAX_BYTES) -> str | None:
    """Write what ``workspace`` changed against ``environment`` (None: an empty one) to ``target``; None when
    written, else why it was not."""
    changed = sorted(_changed(workspace, environment))
    size = sum(os.lstat(workspace / name).st_size for name in changed if (workspace / name).is_file()
               and not (workspace / name).is_symlink())
    if size > max_bytes:
        return f"not kept: its changes hold {size:,} bytes of files, over the {max_bytes:,} kept"
    removed = sorted(_removed(workspace, environment)) if environment is not None else []
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with tarfile.open(partial, "w:gz", compresslevel=1, format=tarfile.PAX_FORMAT,
                          pax_headers={_REMOVED: json.dumps(removed)}) as tar:
            # The root first: tarfile cannot read an archive holding no member (its header alone), which a run
            # that changed nothing, or only removed files, would otherwise write.
            tar.add(workspace, arcname=".", recursive=False, filter=_plain)
            for name in changed:
                tar.add(workspace / name, arcname=name, recursive=False, filter=_plain)
        os.replace(partial, target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        return f"not kept: {exc.strerror or exc}"
    return None


def rebuild(archive: Path, into: Path, *, environment: Path | None, max_bytes: int = MAX_BYTES) -> None:
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
            size = sum(member.size for member in members if member.isreg())
            if size > max_bytes:
                raise ValueError(f"{archive}: its files hold {size:,} bytes, over the {max_bytes:,} a workspace may")
            # What the run removed goes, and so does what a member replaces (a file where a link or a directory
            # was, or the reverse): extraction would not overwrite a directory, nor write through a link.
            _remove(into, [*removed, *(member.name for member in members if _replaces(into, member))])
            tar.extractall(into, members=members, filter="data")
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


def _changed(workspace: Path, environment: Path | None) -> Iterator[str]:
    """Relative names of what is new or different in ``workspace``: directories, files and links."""
    for directory, dirs, files in os.walk(workspace):
        for name in (*dirs, *files):
            path = Path(directory, name)
            relative = path.relative_to(workspace).as_posix()
            if environment is None or not _same(path, environment / relative):
                yield relative


def _same(path: Path, base: Path) -> bool:
    try:
        mine, theirs = os.lstat(path), os.lstat(base)
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


def _removed(workspace: Path, environment: Path) -> Iterator[str]:
    """Relative names in ``environment`` that ``workspace`` no longer has (the topmost of a removed tree)."""
    for directory, dirs, files in os.walk(environment):
        for name in (*dirs, *files):
            relative = Path(directory, name).relative_to(environment)
            if not os.path.lexists(workspace / relative):
                yield relative.as_posix()
                if name in dirs:
                    dirs.remove(name)


def _remove(root: Path, names: list[str]) -> None:
    """Remove each of ``names`` below ``root``; a name leading outside it is refused."""
    from .workspace import _remove as remove_tree  # whatever the tree holds (read-only, very deep)

    top = os.path.realpath(root)
    for name in names:
        target = root / name
        inside = os.path.realpath(target.parent) + os.sep
        if ".." in Path(name).parts or Path(name).is_absolute() or not inside.startswith(top + os.sep):
            raise ValueError(f"a name outside the workspace: {name!r}")
        if target.is_dir() and not target.is_symlink():
            remove_tree(target)
        elif os.path.lexists(target):
            target.unlink()


def _replaces(root: Path, member: tarfile.TarInfo) -> bool:
    """Whether ``member`` replaces what is at its name: anything, but a directory where a directory is."""
    target = root / member.name
    return os.path.lexists(target) and not (member.isdir() and target.is_dir() and not target.is_symlink())


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if not (info.isreg() or info.isdir() or info.issym() or info.islnk()):
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info
