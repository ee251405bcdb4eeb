"""``read_document``: the text of a PDF, DOCX, XLSX or PPTX file, or an image's format, size and EXIF,
read from the workspace through the sandbox.

The files an agent reads were written or chosen by the model, so they are never parsed in this
process: :func:`run_read_document` runs :mod:`._document_runner` in the sandbox with the running
interpreter's installation (the one that has the ``documents`` extra: ``pypdf``, ``python-docx``,
``openpyxl``, ``python-pptx``, ``Pillow``) bound read-only, plus only the directories of those
libraries and their dependencies (:func:`document_site`), under the run's command limits. A
hostile file (not what its name says, a zip bomb) is a tool error for the model, never a crash.

:func:`reads_documents` gives a scaffold's file-reading tool the same power for document paths
(the loop's Claude Code ``Read`` returns a PDF's text, as the real CLI's ``Read`` does through the
proxy).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from ..sandbox import documents as readers_module
from ..sandbox.backend import sandbox_python
from .tools import Tool, ToolContext, ToolResult, describe, generic

__all__ = ["DOCUMENT_SUFFIXES", "READ_DOCUMENT", "document_site", "reads_documents", "run_read_document"]

RUNNER = Path(__file__).resolve().with_name("_document_runner.py")
#: The shared document readers the runner loads (by path) inside the sandbox.
READERS = Path(readers_module.__file__).resolve()
#: Distributions of the ``documents`` extra; their dependencies are found from their metadata.
DOCUMENT_DISTRIBUTIONS = ("pypdf", "python-docx", "openpyxl", "python-pptx", "Pillow")
#: Suffixes :func:`reads_documents` sends to the document reader.
DOCUMENT_SUFFIXES = readers_module.DOCUMENT_SUFFIXES


def _requirement_names(dist: metadata.Distribution) -> list[str]:
    """The names of ``dist``'s unconditional requirements (extras skipped)."""
    names = []
    for line in dist.requires or ():
        spec, _, marker = line.partition(";")
        if "extra" in marker:
            continue
        name = spec.strip().split("[")[0]
        for stop in "<>=!~ (":
            name = name.split(stop)[0]
        if name:
            names.append(name)
    return names


@cache
def document_site() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the ``sys.path`` entries, the paths to bind read-only) for the documents libraries: each
    installed distribution's top-level files and directories, dependencies included."""
    seen: set[str] = set()
    todo = list(DOCUMENT_DISTRIBUTIONS)
    roots: set[str] = set()
    binds: set[str] = set()
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        root = os.path.realpath(str(dist.locate_file("")))
        for file in dist.files or ():
            top = file.parts[0] if file.parts else ""
            if not top or top in ("..", "__pycache__") or top.endswith(".dist-info"):
                continue
            path = os.path.join(root, top)
            if os.path.exists(path):
                roots.add(root)
                binds.add(path)
        todo += _requirement_names(dist)
    return tuple(sorted(roots)), tuple(sorted(binds))


async def run_read_document(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    """Run one extraction in the sandbox (see the module doc)."""
    executable, extra = sandbox_python()
    site, binds = document_site()
    request = {"path": args["path"], "site": list(site), "max_chars": ctx.options.max_output_chars,
               "readers": str(READERS)}
    limits = ctx.limits()
    result = await ctx.command([executable, "-I", "-S", "-B", str(RUNNER)], stdin=json.dumps(request),
                               extra_ro=(*extra, *binds, str(RUNNER), str(READERS)))
    try:
        out = result.stdout.decode("utf-8", "replace") if isinstance(result.stdout, bytes) else result.stdout
        reply = json.loads(out or "")
        return ToolResult(content=str(reply["output"]), is_error=not reply["ok"])
    except (ValueError, KeyError, TypeError):
        return ToolResult(content=f"the document could not be read: {describe(result, limits)}", is_error=True,
                          limit=result.limit)


READ_DOCUMENT = generic(
    "read_document", "Read a document: the text of a PDF, DOCX, XLSX (cell values) or PPTX (slides, tables, notes) "
    "file, or an image's format, size and EXIF metadata. Use read_file for plain text files.",
    {"type": "object", "properties": {"path": {"type": "string", "description": "File path, relative to the "
                                               "workspace or absolute."}},
     "required": ["path"], "additionalProperties": False}, run_read_document)


def reads_documents(tool: Tool, path_key: str) -> Tool:
    """``tool`` (a file-reading tool) answering document paths (``arguments[path_key]``, by suffix) with
    :func:`run_read_document` and everything else as before."""
    base = tool.run

    async def run(arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        path = arguments.get(path_key)
        if isinstance(path, str) and os.path.splitext(path)[1].lower() in DOCUMENT_SUFFIXES:
            return await run_read_document({"path": path}, ctx)
        return await base(arguments, ctx)

    return replace(tool, run=run)
