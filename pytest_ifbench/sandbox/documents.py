"""Document readers: the text of a PDF, DOCX, XLSX or PPTX file, and an image's format, size and metadata.

One implementation for every reader of documents in the project: the agents' ``read_document`` tool
(run *inside* the sandbox by :mod:`pytest_ifbench.agents._document_runner`, which loads this file by its
path), the recording proxy's ``document`` blocks (:mod:`pytest_ifbench.agents.wire.documents`) and
benchmarks whose judges read attachments. So this module imports only the
standard library at the top (the parsers -- ``pypdf``, ``python-docx``, ``openpyxl``, ``python-pptx``,
``Pillow``, the ``documents`` extra -- when a file needs them) and nothing of ``pytest_ifbench``.

Before a parser runs, the file is checked to be what its name says (a PDF has ``%PDF-`` in its first
kilobyte; DOCX/XLSX/PPTX are ZIP packages with the part their format needs) and a ZIP's declared unpacked
size is bounded, so a zip bomb is refused unpacked. Failures are :class:`DocumentError` sentences.

Text layout: pages ``--- page N ---``, tables ``--- table N ---`` (cells tab-separated), sheets
``--- sheet NAME ---``, slides ``--- slide N ---`` (speaker notes ``[notes] ...``, pictures
``[picture: NAME]``).
"""

import os
import zipfile

__all__ = ["DOCUMENT_SUFFIXES", "IMAGE_SUFFIXES", "MAX_FILE_BYTES", "READERS", "DocumentError", "check_document",
           "document_text", "image_text"]

MAX_FILE_BYTES = 50 * 1024 * 1024
#: A ZIP-based document declaring more than this unpacked, or compressed more than MAX_RATIO:1, is refused.
MAX_UNPACKED_BYTES = 200 * 1024 * 1024
MAX_RATIO = 200
MAX_PIXELS = 80_000_000
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff"})
#: The ZIP part each Office format cannot do without.
OFFICE_PART = {".docx": "word/document.xml", ".xlsx": "xl/workbook.xml", ".xlsm": "xl/workbook.xml",
               ".pptx": "ppt/presentation.xml"}
#: EXIF tags an image summary names (all of them with ``all_tags``).
EXIF_TAGS = ("DateTime", "Make", "Model", "Software", "ImageDescription", "Artist")


class DocumentError(Exception):
    """A document that cannot be read, as one sentence naming it."""


def _zip_problem(path, name, suffix):
    kind = suffix[1:].upper()
    if not zipfile.is_zipfile(path):
        return f"{name} is not a {kind} file (not a ZIP package)"
    with zipfile.ZipFile(path) as archive:
        entries = archive.infolist()
        if OFFICE_PART[suffix] not in {entry.filename for entry in entries}:
            return f"{name} is not a {kind} file (no {OFFICE_PART[suffix]})"
        unpacked = sum(entry.file_size for entry in entries)
        packed = max(sum(entry.compress_size for entry in entries), 1)
    if unpacked > MAX_UNPACKED_BYTES or (unpacked > 10 * 1024 * 1024 and unpacked / packed > MAX_RATIO):
        return (f"{name} was refused: it unpacks to {unpacked / 1048576:,.0f} MiB from {packed / 1048576:,.1f} MiB "
                f"(limit {MAX_UNPACKED_BYTES // 1048576} MiB, ratio {MAX_RATIO}:1); it looks like a zip bomb")
    return None


def check_document(path, name=None):
    """Raise :class:`DocumentError` unless ``path`` is a file of a bounded size that is what its suffix says."""
    name = name or os.path.basename(path)
    if os.path.isdir(path):
        raise DocumentError(f"{name} is a directory, not a file")
    if not os.path.exists(path):
        raise DocumentError(f"{name} does not exist")
    size = os.path.getsize(path)
    if size > MAX_FILE_BYTES:
        raise DocumentError(f"{name} is {size / 1048576:,.0f} MiB; documents over {MAX_FILE_BYTES // 1048576} MiB "
                            "are not read")
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".pdf":
        with open(path, "rb") as handle:
            head = handle.read(1024)
        if b"%PDF-" not in head:
            raise DocumentError(f"{name} is not a PDF (it does not start with %PDF-; first bytes: {head[:16]!r})")
    elif suffix in OFFICE_PART:
        problem = _zip_problem(path, name, suffix)
        if problem:
            raise DocumentError(problem)


