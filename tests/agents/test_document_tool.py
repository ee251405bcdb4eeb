"""The built-in loop reads documents: ``read_document`` (generic profile) and Claude Code's ``Read`` return a
PDF's, DOCX's, XLSX's, PPTX's text and an image's metadata, extracted inside the sandbox; hostile files are
tool errors the run survives."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench._types import GenerationParams
from pytest_ifbench.agents.loop import LoopResult, run_loop
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.profiles import ToolRegistry
from pytest_ifbench.agents.workspace import Workspace, sandbox_problem
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.testing import Reply, StubServer
from tests._support import FAKE_KEY, run_closing, stub_args, write_suite

from .test_documents_for_agents import SECRET_LINE, tiny_pdf

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")


def call(name: str, arguments: dict[str, Any], n: int) -> dict[str, Any]:
    return {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def docx_bytes(text: str) -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph(text)
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "region", "north"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx_bytes() -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    book.active.title = "Budget"
    book.active.append(["item", "cost"])
    book.active.append(["rent", 1234])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def pptx_bytes(text: str) -> bytes:
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = text
    slide.notes_slide.notes_text_frame.text = "speaker note 77"
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def zip_bomb_docx() -> bytes:
    """A DOCX whose document part unpacks to 256 MiB of zeros (about 250 KiB packed)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as part:
            chunk = b"\0" * (1 << 20)
            for _ in range(256):
                part.write(chunk)
    return out.getvalue()


# --- an AgentIF task whose attachment is a PDF, through pytest ----------------------------------

SUITE = """
ifbench: 1
benchmark: agentif
defaults:
  protocol: agentif
  protocol_options: {max_steps: 6, command_timeout: 30}
instances:
  - id: revenue
    category: latent_inference
    environment: environments/revenue
    prompt: Read report.pdf and say what the quarterly revenue was.
    metadata: {domain: work, reference_answer: 4711 euros.}
    checks:
      - {id: c1, verifier: agentif.rubric, kind: bonus, points: 1, category: factuality,
         metadata: {aspect: content}, params: {criterion: Gives 4711 euros.}}
"""


def test_an_agentif_task_with_a_pdf_attachment_is_solved_through_read_document(pytester, stub_env):
    environment = pytester.path / "suites" / "environments" / "revenue"
    environment.mkdir(parents=True)
    (environment / "report.pdf").write_bytes(tiny_pdf(SECRET_LINE))
    write_suite(pytester.path, "suites/agentif.yaml", SUITE)
    (pytester.path / "suites" / "conftest.py").write_text('collect_ignore = ["environments"]\n')

    def answer(body: dict[str, Any]) -> Reply:
        if body.get("response_format"):
            schema = body["response_format"]["json_schema"]["schema"]
            ids = schema["properties"]["criteria_results"]["items"]["properties"]["id"]["enum"]
            return Reply(content=json.dumps({"criteria_results": [
                {"id": i, "satisfied": True, "reasoning": "ok"} for i in ids]}))
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Reply(tool_calls=[call("read_document", {"path": "report.pdf"}, 1)])
        return Reply(tool_calls=[call("finish", {"answer": "The quarterly revenue was 4711 euros."}, 2)])

    stub_env.default = answer
    result = pytester.runpytest("suites", *stub_args(stub_env, "--judge-model=openai/stub"), "-v")
    result.stdout.fnmatch_lines(["*agentif.yaml::revenue PASSED*"])
    agent_requests = [r.body for r in stub_env.requests if r.body and r.body.get("tools")]
    assert "read_document" in [t["function"]["name"] for t in agent_requests[0]["tools"]]
    tool_message = next(m for m in agent_requests[1]["messages"] if m["role"] == "tool")
    assert SECRET_LINE in tool_message["content"] and tool_message["content"].startswith("[PDF, 1 page]")
    assert "%PDF-1.4" not in tool_message["content"]


# --- the loop on its own: each format, Claude Code's Read, hostile files ------------------------

@pytest.fixture
def stub(stub_server: StubServer, monkeypatch: pytest.MonkeyPatch) -> StubServer:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    return stub_server


