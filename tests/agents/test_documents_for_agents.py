"""Documents reach the model in a form it takes: a PDF that Claude Code's ``Read`` returns as a ``document``
block is passed as a document to a model that reads PDFs (an Anthropic target: checked at the stub's
Messages endpoint) and as its extracted text otherwise; DOCX, XLSX and PPTX as their text; an image as a
description for a model without vision; a block nothing can be made of as a line saying so. Through the
wire format, the proxy and the real CLI."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import urllib.request

from pytest_ifbench.agents.cli import run_cli
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.proxy import RecordingProxy
from pytest_ifbench.agents.wire.anthropic_messages import translate_request
from pytest_ifbench.agents.wire.documents import PASS_NOTE, Accepts, fit
from pytest_ifbench.agents.workspace import Workspace
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.testing import Reply

SECRET_LINE = "Quarterly revenue was 4711 euros"


def tiny_pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` in Helvetica, with a correct cross-reference table."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def pdf_block() -> dict:
    return {"type": "document", "title": "report.pdf", "source": {
        "type": "base64", "media_type": "application/pdf", "data": base64.b64encode(tiny_pdf(SECRET_LINE)).decode()}}


def _request(*blocks: dict) -> dict:
    """A Messages request: a Read of a file whose result holds ``blocks``, then the same blocks again."""
    return {"model": "m", "max_tokens": 100, "messages": [
        {"role": "user", "content": "Summarize the file"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read",
                                           "input": {"file_path": "/workspace/report.pdf"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": list(blocks)}]},
        {"role": "user", "content": [*blocks, {"type": "text", "text": "and this one"}]}]}


TEXT_ONLY = Accepts(pdf=False, images=False, model="openai/stub")


def test_a_pdf_document_block_reaches_a_text_model_as_text():
    translated = fit(translate_request(_request(pdf_block())), TEXT_ONLY)
    tool = next(m for m in translated.messages if m["role"] == "tool")
    assert tool["content"] == "[a document: it follows in the next user message]"
    after_tool = translated.messages[translated.messages.index(tool) + 1]
    assert SECRET_LINE in json.dumps(after_tool) and SECRET_LINE in json.dumps(translated.messages[-1])
    assert "document blocks are passed as their extracted text" in translated.notes
    assert "base64" not in json.dumps(translated.messages)  # nothing of the raw bytes is sent


def test_a_pdf_passes_as_a_document_to_a_model_that_reads_pdfs():
    translated = fit(translate_request(_request(pdf_block())), Accepts(pdf=True, images=True))
    files = [p for m in translated.messages if isinstance(m["content"], list) for p in m["content"]
             if p["type"] == "file"]
    assert len(files) == 2 and files[0]["file"]["file_data"].startswith("data:application/pdf;base64,JVBERi0")
    assert SECRET_LINE not in json.dumps(translated.messages)  # the model reads the PDF itself
    assert PASS_NOTE in translated.notes


def office_blocks() -> list[dict]:
    import docx
    from openpyxl import Workbook
    from pptx import Presentation

    word = docx.Document()
    word.add_paragraph(f"Memo: {SECRET_LINE}")
    book = Workbook()
    book.active.append(["quarter", "revenue"])
    book.active.append(["Q3", 4711])
    deck = Presentation()
    deck.slides.add_slide(deck.slide_layouts[1]).shapes.title.text = "Launch in March"
    blocks = []
    for thing, name, media in (
            (word, "memo.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
            (book, "sheet.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
            (deck, "deck.pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation")):
        buffer = io.BytesIO()
        thing.save(buffer)
        blocks.append({"type": "document", "title": name, "source": {
            "type": "base64", "media_type": media, "data": base64.b64encode(buffer.getvalue()).decode()}})
    return blocks


def test_office_documents_reach_the_model_as_text_even_one_that_reads_pdfs():
    for accepts in (TEXT_ONLY, Accepts(pdf=True, images=True)):
        sent = json.dumps(fit(translate_request(_request(*office_blocks())), accepts).messages)
        assert SECRET_LINE in sent and "Q3\\t4711" in sent and "Launch in March" in sent
        assert "memo.docx" in sent and "base64" not in sent


def test_an_image_for_a_model_without_vision_becomes_its_description():
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (40, 30)).save(buffer, format="PNG")
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": base64.b64encode(buffer.getvalue()).decode()}}
    translated = fit(translate_request(_request(image)), TEXT_ONLY)
    sent = json.dumps(translated.messages)
    assert "image_url" not in sent and "image PNG 40x30 RGB" in sent and "does not take images" in sent
    assert any("does not take images" in note for note in translated.notes)
    kept = fit(translate_request(_request(image)), Accepts(pdf=False, images=True))
    assert "image_url" in json.dumps(kept.messages)


def test_a_block_that_cannot_be_passed_is_a_line_and_a_note_never_dropped():
    odd = {"type": "search_result", "source": "https://example.com", "title": "x", "content": []}
    unreadable = {"type": "document", "title": "blob.bin", "source": {
        "type": "base64", "media_type": "application/octet-stream", "data": base64.b64encode(b"\x00" * 8).decode()}}
    translated = fit(translate_request(_request(odd, unreadable)), TEXT_ONLY)
    sent = json.dumps(translated.messages)
    assert "[a search_result block was here; the ifbench proxy cannot pass it to the model]" in sent
    assert "cannot be passed to this model: no reader for application/octet-stream" in sent
    assert any("'search_result' are not passed" in note for note in translated.notes)


def test_the_proxy_passes_a_pdf_to_an_anthropic_target_as_a_document_block(stub_env, tmp_path, monkeypatch):
    """A real litellm call to the stub's Anthropic endpoint: the PDF arrives as a Messages document block."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
    stub_env.default = Reply(content="It says 4711.")
    client = ModelClient(model="anthropic/claude-sonnet-4-5", api_base=stub_env.url.removesuffix("/v1"),
                         retry=RetryPolicy(max_attempts=1, timeout=30))
    with RecordingProxy(client, log_path=tmp_path / "raw.jsonl", tcp=True) as proxy:
        assert proxy.accepts.pdf and proxy.accepts.images  # from litellm's model data
        body = {"model": "claude-sonnet-4-5", "max_tokens": 50, "messages": [
            {"role": "user", "content": [pdf_block(), {"type": "text", "text": "What does it say?"}]}]}
        request = urllib.request.Request(f"{proxy.url}/v1/messages", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            assert json.loads(answer.read())["content"][0]["text"] == "It says 4711."
    sent = stub_env.requests[-1]
    assert sent.path.endswith("/v1/messages")
    blocks = sent.body["messages"][0]["content"]
    document = next(b for b in blocks if b["type"] == "document")
    assert document["source"]["media_type"] == "application/pdf"
    assert base64.b64decode(document["source"]["data"]) == tiny_pdf(SECRET_LINE)
    assert PASS_NOTE in proxy.notes


def test_claude_codes_read_of_a_pdf_reaches_the_model(agents, stub_env, tmp_path):
    seen: list[str] = []

    def reply(body: dict) -> Reply:
        messages = body.get("messages") or []
        if not body.get("tools"):
            return Reply(content="ok")
        if any(m.get("role") == "tool" for m in messages):
            seen.append(json.dumps(messages))
            return Reply(content="The report says the revenue was 4711 euros.")
        return Reply(tool_calls=[{"function": {"name": "Read", "arguments": {"file_path": "/workspace/report.pdf"}}}])

    stub_env.default = reply
    environment = tmp_path / "env"
    environment.mkdir()
    (environment / "report.pdf").write_bytes(tiny_pdf(SECRET_LINE))
    client = ModelClient(model="openai/stub", api_base=stub_env.url, retry=RetryPolicy(max_attempts=1, timeout=30))
    with Workspace.create(environment, parent=tmp_path) as ws:
        result = asyncio.run(run_cli("claude_code", workspace=ws, queries=["What does report.pdf say?"], system=None,
                                     model_name="claude-sonnet-4-5", client=client, submit=None,
                                     options=AgentOptions(max_seconds=90), log_path=tmp_path / "raw.jsonl"))
    assert result.harness_error is None, (result.harness_error, result.stderr[-2000:])
    assert seen and SECRET_LINE in seen[-1], seen[-1][-2000:] if seen else "no tool result reached the model"


def test_a_hostile_document_from_the_cli_is_refused_in_a_capped_child_not_parsed_here(monkeypatch):
    """A zip bomb sent as a DOCX document block is refused unpacked; a reader that would run away is
    ended by its child's cap, and the harness process never imports a parser for the agent's bytes."""
    import sys

    from tests.agents.test_document_tool import zip_bomb_docx

    bomb = {"type": "document", "title": "bomb.docx", "source": {
        "type": "base64", "media_type": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "data": base64.b64encode(zip_bomb_docx()).decode()}}
    fake = {"type": "document", "title": "fake.pdf", "source": {
        "type": "base64", "media_type": "application/pdf", "data": base64.b64encode(b"no pdf at all").decode()}}
    for name in ("docx", "pypdf"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    sent = json.dumps(fit(translate_request(_request(bomb, fake)), TEXT_ONLY).messages)
    assert "bomb.docx was refused: it unpacks to 256 MiB" in sent and "zip bomb" in sent
    assert "fake.pdf is not a PDF (it does not start with %PDF-" in sent
    assert "docx" not in sys.modules and "pypdf" not in sys.modules  # parsed in the child, not here