def pdf_text(path):
    from pypdf import PdfReader

    reader = PdfReader(path)
    if reader.is_encrypted:
        raise DocumentError(f"{os.path.basename(path)} is an encrypted PDF")
    pages = [f"--- page {n} ---\n{(page.extract_text() or '').strip()}" for n, page in enumerate(reader.pages, 1)]
    return "\n".join(pages) if pages else "(a PDF without pages)"


def docx_text(path):
    import docx

    document = docx.Document(path)
    out = [p.text for p in document.paragraphs if p.text.strip()]
    for number, table in enumerate(document.tables, 1):
        out.append(f"--- table {number} ---")
        out += ["\t".join(cell.text.strip() for cell in row.cells) for row in table.rows]
    return "\n".join(out)


def xlsx_text(path):
    from openpyxl import load_workbook

    book = load_workbook(path, read_only=True, data_only=True)
    try:
        out = []
        for sheet in book.worksheets:
            out.append(f"--- sheet {sheet.title} ---")
            for row in sheet.iter_rows(values_only=True):
                if any(cell is not None for cell in row):
                    out.append("\t".join("" if cell is None else str(cell) for cell in row))
        return "\n".join(out)
    finally:
        book.close()


def pptx_text(path):
    from pptx import Presentation

    out = []
    for number, slide in enumerate(Presentation(path).slides, 1):
        out.append(f"--- slide {number} ---")
        for shape in slide.shapes:
            if getattr(shape, "has_text_frame", False) and shape.text_frame.text.strip():
                out.append(shape.text_frame.text.strip())
            if getattr(shape, "has_table", False):
                out += ["\t".join(cell.text.strip() for cell in row.cells) for row in shape.table.rows]
            if getattr(shape, "shape_type", None) == 13:  # MSO_SHAPE_TYPE.PICTURE
                out.append(f"[picture: {shape.name}]")
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame.text.strip():
            out.append("[notes] " + slide.notes_slide.notes_text_frame.text.strip())
    return "\n".join(out)


def image_text(path, all_tags=False):
    """``image PNG 40x30 RGB; DateTime: ...``: format, size, mode and EXIF (the common tags, or
    ``all_tags``, then also the image's text chunks); the pixels are never decoded."""
    from PIL import ExifTags, Image, UnidentifiedImageError

    try:
        image = Image.open(path)
    except UnidentifiedImageError:
        raise DocumentError(f"{os.path.basename(path)} is not an image this reader recognises") from None
    with image:
        parts = [f"image {image.format} {image.width}x{image.height} {image.mode}"]
        if image.width * image.height > MAX_PIXELS:
            parts.append(f"over {MAX_PIXELS:,} pixels")
        exif = image.getexif()
        tags = {ExifTags.TAGS.get(key, f"tag {key}"): value for key, value in sorted(exif.items())}
        for name in (tags if all_tags else [n for n in EXIF_TAGS if n in tags]):
            value = tags[name]
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
            parts.append(f"{name}: {text.strip()[:200]}")
        if ExifTags.Base.GPSInfo in exif and not all_tags:
            parts.append("GPS: present")
        if all_tags:
            parts += [f"{key}: {value[:500]}" for key, value in sorted((image.info or {}).items())
                      if isinstance(value, str) and key.lower() not in ("icc_profile", "exif")]
    return "; ".join(parts)


#: Suffix -> reader (the path -> its text).
READERS = {".pdf": pdf_text, ".docx": docx_text, ".xlsx": xlsx_text, ".xlsm": xlsx_text, ".pptx": pptx_text,
           **dict.fromkeys(IMAGE_SUFFIXES, image_text)}
DOCUMENT_SUFFIXES = frozenset(READERS)


def document_text(path, name=None, all_tags=False):
    """The text of the document at ``path`` (checked first, :func:`check_document`); :class:`DocumentError`
    for a file it cannot read, ``ImportError`` when its parser is not installed."""
    name = name or os.path.basename(path)
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in READERS:
        raise DocumentError(f"{name}: no document reader for {suffix or 'a file without a suffix'} (PDF, DOCX, "
                            f"XLSX, PPTX and images: {', '.join(sorted(IMAGE_SUFFIXES))})")
    check_document(path, name)
    if suffix in IMAGE_SUFFIXES:
        return image_text(path, all_tags=all_tags)
    return READERS[suffix](path)
