"""Sandbox side of ``read_document``: one request in, one reply out.

Run *inside* the sandbox by file path (bound read-only) with the interpreter whose installation has
the ``documents`` extra, never imported there as part of ``pytest_ifbench``: the file it reads was
written (or chosen) by the model, so its parsers run where a hostile file can do no harm::

    python -I -S -B _document_runner.py  < {"path": "report.pdf", "max_chars": 100000,
                                             "site": ["/.../site-packages"]}
                                         > {"ok": true, "output": "[PDF, 1 page]\\n--- page 1 ---\\n..."}

``site`` are the directories added to ``sys.path`` (only the ``documents`` libraries and their
dependencies are bound there). Before a parser runs, the file is checked to be what its name says
(a PDF starts with ``%PDF-``; DOCX/XLSX/PPTX are ZIP archives with the part their format needs) and a
ZIP's declared unpacked size is bounded, so a zip bomb is refused without being unpacked; the
sandbox's memory and time limits stay the backstop. Every failure is a sentence for the model.
"""

import json
import os
import sys
import zipfile

MAX_FILE_BYTES = 50 * 1024 * 1024
#: A ZIP-based document declaring more than this unpacked, or compressed more than MAX_RATIO:1, is refused.
MAX_UNPACKED_BYTES = 200 * 1024 * 1024
MAX_RATIO = 200
MAX_PIXELS = 80_000_000
IMAGES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff"}
#: The ZIP part each Office format cannot do without.
OFFICE_PART = {".docx": "word/document.xml", ".xlsx": "xl/workbook.xml", ".xlsm": "xl/workbook.xml",
               ".pptx": "ppt/presentation.xml"}


class ToolError(Exception):
    """A failure explained to the model (the reply has ``ok: false``)."""


def _show(path):
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _check_zip(path, suffix):
    """Refuse what is not the ZIP package ``suffix`` says, or unpacks to too much."""
    if not zipfile.is_zipfile(path):
        raise ToolError(f"{_show(path)} is not a {suffix[1:].upper()} file (not a ZIP package)")
    with zipfile.ZipFile(path) as archive:
        entries = archive.infolist()
        names = {entry.filename for entry in entries}
        if OFFICE_PART[suffix] not in names:
            raise ToolError(f"{_show(path)} is not a {suffix[1:].upper()} file (no {OFFICE_PART[suffix]})")
        unpacked = sum(entry.file_size for entry in entries)
        packed = max(sum(entry.compress_size for entry in entries), 1)
        if unpacked > MAX_UNPACKED_BYTES or (unpacked > 10 * 1024 * 1024 and unpacked / packed > MAX_RATIO):
            raise ToolError(f"{_show(path)} was refused: it unpacks to {unpacked / 1048576:,.0f} MiB from "
                            f"{packed / 1048576:,.1f} MiB (limit {MAX_UNPACKED_BYTES // 1048576} MiB, ratio "
                            f"{MAX_RATIO}:1); it looks like a zip bomb")


def read_pdf(path):
    with open(path, "rb") as handle:
        head = handle.read(1024)
    if b"%PDF-" not in head:
        raise ToolError(f"{_show(path)} is not a PDF (it does not start with %PDF-; first bytes: {head[:16]!r})")
    from pypdf import PdfReader

    reader = PdfReader(path)
    if reader.is_encrypted:
        raise ToolError(f"{_show(path)} is an encrypted PDF")
    pages = [f"--- page {n} ---\n{(page.extract_text() or '').strip()}" for n, page in enumerate(reader.pages, 1)]
    return f"[PDF, {len(pages)} page{'s' if len(pages) != 1 else ''}]\n" + "\n".join(pages)


def read_docx(path):
    import docx

    document = docx.Document(path)
    out = [p.text for p in document.paragraphs if p.text.strip()]
    for number, table in enumerate(document.tables, 1):
        out.append(f"--- table {number} ---")
        out += ["\t".join(cell.text.strip() for cell in row.cells) for row in table.rows]
    return "[DOCX]\n" + "\n".join(out)