@pytest.fixture
def environment(tmp_path: Path) -> Path:
    root = tmp_path / "env"
    root.mkdir()
    (root / "report.pdf").write_bytes(tiny_pdf(SECRET_LINE))
    (root / "memo.docx").write_bytes(docx_bytes("The memo names Ada Lovelace."))
    (root / "budget.xlsx").write_bytes(xlsx_bytes())
    (root / "deck.pptx").write_bytes(pptx_bytes("Launch in March"))
    from PIL import Image

    Image.new("RGB", (40, 30), "green").save(root / "photo.png")
    (root / "fake.pdf").write_text("just text, no PDF here\n")
    (root / "notes.txt").write_text("plain text\n")
    (root / "bomb.docx").write_bytes(zip_bomb_docx())
    (root / "broken.docx").write_bytes(b"PK\x03\x04 not really a zip")
    return root


@pytest.fixture
def ws(environment: Path, tmp_path: Path) -> Iterator[Workspace]:
    with Workspace.create(environment, parent=tmp_path) as workspace:
        yield workspace


def read_all(stub: StubServer, ws: Workspace, tool: str, key: str, paths: list[str],
             profile: str = "generic") -> tuple[LoopResult, dict[str, Any]]:
    """One call of ``tool`` per path, then an answer; the tool results as the model saw them, by path."""
    def answer(body: dict[str, Any]) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if done < len(paths):
            return Reply(tool_calls=[call(tool, {key: paths[done]}, done)])
        if profile == "generic":
            return Reply(tool_calls=[call("finish", {"answer": "Done."}, done)])
        return Reply(content="Done.")

    stub.default = answer
    client = ModelClient(model="openai/stub", api_base=stub.url, retry=RetryPolicy(max_attempts=1, timeout=30))
    result = run_closing(run_loop(client=client, messages=[{"role": "user", "content": "Read the files."}],
                                  profile=ToolRegistry().profile(profile), workspace=ws,
                                  options=AgentOptions(max_steps=len(paths) + 2, command_timeout=60),
                                  params=GenerationParams(max_tokens=100)))
    tools = [m for m in stub.requests[-1].body["messages"] if m["role"] == "tool"][:len(paths)]
    return result, {path: message["content"] for path, message in zip(paths, tools, strict=True)}


def test_read_document_gives_each_formats_text(stub, ws):
    result, seen = read_all(stub, ws, "read_document", "path",
                            ["memo.docx", "budget.xlsx", "deck.pptx", "photo.png", "/workspace/report.pdf"])
    assert result.stop_reason == "finished"
    assert "The memo names Ada Lovelace." in seen["memo.docx"] and "region\tnorth" in seen["memo.docx"]
    assert "--- sheet Budget ---" in seen["budget.xlsx"] and "rent\t1234" in seen["budget.xlsx"]
    assert "Launch in March" in seen["deck.pptx"] and "[notes] speaker note 77" in seen["deck.pptx"]
    assert seen["photo.png"].startswith("image PNG 40x30 RGB")
    assert SECRET_LINE in seen["/workspace/report.pdf"]


def test_hostile_files_are_tool_errors_and_the_run_goes_on(stub, ws):
    result, seen = read_all(stub, ws, "read_document", "path",
                            ["fake.pdf", "bomb.docx", "broken.docx", "missing.pdf", "notes.txt"])
    assert result.stop_reason == "finished"  # the run survived every one of them
    assert "fake.pdf is not a PDF (it does not start with %PDF-" in seen["fake.pdf"]
    assert "bomb.docx was refused: it unpacks to 256 MiB" in seen["bomb.docx"]
    assert "zip bomb" in seen["bomb.docx"]
    assert "broken.docx is not a DOCX file (not a ZIP package)" in seen["broken.docx"]
    assert "missing.pdf does not exist" in seen["missing.pdf"]
    assert "this tool reads PDF, DOCX, XLSX, PPTX and images" in seen["notes.txt"]
    errors = [step for step in result.trajectory.tool_calls() if step.name == "read_document"]
    assert len(errors) == 5


def test_claude_codes_read_returns_document_text_in_the_loop(stub, ws):
    result, seen = read_all(stub, ws, "Read", "file_path", ["/workspace/report.pdf", "/workspace/budget.xlsx"],
                            profile="claude_code")
    assert result.stop_reason == "no_tool_call"  # Claude Code's way to finish
    assert SECRET_LINE in seen["/workspace/report.pdf"] and "%PDF-1.4" not in seen["/workspace/report.pdf"]
    assert "rent\t1234" in seen["/workspace/budget.xlsx"]
