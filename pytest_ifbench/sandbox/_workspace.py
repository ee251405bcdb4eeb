"""Working directories for sandboxed children: create, populate, remove.

Kept apart from supervision (:mod:`._process`), which only ever receives an
explicit ``cwd``: *who* owns a directory and *how long* it lives is the front
end's decision.  The Python front ends use :func:`throwaway_workdir` (one
fresh directory per child, deleted afterwards); a front end that runs many
commands in one persistent workspace would create it here once (e.g. as a
copy of an environment directory), pass it as ``cwd`` to every command and
call :func:`remove_tree` at the end.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager


@contextmanager
def throwaway_workdir(prefix: str = "ifbench-sbx-") -> Iterator[str]:
    """A fresh private temporary directory (``realpath``-resolved, so the
    child's audit hook compares against the same spelling), removed on exit."""
    workdir = os.path.realpath(tempfile.mkdtemp(prefix=prefix))
    try:
        yield workdir
    finally:
        remove_tree(workdir)


def write_files(workdir: str, files: Mapping[str, str | bytes] | None) -> None:
    """Write ``files`` (relative path -> text or bytes) below ``workdir``.

    Raises ``ValueError`` for absolute paths and paths escaping ``workdir``."""
    if not files:
        return
    for name, content in files.items():
        rel = os.path.normpath(str(name))
        if os.path.isabs(rel) or rel == "." or rel.split(os.sep)[0] == "..":
            raise ValueError(f"sandbox file name must be a relative path inside the work dir: {name!r}")
        target = os.path.join(workdir, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        with open(target, "wb") as fh:
            fh.write(data)


def remove_tree(path: str) -> None:
    """Delete ``path`` recursively, even where the child removed permissions; never raises."""
    def onerror(func, p, _exc):  # make it writable and retry once
        try:
            os.chmod(p, 0o700)
            parent = os.path.dirname(p)
            os.chmod(parent, 0o700)
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=onerror)
    if os.path.exists(path):
        shutil.rmtree(path, ignore_errors=True)
