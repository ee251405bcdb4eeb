"""Documents and images of a CLI's request, as the target model accepts them.

A wire format translates a ``document`` block into an OpenAI ``file`` part (``file_data``: a base64 data
URL; :func:`file_part`) and an image into an ``image_url`` part; a document inside a tool result follows
in the next user message, as images do. Then the proxy fits the request to the *target* model
(:func:`adapt`, by :class:`Accepts`):

- **pass-through** where the model takes them: PDFs for models litellm's model data marks
  ``supports_pdf_input`` (Anthropic-native Claude models among them; litellm turns the part into the
  provider's own document block), images for ``supports_vision``;
- **extracted text** otherwise, by the project's one set of document readers
  (:mod:`pytest_ifbench.sandbox.documents`): PDF, DOCX, XLSX, PPTX by their text, an image by its format,
  size and metadata; a ``text`` document source is its text;
- **never silently dropped**: a part that cannot become either is a text line in the message saying what
  was there and why it is not passed, and a proxy note (the trajectory's ``meta["proxy_notes"]``).

The bytes come from the CLI's request (a workspace file the agent read), so they are never parsed in the
harness process: the readers run in a child process (the ``read_document`` runner, with a memory and CPU
cap and a timeout) with their own bounds (size, the magic check, the zip-bomb check). The agents'
``read_document`` tool runs the same runner inside the sandbox.
"""

from __future__ import annotations

import base64
import binascii
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...sandbox import documents as readers
from ._base import Translated

__all__ = ["Accepts", "MAX_DOCUMENT_CHARS", "adapt", "document_text", "file_part", "fit"]

#: Characters of one document's text passed on (a long PDF keeps its start).
MAX_DOCUMENT_CHARS = 200_000
#: The extraction child's caps (memory in MiB, CPU seconds; twice the CPU in wall-clock time).
EXTRACT_MEMORY_MB = 1024
EXTRACT_SECONDS = 30
#: Media types the readers take, with the suffix that picks the reader.
SUFFIXES = {"application/pdf": ".pdf",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
            "application/vnd.ms-excel.sheet.macroEnabled.12": ".xlsm",
            "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
            **{f"image/{kind}": f".{kind}" for kind in ("png", "jpeg", "gif", "webp", "bmp", "tiff")}}
TEXT_NOTE = "document blocks are passed as their extracted text"
PASS_NOTE = "PDF documents are passed to the model as documents (it reads PDFs)"


@dataclass(frozen=True, slots=True, kw_only=True)
class Accepts:
    """What the target model takes besides text."""

    pdf: bool
    images: bool
    model: str = ""

    @classmethod
    def for_model(cls, model: str) -> Accepts:
        """From litellm's model data (``supports_pdf_input``, ``supports_vision``); unknown: neither."""
        from ...models.client import import_litellm

        try:
            import_litellm()  # configured offline first: no price-list download
            from litellm.utils import supports_pdf_input, supports_vision
        except ImportError:
            return cls(pdf=False, images=False, model=model)

        def ask(check: Any) -> bool:
            try:
                return bool(check(model=model))
            except Exception:  # noqa: BLE001 - litellm raises for models it does not know
                return False

        return cls(pdf=ask(supports_pdf_input), images=ask(supports_vision), model=model)


def file_part(block: Mapping[str, Any]) -> dict[str, Any]:
    """A Messages ``document`` block as an OpenAI ``file`` part (a ``text`` source stays text)."""
    source = block.get("source") or {}
    title = str(block.get("title") or "attached document")
    if source.get("type") == "base64":
        media = str(source.get("media_type") or "application/octet-stream")
        return {"type": "file", "file": {"filename": title,
                                         "file_data": f"data:{media};base64,{source.get('data') or ''}"}}
    if source.get("type") == "text":
        return {"type": "text", "text": _labelled(title, str(source.get("data") or ""))}
    return {"type": "text", "text": f"[document {title!r} ({source.get('type')} source) cannot be passed to the "
                                    "model: only inline documents are]"}


def _labelled(title: str, text: str) -> str:
    if len(text) > MAX_DOCUMENT_CHARS:
        text = text[:MAX_DOCUMENT_CHARS] + f"\n[... {len(text) - MAX_DOCUMENT_CHARS} more characters]"
    return f"[document {title!r}, as extracted text]\n{text}"


def _data_url(url: str) -> tuple[str, bytes] | None:
    if not url.startswith("data:") or ";base64," not in url:
        return None
    media, _, data = url[5:].partition(";base64,")
    try:
        return media, base64.b64decode(data, validate=False)
    except (ValueError, binascii.Error):
        return None


