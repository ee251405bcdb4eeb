"""Document conversion for every supported type, on files made here with the same libraries, plus bad
files (a sentence, never a crash), the output cap and the HTML/SVG screenshot path."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from pytest_ifbench.benchmarks.agentif import documents, screenshot
from pytest_ifbench.benchmarks.agentif.materials import material


def make_pdf(path: Path, lines: list[str]) -> None:
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    for line in lines:
        page = writer.add_blank_page(width=612, height=792)
        font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                                 NameObject("/BaseFont"): NameObject("/Helvetica")})
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject(
            {NameObject("/F1"): writer._add_object(font)})})
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 18 Tf 72 700 Td ({line}) Tj ET".encode())
        page[NameObject("/Contents")] = writer._add_object(stream)
    with path.open("wb") as handle:
        writer.write(handle)


def test_pdf_text_per_page(tmp_path):
    make_pdf(tmp_path / "plan.pdf", ["Plan A costs 20 USD", "Plan B costs 35 USD"])
    text = documents.convert(tmp_path / "plan.pdf")
    assert "--- page 1 ---" in text and "Plan A costs 20 USD" in text
    assert "--- page 2 ---" in text and "Plan B costs 35 USD" in text


def test_xlsx_every_sheet_with_values(tmp_path):
    from openpyxl import Workbook

    book = Workbook()
    book.active.title = "Budget"
    book.active.append(["item", "cost"])
    book.active.append(["hotel", 120])
    book.active["C2"] = "=B2*2"
    book.create_sheet("Notes").append(["remember the deposit"])
    book.save(tmp_path / "b.xlsx")
    text = documents.convert(tmp_path / "b.xlsx")
    assert "--- sheet Budget ---" in text and "item\tcost" in text and "hotel\t120" in text
    assert "--- sheet Notes ---" in text and "remember the deposit" in text


def test_csv(tmp_path):
    (tmp_path / "t.csv").write_text("name;age\nAda;36\n", encoding="utf-8")
    assert documents.convert(tmp_path / "t.csv") == "name\tage\nAda\t36"


def test_docx_paragraphs_and_tables(tmp_path):
    import docx

    document = docx.Document()
    document.add_heading("Trip report", level=1)
    document.add_paragraph("We visited three museums.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "day", "city"
    table.cell(1, 0).text, table.cell(1, 1).text = "1", "Lyon"
    document.save(tmp_path / "r.docx")
    text = documents.convert(tmp_path / "r.docx")
    assert "Trip report" in text and "We visited three museums." in text
    assert "--- table 1 ---" in text and "1\tLyon" in text


def test_pptx_slides_tables_notes(tmp_path):
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Nature papers 2024"
    slide.placeholders[1].text = "AlphaFold 3"
    slide.notes_slide.notes_text_frame.text = "cite in the bottom left"
    second = deck.slides.add_slide(deck.slide_layouts[5])
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    table.cell(1, 0).text, table.cell(1, 1).text = "GNoME", "Nov 2023"
    deck.save(tmp_path / "d.pptx")
    text = documents.convert(tmp_path / "d.pptx")
    assert "--- slide 1 ---" in text and "Nature papers 2024" in text and "AlphaFold 3" in text
    assert "[notes] cite in the bottom left" in text
    assert "--- slide 2 ---" in text and "GNoME\tNov 2023" in text


def test_html_and_svg_visible_text(tmp_path):
    (tmp_path / "p.html").write_text("<html><head><title>Menu</title><style>h1{color:red}</style></head>"
                                     "<body><h1>Lunch</h1><p>Soup &amp; bread</p><script>alert(1)</script></body>")
    assert documents.convert(tmp_path / "p.html") == "title: Menu\nLunch\nSoup & bread"
    (tmp_path / "f.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100">'
                                    '<rect width="80" height="40"/><text x="5" y="20">Stage</text>'
                                    '<text x="5" y="60">Exit A</text></svg>')
    assert documents.convert(tmp_path / "f.svg") == "Stage\nExit A"


@pytest.mark.parametrize("name, content", [
    ("s.srt", "1\n00:00:01,000 --> 00:00:02,000\nHello there\n"),
    ("n.txt", "plain notes"), ("r.md", "# Title\n- item"), ("d.json", json.dumps({"a": [1, 2]})),
    ("m.py", "def f():\n    return 1\n"),
])
def test_text_formats_as_they_are(tmp_path, name, content):
    (tmp_path / name).write_text(content, encoding="utf-8")
    assert documents.convert(tmp_path / name) == content


def test_image_summary_with_exif_and_payload(tmp_path):
    from PIL import Image

    image = Image.new("RGB", (320, 200), (10, 120, 30))
    exif = Image.Exif()
    exif[0x0132] = "2024:05:01 10:00:00"  # DateTime
    exif[0x0110] = "Pixel 8"  # Model
    image.save(tmp_path / "photo.jpg", exif=exif)
    text = documents.convert(tmp_path / "photo.jpg")
    assert text.startswith("image JPEG 320x200 RGB")
    assert "DateTime: 2024:05:01 10:00:00" in text and "Model: Pixel 8" in text
    Image.new("RGBA", (3000, 1000)).save(tmp_path / "wide.png")
    url = documents.image_payload(tmp_path / "wide.png")
    assert url is not None and url.startswith("data:image/png;base64,")
    import base64

    with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as shown:
        assert shown.size == (1568, 523)  # downscaled for the judge
    item = material(tmp_path / "photo.jpg")
    assert len(item.images) == 1 and item.text.startswith("image JPEG")


@pytest.mark.parametrize("name", ["bad.pdf", "bad.xlsx", "bad.docx", "bad.pptx", "bad.png", "bad.jpg"])
def test_a_bad_file_is_a_sentence_not_a_crash(tmp_path, name):
    (tmp_path / name).write_bytes(b"\x00\x01 this is not really a " + name.encode() + b"\xff" * 50)
    text = documents.convert(tmp_path / name)
    assert text.startswith(f"cannot read {name}: "), text
    assert len(text) < 300


def test_missing_and_unknown_files(tmp_path):
    assert documents.convert(tmp_path / "gone.pdf").startswith("cannot read gone.pdf: ")
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)))
    assert documents.convert(tmp_path / "blob.bin") == (
        "cannot read blob.bin: binary .bin of 256 bytes (no converter for this type)")
    (tmp_path / "notes.unknown").write_text("still text")
    assert documents.convert(tmp_path / "notes.unknown") == "still text"


def test_every_converter_caps_its_output(tmp_path):
    from openpyxl import Workbook

    (tmp_path / "long.txt").write_text("x" * 50_000)
    text = documents.convert(tmp_path / "long.txt", limit=1_000)
    assert text.startswith("x" * 1_000) and text.endswith("[... 49,000 more characters cut ...]")
    book = Workbook()
    for row in range(3_000):
        book.active.append([f"row {row}", row])
    book.save(tmp_path / "big.xlsx")
    assert len(documents.convert(tmp_path / "big.xlsx", limit=2_000)) < 2_100
    make_pdf(tmp_path / "many.pdf", [f"page text {n} " * 5 for n in range(40)])
    assert len(documents.convert(tmp_path / "many.pdf", limit=500)) < 600


needs_chromium = pytest.mark.skipif(screenshot.chromium() is None, reason=screenshot.MISSING)


@needs_chromium
@pytest.mark.parametrize("name, body", [
    ("page.html", "<html><body style='background:#2255aa'><h1 style='color:white'>Weekly plan</h1></body></html>"),
    ("plan.svg", '<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300">'
                 '<rect width="400" height="300" fill="orange"/></svg>'),
])
def test_screenshot_of_a_real_page(tmp_path, name, body):
    from PIL import Image

    (tmp_path / name).write_text(body)
    shot = screenshot.render(tmp_path / name)
    assert shot.png is not None, shot.note
    assert shot.png[:8] == b"\x89PNG\r\n\x1a\n" and len(shot.png) > 1_000
    with Image.open(io.BytesIO(shot.png)) as image:
        assert image.size == screenshot.WINDOW
        if name.endswith(".html"):
            assert image.convert("RGB").getpixel((640, 800)) == (0x22, 0x55, 0xAA)  # the page really rendered
    item = material(tmp_path / name)
    assert len(item.images) == 1 and item.notes == (f"screenshot of {name} at 1280x900",)


@needs_chromium
def test_a_page_cannot_reach_the_network(tmp_path):
    """The page asks for a remote image: the render still completes, offline, well within the timeout."""
    (tmp_path / "remote.html").write_text('<img src="https://example.com/x.png"><p>offline</p>')
    shot = screenshot.render(tmp_path / "remote.html", timeout=60)
    assert shot.png is not None, shot.note


@needs_chromium
@pytest.mark.skipif(screenshot.problem() is not None, reason=str(screenshot.problem()))
def test_a_page_runs_its_scripts_but_sees_no_host_file_beside_its_own(tmp_path):
    """The agent's page is code: its script runs (the background turns blue) and a picture in its own
    directory shows (green), but a picture elsewhere on the host (red) stays a broken image, as do
    ``/etc/shadow`` and ``/root``. The old render bound the whole host (``bwrap --dev-bind / /``), as root."""
    from PIL import Image

    page_dir, host_dir = tmp_path / "page", tmp_path / "host"
    page_dir.mkdir()
    host_dir.mkdir()
    Image.new("RGB", (300, 200), (0, 200, 0)).save(page_dir / "own.png")
    Image.new("RGB", (300, 200), (220, 0, 0)).save(host_dir / "secret.png")
    box = "position:absolute;top:{}px;left:{}px;width:300px;height:200px"
    (page_dir / "index.html").write_text(
        f"<html><body style='margin:0;background:white'>"
        f"<img src='own.png' style='{box.format(50, 50)}'>"
        f"<img src='{(host_dir / 'secret.png').as_uri()}' style='{box.format(50, 450)}'>"
        f"<iframe src='file:///etc/shadow' style='{box.format(300, 50)};border:0'></iframe>"
        f"<iframe src='file:///root/' style='{box.format(300, 450)};border:0'></iframe>"
        "<script>document.body.style.background = 'rgb(0, 0, 255)';</script></body></html>")
    shot = screenshot.render(page_dir / "index.html")
    assert shot.png is not None, shot.note
    with Image.open(io.BytesIO(shot.png)) as image:
        rgb = image.convert("RGB")
        assert rgb.getpixel((1200, 850)) == (0, 0, 255)  # the script ran
        assert rgb.getpixel((200, 150)) == (0, 200, 0)  # its own picture
        assert rgb.getpixel((600, 150)) != (220, 0, 0)  # not the host's
        shadow, root = rgb.crop((50, 300, 350, 500)), rgb.crop((450, 300, 750, 500))
    # Neither listing nor file: the error page Chromium shows for a missing file is the same for both.
    assert shadow.tobytes() == root.tobytes()


def test_no_bubblewrap_renders_nothing_unconfined(tmp_path, monkeypatch):
    """Without bubblewrap there is no screenshot and a sentence says why; Chromium never runs bare."""
    ran = tmp_path / "chromium-ran"
    fake = tmp_path / "bin" / "chromium"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\ntouch {ran}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("IFBENCH_CHROMIUM", str(fake))
    monkeypatch.setenv("PATH", str(fake.parent))
    (tmp_path / "p.html").write_text("<p>hi</p>")
    assert screenshot.problem() == screenshot.NO_BWRAP
    shot = screenshot.render(tmp_path / "p.html")
    assert shot.png is None and shot.note == screenshot.NO_BWRAP and not ran.exists()
    assert material(tmp_path / "p.html").notes == (screenshot.NO_BWRAP,)


def test_missing_chromium_is_said_not_skipped(tmp_path, monkeypatch):
    monkeypatch.setenv("IFBENCH_CHROMIUM", str(tmp_path / "no-such-chromium"))
    (tmp_path / "p.html").write_text("<p>hi</p>")
    shot = screenshot.render(tmp_path / "p.html")
    assert shot.png is None and shot.note == "no screenshot: Chromium is not installed (apt-get install chromium)"
    item = material(tmp_path / "p.html")
    assert item.images == () and item.text == "hi" and item.notes == (screenshot.MISSING,)