def read_xlsx(path):
    from openpyxl import load_workbook

    book = load_workbook(path, read_only=True, data_only=True)
    try:
        out = []
        for sheet in book.worksheets:
            out.append(f"--- sheet {sheet.title} ---")
            for row in sheet.iter_rows(values_only=True):
                if any(cell is not None for cell in row):
                    out.append("\t".join("" if cell is None else str(cell) for cell in row))
        return "[XLSX]\n" + "\n".join(out)
    finally:
        book.close()


def read_pptx(path):
    from pptx import Presentation

    out = []
    for number, slide in enumerate(Presentation(path).slides, 1):
        out.append(f"--- slide {number} ---")
        for shape in slide.shapes:
            if getattr(shape, "has_text_frame", False) and shape.text_frame.text.strip():
                out.append(shape.text_frame.text.strip())
            if getattr(shape, "has_table", False):
                out += ["\t".join(cell.text.strip() for cell in row.cells) for row in shape.table.rows]
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame.text.strip():
            out.append("notes: " + slide.notes_slide.notes_text_frame.text.strip())
    return "[PPTX]\n" + "\n".join(out)


def read_image(path):
    from PIL import ExifTags, Image, UnidentifiedImageError

    try:
        image = Image.open(path)  # reads the header only; the pixels are never decoded
    except UnidentifiedImageError:
        raise ToolError(f"{_show(path)} is not an image this tool recognises") from None
    with image:
        width, height = image.size
        out = [f"[image] format {image.format}, {width}x{height} pixels, mode {image.mode}"]
        if width * height > MAX_PIXELS:
            out.append(f"(over {MAX_PIXELS:,} pixels)")
        exif = image.getexif()
        for tag, value in sorted(exif.items()):
            name = ExifTags.TAGS.get(tag, f"tag {tag}")
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
            out.append(f"EXIF {name}: {text[:200]}")
        for key, value in sorted((image.info or {}).items()):
            if isinstance(value, str) and key.lower() not in ("icc_profile", "exif"):
                out.append(f"{key}: {value[:500]}")
    return "\n".join(out)


READERS = {".pdf": read_pdf, ".docx": read_docx, ".xlsx": read_xlsx, ".xlsm": read_xlsx, ".pptx": read_pptx}


def extract(path):
    if os.path.isdir(path):
        raise ToolError(f"{_show(path)} is a directory, not a file")
    if not os.path.exists(path):
        raise ToolError(f"{_show(path)} does not exist")
    size = os.path.getsize(path)
    if size > MAX_FILE_BYTES:
        raise ToolError(f"{_show(path)} is {size / 1048576:,.0f} MiB; documents over "
                        f"{MAX_FILE_BYTES // 1048576} MiB are not read")
    suffix = os.path.splitext(path)[1].lower()
    if suffix in IMAGES:
        return read_image(path)
    if suffix not in READERS:
        raise ToolError(f"{_show(path)}: this tool reads PDF, DOCX, XLSX, PPTX and images "
                        f"({', '.join(sorted(IMAGES))}); read other files as text")
    if suffix in OFFICE_PART:
        _check_zip(path, suffix)
    return READERS[suffix](path)


def answer(req):
    for directory in reversed(req.get("site") or []):
        sys.path.insert(0, directory)
    path = req.get("path")
    try:
        if not isinstance(path, str) or not path:
            raise ToolError("path must be a file path")
        text = extract(path)
    except ToolError as exc:
        return {"ok": False, "output": str(exc)}
    except ImportError as exc:
        return {"ok": False, "output": f"reading {_show(path)} needs the 'documents' extra, missing here ({exc})"}
    except OSError as exc:
        return {"ok": False, "output": f"{exc.strerror or type(exc).__name__}: {_show(path)}"}
    except MemoryError:
        return {"ok": False, "output": f"{_show(path)} needs more memory than a document may take"}
    except Exception as exc:  # noqa: BLE001 - parsers raise many kinds on a broken file
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
