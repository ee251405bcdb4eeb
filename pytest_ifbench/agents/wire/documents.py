"""A document block of a CLI's request as text the target model can read.

Claude Code's ``Read`` of a PDF answers with a ``document`` block (``source``: base64 ``application/pdf``,
or ``text``); the chat format the proxy calls the model in has no place for it, so the block becomes its
extracted text (PDF: ``pypdf``, from the ``documents`` extra), labelled with its title. Never dropped: a
document that cannot be read becomes a line saying why.
"""

from __future__ import annotations

import base64
import binascii
import io
from collections.abc import Mapping
from typing import Any

__all__ = ["document_text"]

#: Characters of one document's text passed on (a long PDF keeps its start).
MAX_DOCUMENT_CHARS = 200_000


def document_text(block: Mapping[str, Any]) -> str:
    """The text of one ``document`` block, labelled (see the module doc)."""
    source = block.get("source") or {}
    title = str(block.get("title") or "attached document")
    kind, media = source.get("type"), str(source.get("media_type") or "")
    try:
        if kind == "text":
            text = str(source.get("data") or "")
        elif kind == "base64" and media == "application/pdf":
            text = _pdf_text(base64.b64decode(str(source.get("data") or ""), validate=False))
        elif kind == "base64" and media.startswith("text/"):
            text = base64.b64decode(str(source.get("data") or "")).decode("utf-8", "replace")
        else:
            return f"[document {title!r} ({kind} {media}) cannot be passed to this model as text]"
    except (ValueError, binascii.Error, ImportError, OSError) as exc:
        return f"[document {title!r} could not be read: {exc}]"
    if len(text) > MAX_DOCUMENT_CHARS:
        text = text[:MAX_DOCUMENT_CHARS] + f"\n[... {len(text) - MAX_DOCUMENT_CHARS} more characters]"
    return f"[document {title!r}, as extracted text]\n{text}"


def _pdf_text(data: bytes) -> str:
    try:
        from pypdf import PdfReader
    except ImportError as exc:
        raise ImportError("reading PDF documents needs the 'documents' extra (pip install pytest-ifbench[documents])"
                          ) from exc
    try:
        reader = PdfReader(io.BytesIO(data))
        return "\n\n".join((page.extract_text() or "").strip() for page in reader.pages).strip()
    except Exception as exc:  # noqa: BLE001 - pypdf raises many kinds on a broken file
        raise ValueError(f"not a readable PDF ({type(exc).__name__}: {exc})") from None