def _read(media: str, data: bytes, title: str) -> str:
    """The readers' text of ``data`` (a ``media`` file), or a sentence saying why not."""
    if media.startswith("text/"):
        return data.decode("utf-8", "replace")
    suffix = SUFFIXES.get(media)
    if suffix is None:
        return f"[{title!r} ({media}) cannot be passed to this model: no reader for {media}]"
    if len(data) > readers.MAX_FILE_BYTES:
        return f"[{title!r} is over {readers.MAX_FILE_BYTES // 1048576} MiB and is not read]"
    with tempfile.TemporaryDirectory(prefix="ifbench-document-") as directory:
        path = os.path.join(directory, "document" + suffix)
        with open(path, "wb") as handle:
            handle.write(data)
        return _extract(path, title)


def _extract(path: str, title: str) -> str:
    """The text of the file at ``path`` by the readers, in a child process of its own with a memory and CPU
    cap and a timeout: the bytes are the agent's, so a hostile file costs at most that child."""
    import json
    import subprocess
    import sys

    from ..document_tool import READERS, RUNNER, document_site

    request = {"path": path, "site": list(document_site()[0]), "readers": str(READERS), "max_chars": MAX_DOCUMENT_CHARS,
               "memory_mb": EXTRACT_MEMORY_MB, "cpu_seconds": EXTRACT_SECONDS}
    try:
        done = subprocess.run([sys.executable, "-I", "-S", "-B", str(RUNNER)], input=json.dumps(request),
                              capture_output=True, text=True, timeout=EXTRACT_SECONDS * 2, cwd=os.path.dirname(path))
        reply = json.loads(done.stdout)
    except subprocess.TimeoutExpired:
        return f"[{title!r} could not be read within {EXTRACT_SECONDS * 2} s]"
    except ValueError:
        return f"[{title!r} could not be read (the reader ended with {done.returncode}: {done.stderr[-200:]})]"
    text = str(reply.get("output") or "")
    return text.replace("document" + os.path.splitext(path)[1], title) if not reply.get("ok") else text


def document_text(part: Mapping[str, Any]) -> str:
    """A ``file`` part as labelled text (see the module doc)."""
    file = part.get("file") or {}
    title = str(file.get("filename") or "attached document")
    decoded = _data_url(str(file.get("file_data") or ""))
    if decoded is None:
        return f"[document {title!r} cannot be passed to this model: it is not inline base64 data]"
    return _labelled(title, _read(*decoded, title))


def _image_text(part: Mapping[str, Any], model: str) -> str:
    url = str((part.get("image_url") or {}).get("url") or "")
    why = f"the model {model or '(unknown)'} does not take images"
    decoded = _data_url(url)
    if decoded is None:
        return f"[an image at {url[:200]} is not passed: {why}]"
    return f"[an image, not passed ({why}); what can be read of it: {_read(decoded[0], decoded[1], 'image')}]"


def adapt(messages: Sequence[Mapping[str, Any]], accepts: Accepts) -> tuple[list[dict[str, Any]], set[str]]:
    """``messages`` with every ``file`` and ``image_url`` part in a form the target takes, and notes."""
    notes: set[str] = set()
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            out.append(dict(message))
            continue
        parts: list[dict[str, Any]] = []
        changed = False
        for part in content:
            kind = part.get("type")
            media = str((part.get("file") or {}).get("file_data") or "")[5:].partition(";")[0]
            if kind == "file" and accepts.pdf and media == "application/pdf":
                parts.append(dict(part))
                notes.add(PASS_NOTE)
            elif kind == "file":
                parts.append({"type": "text", "text": document_text(part)})
                notes.add(TEXT_NOTE)
                changed = True
            elif kind == "image_url" and not accepts.images:
                parts.append({"type": "text", "text": _image_text(part, accepts.model)})
                changed = True
                notes.add(f"images are passed as a text description: the model {accepts.model or '(unknown)'} "
                          "does not take images")
            else:
                parts.append(dict(part))
        if changed and len(parts) == 1:
            out.append({**message, "content": parts[0]["text"]})
        else:
            out.append({**message, "content": parts} if changed else dict(message))
    return out, notes


def fit(translated: Translated, accepts: Accepts) -> Translated:
    """``translated`` with its messages adapted to the target (:func:`adapt`), the notes added."""
    messages, notes = adapt(translated.messages, accepts)
    return replace(translated, messages=messages, notes=tuple(sorted({*translated.notes, *notes})))
