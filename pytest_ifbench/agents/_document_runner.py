"""Sandbox side of ``read_document``: one request in, one reply out.

Run *inside* the sandbox by file path (bound read-only) with the interpreter whose installation has
the ``documents`` extra, never imported there as part of ``pytest_ifbench``: the file it reads was
written (or chosen) by the model, so its parsers run where a hostile file can do no harm::

    python -I -S -B _document_runner.py  < {"path": "report.pdf", "max_chars": 100000,
                                             "site": ["/.../site-packages"], "readers": ".../documents.py"}
                                         > {"ok": true, "output": "[PDF, 1 page]\\n--- page 1 ---\\n..."}

``site`` are the directories added to ``sys.path`` (only the ``documents`` libraries and their
dependencies are bound there); ``readers`` is the path of the project's one set of document readers,
:mod:`pytest_ifbench.sandbox.documents` (bound read-only, loaded by path: nothing else of the package is
visible here). They check a file is what its name says and refuse a zip bomb unpacked before a parser
runs; the sandbox's memory and time limits stay the backstop. Every failure is a sentence for the model.
"""

import importlib.util
import json
import os
import sys


def _show(path):
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _readers(path):
    """The shared readers (``pytest_ifbench/sandbox/documents.py``), loaded from the file bound at ``path``."""
    spec = importlib.util.spec_from_file_location("ifbench_document_readers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_HEADERS = {".docx": "[DOCX]", ".xlsx": "[XLSX]", ".xlsm": "[XLSX]", ".pptx": "[PPTX]"}


def extract(path, readers):
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in readers.READERS and not os.path.isdir(path) and os.path.exists(path):
        raise readers.DocumentError(
            f"{_show(path)}: this tool reads PDF, DOCX, XLSX, PPTX and images "
            f"({', '.join(sorted(readers.IMAGE_SUFFIXES))}); read other files as text")
    text = readers.document_text(path, name=_show(path), all_tags=True)
    if suffix == ".pdf":
        pages = text.count("--- page ")
        return f"[PDF, {pages} page{'s' if pages != 1 else ''}]\n{text}"
    return f"{_HEADERS[suffix]}\n{text}" if suffix in _HEADERS else text


def _limit(req):
    """Caps of its own (``memory_mb``, ``cpu_seconds``) where no sandbox sets them (the proxy's use)."""
    import resource

    if req.get("memory_mb"):
        size = int(req["memory_mb"]) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    if req.get("cpu_seconds"):
        seconds = int(req["cpu_seconds"])
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))


def answer(req):
    _limit(req)
    for directory in reversed(req.get("site") or []):
        sys.path.insert(0, directory)
    path = req.get("path")
    try:
        readers = _readers(req["readers"])
        if not isinstance(path, str) or not path:
            raise readers.DocumentError("path must be a file path")
        text = extract(path, readers)
    except ImportError as exc:
        return {"ok": False, "output": f"reading {_show(path)} needs the 'documents' extra, missing here ({exc})"}
    except OSError as exc:
        return {"ok": False, "output": f"{exc.strerror or type(exc).__name__}: {_show(path)}"}
    except MemoryError:
        return {"ok": False, "output": f"{_show(path)} needs more memory than a document may take"}
    except Exception as exc:  # noqa: BLE001 - DocumentError, and parsers raise many kinds on a broken file
        if type(exc).__name__ == "DocumentError":
            return {"ok": False, "output": str(exc)}
        return {"ok": False, "output": f"{_show(path)} could not be read ({type(exc).__name__}: {str(exc)[:300]})"}
    limit = int(req.get("max_chars") or 100_000)
    if len(text) > limit:
        text = text[:limit] + f"\n[... {len(text) - limit:,} more characters not shown]"
    return {"ok": True, "output": text}


def main():
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    sys.stdout.write(json.dumps(answer(request), ensure_ascii=False))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
