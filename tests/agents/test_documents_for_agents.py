"""Documents reach the model: a PDF that Claude Code's ``Read`` returns as a ``document`` block is passed
as its extracted text (it was silently dropped), through the wire format and through the real CLI."""

from __future__ import annotations

import asyncio
import base64
import json

from pytest_ifbench.agents.cli import run_cli
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.wire.anthropic_messages import translate_request
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


def test_a_pdf_document_block_reaches_the_model_as_text():
    body = {"model": "m", "max_tokens": 100, "messages": [
        {"role": "user", "content": "Summarize report.pdf"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read",
                                           "input": {"file_path": "/workspace/report.pdf"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [pdf_block()]}]},
        {"role": "user", "content": [pdf_block(), {"type": "text", "text": "and this one"}]}]}
    translated = translate_request(body)
    tool = next(m for m in translated.messages if m["role"] == "tool")
    assert SECRET_LINE in tool["content"]
    assert SECRET_LINE in json.dumps(translated.messages[-1])
    assert "document blocks are passed as their extracted text" in translated.notes


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
