"""Files as the judge reads them: text from PDF, spreadsheets, Word, PowerPoint, HTML, SVG, subtitles,
plain text and code, and a summary of images (size, format, EXIF).

PDF, DOCX, XLSX, PPTX and image files go through the core's one set of document readers
(:mod:`pytest_ifbench.sandbox.documents`, which the agents' ``read_document`` and the proxy use too: the
judge reads a document as the agent could); the rest is here. Every converter caps its output at ``limit``
characters (the cut is marked) and never raises on a bad file: it returns ``"cannot read NAME: reason"``
instead, so the judge is told what it could not see. :func:`convert` picks the converter by suffix;
:func:`image_payload` gives an image as a data URL for a vision judge.
"""

from __future__ import annotations

import base64
import csv
import html.parser
import io
from collections.abc import Callable
from pathlib import Path

from pytest_ifbench.sandbox import documents as readers

DEFAULT_LIMIT = 20_000
TEXT_SUFFIXES = frozenset({".txt", ".md", ".json", ".py", ".srt", ".vtt", ".js", ".css", ".yaml", ".yml", ".tex",
                           ".xml", ".log", ".ini", ".toml", ".sh", ".ts", ".java", ".c", ".cpp", ".r", ".sql"})
IMAGE_SUFFIXES = readers.IMAGE_SUFFIXES
RENDERED_SUFFIXES = frozenset({".html", ".htm", ".svg"})
_MAX_BYTES = 50 * 1024 * 1024
_MAX_PIXELS = 80_000_000


def cap(text: str, limit: int = DEFAULT_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, head kept, the cut marked with how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit:,} more characters cut ...]"


def _csv(path: Path) -> str:
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    try:
        dialect = csv.Sniffer().sniff(text[:4096])
    except csv.Error:
        dialect = csv.excel
    return "\n".join("\t".join(row) for row in csv.reader(io.StringIO(text), dialect))


class _TextOnly(html.parser.HTMLParser):
    """Visible text of an HTML or SVG document: scripts and styles dropped, block ends as newlines."""

    _SKIP = frozenset({"script", "style", "head", "noscript"})
    _BLOCK = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article",
                        "table", "ul", "ol", "title", "text", "tspan", "header", "footer"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in self._SKIP:
            self.skipping += 1
        if tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self._SKIP and self.skipping:
            self.skipping -= 1
        if tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self.skipping:
            self.parts.append(data)


def _markup(path: Path) -> str:
    parser = _TextOnly()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    lines = [" ".join(line.split()) for line in "".join(parser.parts).splitlines()]
    body = "\n".join(line for line in lines if line)
    return (f"title: {parser.title.strip()}\n" if parser.title.strip() else "") + body


def _plain(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def image_summary(path: Path) -> str:
    """Format, size, mode and the EXIF tags worth reading (date, camera, GPS present)."""
    return readers.image_text(str(path))


def _shared(path: Path) -> str:
    """A PDF, DOCX, XLSX or PPTX file through the core's readers (checked first: magic, zip bomb)."""
    readers.check_document(str(path))
    return readers.READERS[path.suffix.lower()](str(path))


CONVERTERS: dict[str, Callable[[Path], str]] = {
    **dict.fromkeys((".pdf", ".xlsx", ".xlsm", ".docx", ".pptx"), _shared), ".csv": _csv, ".tsv": _csv,
    ".html": _markup, ".htm": _markup, ".svg": _markup,
} | {suffix: _plain for suffix in TEXT_SUFFIXES} | {suffix: image_summary for suffix in IMAGE_SUFFIXES}


def convert(path: Path, *, limit: int = DEFAULT_LIMIT, name: str | None = None) -> str:
    """The file as text for the judge (at most ``limit`` characters); never raises."""
    name = name or path.name
    suffix = path.suffix.lower()
    try:
        size = path.stat().st_size
    except OSError as exc:
        return f"cannot read {name}: {exc.strerror or exc}"
    if size > _MAX_BYTES:
        return f"cannot read {name}: {size:,} bytes is over the {_MAX_BYTES:,}-byte limit"
    converter = CONVERTERS.get(suffix)
    if converter is None:
        return _unknown(path, name, size, limit)
    try:
        return cap(converter(path), limit)
    except ImportError as exc:
        return f"cannot read {name}: {exc.name or exc} is not installed (pip install 'pytest-ifbench[documents]')"
    except Exception as exc:  # noqa: BLE001 -- a bad file must become a sentence for the judge, never a crash
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return f"cannot read {name}: {reason}"


def _unknown(path: Path, name: str, size: int, limit: int) -> str:
    """Text if the bytes decode as UTF-8, else a one-line description."""
    try:
        head = path.read_bytes()[: limit * 4]
        return cap(head.decode("utf-8"), limit)
    except UnicodeDecodeError:
        return f"cannot read {name}: binary {path.suffix or 'file'} of {size:,} bytes (no converter for this type)"
    except OSError as exc:
        return f"cannot read {name}: {exc.strerror or exc}"


def image_payload(path: Path, *, max_side: int = 1568) -> str | None:
    """The image as a ``data:image/png;base64,…`` URL (downscaled to ``max_side``), or None if unreadable."""
    try:
        from PIL import Image

        Image.MAX_IMAGE_PIXELS = _MAX_PIXELS
        with Image.open(path) as image:
            image.load()
            picture = image.convert("RGBA" if image.mode in ("RGBA", "LA", "P") else "RGB")
        picture.thumbnail((max_side, max_side))
        buffer = io.BytesIO()
        picture.save(buffer, format="PNG", optimize=True)
    except Exception:  # noqa: BLE001 -- unreadable images are described as text instead
        return None
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
