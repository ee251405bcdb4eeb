"""Recreate every attachment of the AgentIF suites (``environments/<task-id>/``) and every reference
deliverable (``reference/<task-id>/``), deterministically: run it twice and nothing changes.

    python suites/agentif/make_attachments.py            # rewrite everything
    python suites/agentif/make_attachments.py --check    # exit 1 if a file on disk differs

Needs (only to *create* the files): reportlab (PDF), openpyxl (xlsx), python-docx (docx), python-pptx (pptx),
Pillow (PNG).  Text attachments (csv, md, srt, html, svg, ics, py, txt) are written here too, so this script is
the single source of every task's data.  Binary determinism: reportlab runs with ``invariant=1`` and no page
compression (the PDFs' text is also readable with ``strings``/``grep`` inside the offline sandbox, which has no
pdftotext); every zip container (xlsx/docx/pptx) is rewritten with fixed timestamps and fixed document
properties.
"""

# ruff: noqa: E501  (long lines are the attachments' own text)
from __future__ import annotations

import argparse
import csv
import io
import math
import re
import sys
import zipfile
from datetime import date, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent
ENV = ROOT / "environments"
REF = ROOT / "reference"
FIXED = datetime(2026, 1, 5, 9, 0, 0)
FIXED_ISO = "2026-01-05T09:00:00Z"

_files: dict[Path, bytes] = {}


# ----------------------------------------------------------------------------------------------- helpers
def put(path: Path, data: bytes | str) -> None:
    _files[path] = data.encode("utf-8") if isinstance(data, str) else data


def env(task: str, name: str) -> Path:
    return ENV / task / name


def ref(task: str, name: str) -> Path:
    return REF / task / name


def csv_text(rows, delimiter=",") -> str:
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    w.writerows(rows)
    return buf.getvalue()


#: optional parts of the python-docx/python-pptx templates, dropped to keep the files small
_DROP = ("docProps/thumbnail.jpeg", "word/stylesWithEffects.xml")


def _zip_fixed(raw: bytes) -> bytes:
    """The zip container with fixed entry times and fixed created/modified properties, without the optional
    template parts in ``_DROP`` (and the references to them)."""
    src = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst:
        for info in src.infolist():
            if info.filename in _DROP:
                continue
            data = src.read(info.filename)
            if info.filename.endswith(".rels") or info.filename == "[Content_Types].xml":
                text = data.decode("utf-8")
                for part in _DROP:
                    base = part.rsplit("/", 1)[-1]
                    text = re.sub(rf'<Relationship [^>]*Target="[^"]*{re.escape(base)}"[^>]*/>', "", text)
                    text = re.sub(rf'<Override [^>]*PartName="/{re.escape(part)}"[^>]*/>', "", text)
                data = text.encode("utf-8")
            if info.filename == "docProps/core.xml":
                text = data.decode("utf-8")
                text = re.sub(r"(<dcterms:(?:created|modified)[^>]*>)[^<]*(</dcterms:)", rf"\g<1>{FIXED_ISO}\g<2>", text)
                data = text.encode("utf-8")
            zi = zipfile.ZipInfo(info.filename, date_time=(2026, 1, 5, 9, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            dst.writestr(zi, data)
    return out.getvalue()


def save_docx(path: Path, doc) -> None:
    cp = doc.core_properties
    cp.author, cp.last_modified_by, cp.revision = "ifbench", "ifbench", 1
    cp.created = cp.modified = cp.last_printed = FIXED
    buf = io.BytesIO()
    doc.save(buf)
    put(path, _zip_fixed(buf.getvalue()))


def save_pptx(path: Path, prs) -> None:
    cp = prs.core_properties
    cp.author, cp.last_modified_by, cp.revision = "ifbench", "ifbench", 1
    cp.created = cp.modified = cp.last_printed = FIXED
    buf = io.BytesIO()
    prs.save(buf)
    put(path, _zip_fixed(buf.getvalue()))


def save_xlsx(path: Path, wb) -> None:
    wb.properties.creator = "ifbench"
    wb.properties.created = wb.properties.modified = FIXED
    buf = io.BytesIO()
    wb.save(buf)
    put(path, _zip_fixed(buf.getvalue()))


def save_pdf(path: Path, title: str, flow) -> None:
    """``flow``: list of ("h"|"p"|"table", content)."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    styles = getSampleStyleSheet()
    buf = io.BytesIO()
    doc = SimpleDocTemplate(buf, pagesize=A4, title=title, author="ifbench", creator="ifbench", invariant=1,
                            pageCompression=0, leftMargin=50, rightMargin=50, topMargin=50, bottomMargin=50)
    story = [Paragraph(title, styles["Title"])]
    for kind, content in flow:
        if kind == "h":
            story.append(Paragraph(content, styles["Heading2"]))
        elif kind == "p":
            story.append(Paragraph(content, styles["BodyText"]))
        elif kind == "table":
            t = Table(content, hAlign="LEFT")
            t.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.grey),
                                   ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
                                   ("FONTSIZE", (0, 0), (-1, -1), 9)]))
            story.append(t)
        story.append(Spacer(1, 6))
    doc.build(story)
    put(path, buf.getvalue())


def save_png(path: Path, size, draw_fn) -> None:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", size, (255, 255, 255))
    draw_fn(ImageDraw.Draw(img), size)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False, compress_level=9)
    put(path, buf.getvalue())


def money(x: float) -> str:
    return f"{x:.2f}"


# ======================================================================================= OPEN WORKFLOW
def ow_work_meeting_actions() -> None:
    from docx import Document

    t = "ow-work-meeting-actions"
    d = Document()
    d.add_heading("Project Falcon - weekly sync", level=1)
    d.add_paragraph("Date: Tuesday 10 February 2026, 10:00-10:45, room Aquila")
    d.add_paragraph("Present: Priya Nair (PM), Tom Becker (UX), Lena Ortiz (Ops), Marco Silva (Dev). "
                    "Apologies: Hannah Cole.")
    d.add_heading("1. Status of last week's actions", level=2)
    d.add_paragraph("Tom ordered the visitor badges for the pilot customers - done. Lena's vendor survey was "
                    "sent out on Friday - done, closed.")
    d.add_heading("2. Vendor contract", level=2)
    d.add_paragraph("Legal asked for the revised liability clause. Action: Priya will send the revised vendor "
                    "contract to Legal by Friday 13 February.")
    d.add_heading("3. Usability test", level=2)
    d.add_paragraph("The March usability test needs a room with a one-way mirror. Action: Tom to book the "
                    "usability-test room for the week of 9 March; deadline Tuesday 17 February.")
    d.add_heading("4. Risks", level=2)
    d.add_paragraph("The supplier of the sensor boards confirmed a three-week delay. Lena will update the risk "
                    "register with the supplier delay by Thursday 12 February.")
    d.add_heading("5. Budget and bugs", level=2)
    d.add_paragraph("Finance needs the Q1 forecast before the steering meeting. Priya circulates the Q1 budget "
                    "forecast by 20 February. Marco reported the login timeout bug (FAL-212) is reproducible; he "
                    "will fix it by Monday 16 February.")
    d.add_paragraph("Next meeting: Tuesday 17 February 2026.")
    save_docx(env(t, "meeting_minutes.docx"), d)
    rows = [("owner", "task", "due"),
            ("Lena Ortiz", "Update the risk register with the supplier delay", "2026-02-12"),
            ("Priya Nair", "Send the revised vendor contract to Legal", "2026-02-13"),
            ("Marco Silva", "Fix the login timeout bug (FAL-212)", "2026-02-16"),
            ("Tom Becker", "Book the usability-test room for the week of 9 March", "2026-02-17"),
            ("Priya Nair", "Circulate the Q1 budget forecast", "2026-02-20")]
    put(ref(t, "actions.csv"), csv_text(rows))


SALES = {"North": (42300, 39800, 45100), "South": (31500, 33200, 35900),
         "East": (51200, 48700, 53400), "West": (28900, 30100, 27600)}
UNITS = {"North": (212, 198, 226), "South": (160, 171, 180), "East": (255, 240, 268), "West": (150, 152, 139)}


def ow_work_sales_report() -> None:
    from openpyxl import Workbook
    from openpyxl.styles import Font

    t = "ow-work-sales-report"
    wb = Workbook()
    ws = wb.active
    ws.title = "Sales"
    ws.append(["Region", "Month", "Units", "Revenue (EUR)"])
    for c in ws[1]:
        c.font = Font(bold=True)
    for region, revs in SALES.items():
        for month, rev, units in zip(("2026-01", "2026-02", "2026-03"), revs, UNITS[region]):
            ws.append([region, month, units, rev])
    notes = wb.create_sheet("Notes")
    notes.append(["Revenue is net of VAT. Figures are final as of 2026-04-03."])
    save_xlsx(env(t, "sales_q1.xlsx"), wb)
    totals = sorted(((sum(v), r) for r, v in SALES.items()), reverse=True)
    grand = sum(v for v, _ in totals)
    width = 400
    bars = []
    for i, (v, r) in enumerate(totals):
        w = round(v / totals[0][0] * width)
        y = 10 + i * 40
        bars.append(f'  <rect x="80" y="{y}" width="{w}" height="28" fill="#3b6ea5"/>'
                    f'<text x="5" y="{y + 19}">{r}</text><text x="{85 + w}" y="{y + 19}">{v:,}</text>')
    rows = "\n".join(f"  <tr><td>{r}</td><td>{v:,}</td></tr>" for v, r in totals)
    html = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Q1 2026 Sales</title>
<style>body{{font-family:sans-serif;max-width:720px;margin:2em auto}} table{{border-collapse:collapse}}
td,th{{border:1px solid #999;padding:4px 10px}} td:last-child{{text-align:right}}</style></head>
<body>
<h1>Q1 2026 Sales</h1>
<p>Total revenue Q1 2026: EUR {grand:,}. Top region: <strong>{totals[0][1]}</strong> with EUR {totals[0][0]:,}
({totals[0][0] / grand * 100:.1f}% of the total).</p>
<table>
  <tr><th>Region</th><th>Revenue (EUR)</th></tr>
{rows}
</table>
<svg xmlns="http://www.w3.org/2000/svg" width="600" height="{20 + 40 * len(totals)}" role="img" aria-label="Revenue by region">
{chr(10).join(bars)}
</svg>
</body></html>
"""
    put(ref(t, "report.html"), html)


POS = [("PO-1001", "Nordlicht GmbH", 12400.00), ("PO-1002", "Bytewerk AG", 3150.00),
       ("PO-1003", "Alpen Office", 980.00), ("PO-1004", "Klarsicht IT", 7600.00),
       ("PO-1005", "Nordlicht GmbH", 2200.00)]
INVOICES = [("INV-501", "PO-1001", "Nordlicht GmbH", 12400.00), ("INV-502", "PO-1002", "Bytewerk AG", 3180.00),
            ("INV-503", "PO-1003", "Alpen Office", 1050.00), ("INV-504", "PO-1006", "Sonnenweg KG", 640.00),
            ("INV-505", "PO-1004", "Klarsicht IT", 7600.00), ("INV-503", "PO-1003", "Alpen Office", 1050.00),
            ("INV-506", "PO-1005", "Nordlicht GmbH", 2310.00)]


def ow_work_invoice_check() -> None:
    t = "ow-work-invoice-check"
    save_pdf(env(t, "purchase_orders.pdf"), "Approved purchase orders - January 2026", [
        ("p", "Procurement, Kestrel Labs. All amounts in EUR, excluding VAT."),
        ("table", [["PO number", "Vendor", "Approved amount (EUR)", "Approved by"]]
         + [[p, v, f"{a:,.2f}", "J. Hartmann"] for p, v, a in POS]),
        ("p", "Invoices must quote a PO number from this list."),
    ])
    put(env(t, "invoices.csv"), csv_text([("invoice_id", "po_number", "vendor", "amount_eur")]
                                         + [(i, p, v, money(a)) for i, p, v, a in INVOICES]))
    po = {p: a for p, _, a in POS}
    lines = ["# Invoice discrepancies", "", "| invoice_id | issue | overbilled (EUR) |", "|---|---|---|"]
    seen, total = set(), 0.0
    for inv, p, _v, a in INVOICES:
        if inv in seen:
            lines.append(f"| {inv} | duplicate invoice (listed twice) | 0.00 |")
            continue
        seen.add(inv)
        if p not in po:
            lines.append(f"| {inv} | no matching purchase order ({p}) | 0.00 |")
        elif a > po[p] * 1.01:
            lines.append(f"| {inv} | amount {a:,.2f} exceeds {p} ({po[p]:,.2f}) by more than 1% | {a - po[p]:.2f} |")
            total += a - po[p]
    lines += ["", f"Total overbilled: {total:.2f} EUR", ""]
    put(ref(t, "discrepancies.md"), "\n".join(lines))


def _srt_time(ms: int) -> str:
    h, ms = divmod(ms, 3600000)
    m, ms = divmod(ms, 60000)
    s, ms = divmod(ms, 1000)
    return f"{h:02d}:{m:02d}:{s:02d},{ms:03d}"


SRT_CUES = [(0, 2500, "[MUSIC]"), (2600, 6100, "Good morning, and welcome to lecture seven."),
            (6300, 10200, "Today we look at how glaciers shape valleys."),
            (10400, 14800, "First, a quick recap of last week's quiz."), (15000, 17500, "[MUSIC]"),
            (17700, 22000, "A glacier is a slow river of ice."),
            (22200, 26900, "It carves a U-shaped valley as it moves."),
            (27100, 31000, "Rivers, by contrast, cut V-shaped valleys."),
            (31200, 35800, "Look at the two photos on the next slide."),
            (36000, 39500, "We will come back to this after the break.")]


def ow_study_subtitles() -> None:
    t = "ow-study-subtitles"
    put(env(t, "lecture_07.srt"), "\n".join(f"{i}\n{_srt_time(a)} --> {_srt_time(b)}\n{txt}\n"
                                            for i, (a, b, txt) in enumerate(SRT_CUES, 1)))
    kept = [(a + 1500, b + 1500, txt) for a, b, txt in SRT_CUES if txt != "[MUSIC]"]
    put(ref(t, "lecture_07_fixed.srt"), "\n".join(f"{i}\n{_srt_time(a)} --> {_srt_time(b)}\n{txt}\n"
                                                  for i, (a, b, txt) in enumerate(kept, 1)))


GLOSSARY = [("Mitochondrion", "The cell's power station", "Organelle that produces most of the cell's ATP through "
             "cellular respiration.", "Found in large numbers in muscle cells; has its own DNA."),
            ("Ribosome", "Building proteins", "Small particle of RNA and protein that translates messenger RNA "
             "into a chain of amino acids.", "Free in the cytoplasm or bound to membranes."),
            ("Endoplasmic reticulum", "The cell's production line", "Network of membranes that folds and "
             "transports proteins (rough) and makes lipids (smooth).", "Continuous with the nuclear envelope."),
            ("Golgi apparatus", "Packaging and shipping", "Stack of membrane sacs that modifies, sorts and packages "
             "proteins for secretion or delivery.", "Vesicles bud off towards the cell membrane."),
            ("Lysosome", "Recycling", "Membrane-bound vesicle containing digestive enzymes that break down waste "
             "and worn-out organelles.", "Its interior is acidic, about pH 5.")]


def ow_study_glossary() -> None:
    from pptx import Presentation
    from pptx.util import Inches, Pt

    t = "ow-study-glossary"
    prs = Presentation()
    s = prs.slides.add_slide(prs.slide_layouts[0])
    s.shapes.title.text = "Cell Biology - Lecture 3: Organelles"
    s.placeholders[1].text = "BIO 120, spring term 2026"
    for term, title, definition, fact in GLOSSARY:
        s = prs.slides.add_slide(prs.slide_layouts[1])
        s.shapes.title.text = title
        tf = s.placeholders[1].text_frame
        p = tf.paragraphs[0]
        r = p.add_run()
        r.text = "Key term: "
        r = p.add_run()
        r.text = term
        r.font.bold = True
        p2 = tf.add_paragraph()
        p2.text = fact
        p3 = tf.add_paragraph()
        p3.text = "Compare with the cell membrane and the cytoplasm."
        s.notes_slide.notes_text_frame.text = f"Definition: {definition}"
        box = s.shapes.add_textbox(Inches(0.3), Inches(7.0), Inches(4), Inches(0.4))
        box.text_frame.text = "BIO 120 - Lecture 3"
        box.text_frame.paragraphs[0].runs[0].font.size = Pt(10)
    master = prs.slide_masters[0]
    for layout in list(master.slide_layouts)[2:]:  # unused layouts: smaller file
        master.slide_layouts.remove(layout)
    save_pptx(env(t, "lecture3_organelles.pptx"), prs)
    order = sorted(((term, i + 2, d) for i, (term, _t, d, _f) in enumerate(GLOSSARY)), key=lambda x: x[0].lower())
    body = "\n".join(f"- **{term}** - {d} (slide {n})" for term, n, d in order)
    put(ref(t, "glossary.md"), f"# Glossary - Cell Biology, Lecture 3\n\n{body}\n")


SCORES = [("Ana Costa", (85, 92, 78, 88), 81, 90), ("Ben Okoro", (70, 65, 80, 72), 68, 74),
          ("Chloe Dubois", (95, 98, 91, 100), 94, 97), ("Dev Patel", (60, None, 75, 70), 62, 58),
          ("Emma Lind", (88, 84, 90, 79), 85, 83), ("Farid Haddad", (55, 62, 58, 65), 59, 61)]


def _letter(g: float) -> str:
    return "A" if g >= 90 else "B" if g >= 80 else "C" if g >= 70 else "D" if g >= 60 else "F"


def grades_reference():
    out = []
    for name, quizzes, mid, fin in SCORES:
        q = sorted(0 if x is None else x for x in quizzes)[1:]
        g = 0.3 * (sum(q) / 3) + 0.3 * mid + 0.4 * fin
        out.append((name, round(g + 1e-9, 1)))
    out.sort(key=lambda x: -x[1])
    return out


def ow_study_grades() -> None:
    t = "ow-study-grades"
    put(env(t, "scores.csv"), csv_text([("student", "quiz1", "quiz2", "quiz3", "quiz4", "midterm", "final")]
                                       + [(n, *("" if x is None else x for x in q), m, f) for n, q, m, f in SCORES]))
    rows = grades_reference()
    put(ref(t, "grades.csv"), csv_text([("student", "final_grade", "letter")]
                                       + [(n, f"{g:.1f}", _letter(g)) for n, g in rows]))


RECIPE = [("red lentils", 300, "g"), ("carrots", 2, "pcs"), ("onion", 1, "pcs"), ("garlic cloves", 3, "pcs"),
          ("vegetable stock", 1200, "ml"), ("canned tomatoes", 400, "g"), ("olive oil", 30, "ml"),
          ("ground cumin", 8, "g"), ("lemon", 1, "pcs")]
PANTRY = [("red lentils", 500, "g"), ("carrots", 1, "pcs"), ("onion", 2, "pcs"), ("garlic cloves", 2, "pcs"),
          ("vegetable stock", 1000, "ml"), ("canned tomatoes", 400, "g"), ("olive oil", 500, "ml"),
          ("ground cumin", 5, "g"), ("rice", 1000, "g")]


def ow_life_recipe_shopping() -> None:
    t = "ow-life-recipe-shopping"
    lines = ["# Red lentil soup", "", "Serves **4**. Ready in 40 minutes.", "", "## Ingredients", ""]
    lines += [f"- {q} {u} {item}" for item, q, u in RECIPE]
    lines += ["", "## Method", "", "1. Soften the onion, carrots and garlic in the olive oil.",
              "2. Add cumin, lentils, tomatoes and stock; simmer 25 minutes.",
              "3. Blend half of the soup, season, and finish with lemon juice.", ""]
    put(env(t, "recipe.md"), "\n".join(lines))
    put(env(t, "pantry.csv"), csv_text([("item", "quantity", "unit")] + PANTRY))
    pantry = {i: q for i, q, _ in PANTRY}
    need = []
    for item, q, u in RECIPE:
        short = q * 1.5 - pantry.get(item, 0)
        if short > 0:
            need.append((item, math.ceil(short), u))
    need.sort()
    put(ref(t, "shopping_list.csv"), csv_text([("item", "quantity", "unit")] + need))


EXPENSES = [("2026-07-03", "Aiko", "Hostel, 3 nights", 270.00, "Aiko;Ben;Carla"),
            ("2026-07-03", "Ben", "Groceries", 54.60, "Aiko;Ben;Carla"),
            ("2026-07-04", "Carla", "Kayak rental", 90.00, "Ben;Carla"),
            ("2026-07-04", "Aiko", "Dinner at the harbour", 81.00, "Aiko;Ben;Carla"),
            ("2026-07-05", "Ben", "Train tickets home", 117.00, "Aiko;Ben;Carla"),
            ("2026-07-05", "Carla", "Museum tickets", 24.00, "Aiko;Carla")]


def settlement():
    paid = {"Aiko": 0.0, "Ben": 0.0, "Carla": 0.0}
    share = dict.fromkeys(paid, 0.0)
    for _d, payer, _desc, amt, between in EXPENSES:
        people = between.split(";")
        paid[payer] += amt
        for p in people:
            share[p] += amt / len(people)
    return {p: (round(paid[p], 2), round(share[p], 2), round(paid[p] - share[p], 2)) for p in paid}


def ow_life_trip_settle() -> None:
    t = "ow-life-trip-settle"
    put(env(t, "trip_expenses.csv"), csv_text([("date", "payer", "description", "amount_eur", "split_between")]
                                              + [(d, p, s, money(a), b) for d, p, s, a, b in EXPENSES]))
    bal = settlement()
    lines = ["# Lake Bled trip - settle-up", "", "| person | paid (EUR) | share (EUR) | balance (EUR) |",
             "|---|---|---|---|"]
    lines += [f"| {p} | {a:.2f} | {s:.2f} | {b:+.2f} |" for p, (a, s, b) in bal.items()]
    debtors = sorted(((b, p) for p, (_a, _s, b) in bal.items() if b < 0))
    creditors = sorted(((-b, p) for p, (_a, _s, b) in bal.items() if b > 0))
    lines += ["", "## Transfers", ""]
    cred = [[-c, p] for c, p in creditors]
    for b, p in debtors:
        owe = -b
        for c in cred:
            if owe <= 0.004:
                break
            x = min(owe, c[0])
            if x > 0.004:
                lines.append(f"- {p} pays {c[1]} {x:.2f} EUR")
                c[0] -= x
                owe -= x
    total = sum(e[3] for e in EXPENSES)
    lines += ["", f"Total trip cost: {total:.2f} EUR", ""]
    put(ref(t, "settlement.md"), "\n".join(lines))


# ===================================================================================== LATENT INFERENCE
def li_work_changelog() -> None:
    t = "li-work-changelog"
    put(env(t, "CHANGELOG.md"), """# Changelog

All notable changes to Ledgerline are documented in this file.

## [Unreleased]

## [2.3.0] - 2026-01-19
### Added
- Export of monthly statements to PDF (#412)
- Keyboard shortcut for a new transaction (#415)
### Fixed
- Wrong currency symbol for CHF accounts (#418)

## [2.2.1] - 2025-12-02
### Fixed
- Sync stalls when the server returns HTTP 429 (#405)

## [2.2.0] - 2025-11-10
### Added
- Recurring transactions (#380)
### Changed
- `ledger.export()` now returns a `Path` instead of a string (#388)
### Fixed
- Duplicate categories after import (#391)

[Unreleased]: https://git.example.com/acme/ledgerline/compare/v2.3.0...HEAD
[2.3.0]: https://git.example.com/acme/ledgerline/compare/v2.2.1...v2.3.0
[2.2.1]: https://git.example.com/acme/ledgerline/compare/v2.2.0...v2.2.1
[2.2.0]: https://git.example.com/acme/ledgerline/compare/v2.1.0...v2.2.0
""")
    put(env(t, "commits_since_v2.3.0.txt"), """a91c2e4 feat: add CSV import wizard (#431)
b03d7f1 fix: rounding error in VAT totals (#433)
c4e8a22 chore: bump eslint to 9.2 (#434)
d19b0c3 docs: update API examples (#435)
e7f61aa feat: dark mode for reports (#437)
f2a9d58 refactor!: rename `ledger.sync()` to `ledger.pull()` (#438)
0b6e3c9 fix: crash when an account name is empty (#440)
1c7d4e2 test: add fixtures for the import wizard (#441)
""")
    put(ref(t, "CHANGELOG.md"), """# Changelog

All notable changes to Ledgerline are documented in this file.

## [Unreleased]

## [2.4.0] - 2026-03-02
### Added
- CSV import wizard (#431)
- Dark mode for reports (#437)
### Changed
- `ledger.sync()` renamed to `ledger.pull()` (#438)
### Fixed
- Rounding error in VAT totals (#433)
- Crash when an account name is empty (#440)

## [2.3.0] - 2026-01-19
### Added
- Export of monthly statements to PDF (#412)
- Keyboard shortcut for a new transaction (#415)
### Fixed
- Wrong currency symbol for CHF accounts (#418)

## [2.2.1] - 2025-12-02
### Fixed
- Sync stalls when the server returns HTTP 429 (#405)

## [2.2.0] - 2025-11-10
### Added
- Recurring transactions (#380)
### Changed
- `ledger.export()` now returns a `Path` instead of a string (#388)
### Fixed
- Duplicate categories after import (#391)

[Unreleased]: https://git.example.com/acme/ledgerline/compare/v2.4.0...HEAD
[2.4.0]: https://git.example.com/acme/ledgerline/compare/v2.3.0...v2.4.0
[2.3.0]: https://git.example.com/acme/ledgerline/compare/v2.2.1...v2.3.0
[2.2.1]: https://git.example.com/acme/ledgerline/compare/v2.2.0...v2.2.1
[2.2.0]: https://git.example.com/acme/ledgerline/compare/v2.1.0...v2.2.0
""")


TICKETS = [("T-1041", "answered", "Greta Holm", "Where is my order?", "Order #88120 has not arrived yet.", "24.50",
            "", "2026-02-26"),
           ("T-1042", "answered", "Daniel Frey", "Refund for a blender", "The blender is too loud, I want a refund.",
            "34.99", "2026-02-12", "2026-02-27"),
           ("T-1043", "answered", "Amira Saleh", "Refund for a coffee machine",
            "Please refund the coffee machine, it leaks.", "219.00", "2026-02-18", "2026-02-28"),
           ("T-1050", "open", "Jonas Weber", "Refund for kettle", "The kettle's lid does not close. I'd like my "
            "money back.", "39.90", "2026-02-20", "2026-03-05"),
           ("T-1051", "open", "Sofia Marquez", "Headphones refund", "The left earcup crackles. Can I get a refund?",
            "129.00", "2026-02-25", "2026-03-06"),
           ("T-1052", "open", "Liam O'Brien", "Lamp refund", "My desk lamp flickers since last week, please refund it.",
            "45.00", "2026-01-10", "2026-03-04")]


def li_work_support_replies() -> None:
    t = "li-work-support-replies"
    save_pdf(env(t, "refund_policy.pdf"), "Brightnest Home - Refund policy (internal, v4, 2026)", [
        ("h", "1. Refund window"),
        ("p", "Customers can ask for a refund within 30 days of delivery. The day of delivery is day 0. Requests "
              "received after day 30 are not refunded; instead the agent offers a free repair under the two-year "
              "warranty and explains how to book it at brightnest.example/repair."),
        ("h", "2. Approval"),
        ("p", "Agents approve refunds for orders up to and including 50.00 EUR themselves and tell the customer "
              "that the money arrives within 5 business days after the return is received. Orders above 50.00 EUR "
              "need the team lead's approval: the agent forwards the request and tells the customer so; agents "
              "never promise an amount or a date for such orders."),
        ("h", "3. Returns"),
        ("p", "Every approved refund needs the item back: the agent includes the prepaid return label link "
              "brightnest.example/returns."),
    ])
    put(env(t, "tickets.csv"), csv_text([("ticket", "status", "customer", "subject", "message", "order_total_eur",
                                          "delivered_on", "received_on")] + TICKETS))
    put(env(t, "replies/T-1041.txt"), """Subject: Re: [T-1041] Where is my order?

Hi Greta,

thank you for getting in touch. Your order #88120 left our warehouse on 24 February and is with the courier; you can follow it with the tracking link in your shipping e-mail.

Kind regards,
Mira
Brightnest Customer Care
""")
    put(env(t, "replies/T-1042.txt"), """Subject: Re: [T-1042] Refund for a blender

Hi Daniel,

thank you for your message, and sorry the blender did not work out. I have approved your refund. Please send the blender back with our prepaid label (brightnest.example/returns); the money arrives within 5 business days after we receive it.

Kind regards,
Mira
Brightnest Customer Care
""")
    put(env(t, "replies/T-1043.txt"), """Subject: Re: [T-1043] Refund for a coffee machine

Hi Amira,

thank you for your message, and sorry about the leak. I have forwarded your refund request to my team lead, who will get back to you. In the meantime please keep the coffee machine and its packaging.

Kind regards,
Mira
Brightnest Customer Care
""")
    put(ref(t, "replies/T-1050.txt"), """Subject: Re: [T-1050] Refund for kettle

Hi Jonas,

thank you for your message, and sorry about the lid. I have approved your refund. Please send the kettle back with our prepaid label (brightnest.example/returns); the money arrives within 5 business days after we receive it.

Kind regards,
Mira
Brightnest Customer Care
""")
    put(ref(t, "replies/T-1051.txt"), """Subject: Re: [T-1051] Headphones refund

Hi Sofia,

thank you for your message, and sorry about the crackling. I have forwarded your refund request to my team lead, who will get back to you. In the meantime please keep the headphones and their packaging.

Kind regards,
Mira
Brightnest Customer Care
""")
    put(ref(t, "replies/T-1052.txt"), """Subject: Re: [T-1052] Lamp refund

Hi Liam,

thank you for your message, and sorry the lamp flickers. Your lamp was delivered on 10 January, more than 30 days ago, so I cannot refund it, but it is covered by our two-year warranty: you can book a free repair at brightnest.example/repair.

Kind regards,
Mira
Brightnest Customer Care
""")


RECEIPTS = [("2026-02-03", "Trattoria Roma", "Client dinner (incl. wine 18.00)", 64.00, "yes"),
            ("2026-02-03", "Hotel Adler", "Hotel, 1 night", 172.00, "yes"),
            ("2026-02-04", "DB Fernverkehr", "Train Munich-Stuttgart", 89.90, "yes"),
            ("2026-02-04", "Taxi Stuttgart", "Taxi to client office", 31.50, "no"),
            ("2026-02-11", "Cafe Mitte", "Lunch", 14.20, "yes"),
            ("2026-02-11", "City Parking", "Parking garage", 12.00, "no")]


def li_work_expense_claim() -> None:
    from openpyxl import Workbook
    from openpyxl.styles import Font

    t = "li-work-expense-claim"
    save_pdf(env(t, "travel_expense_policy.pdf"), "Travel expense policy (2026)", [
        ("h", "Limits"),
        ("table", [["Category code", "What", "Limit"], ["MEAL", "Meals", "40.00 EUR per day"],
                   ["HOTEL", "Accommodation", "150.00 EUR per night"],
                   ["TRAVEL", "Train, taxi, parking, fuel", "actual cost"]]),
        ("p", "Amounts above a limit are reimbursed up to the limit only. Alcoholic drinks are never reimbursed: "
              "deduct them from the receipt before applying the meal limit."),
        ("h", "Receipts"),
        ("p", "Every item above 25.00 EUR needs a receipt; an item above 25.00 EUR without a receipt is not "
              "reimbursed and must be left out of the claim. Items up to 25.00 EUR may be claimed without one."),
    ])
    put(env(t, "receipts_2026-02.csv"), csv_text([("date", "vendor", "description", "amount_eur", "receipt")]
                                                 + [(d, v, s, money(a), r) for d, v, s, a, r in RECEIPTS]))
    wb = Workbook()
    ws = wb.active
    ws.title = "Claim 2026-01"
    ws.append(["Date", "Category", "Description", "Amount claimed (EUR)", "Receipt"])
    for c in ws[1]:
        c.font = Font(bold=True)
    rows = [("2026-01-14", "TRAVEL", "Train Berlin-Leipzig", 49.90, "yes"),
            ("2026-01-14", "HOTEL", "Hotel Lindner, 1 night (165.00, capped)", 150.00, "yes"),
            ("2026-01-15", "MEAL", "Team lunch", 22.40, "yes"),
            ("2026-01-15", "TRAVEL", "Parking", 8.00, "no")]
    for r in rows:
        ws.append(list(r))
    ws.append(["TOTAL", "", "", round(sum(r[3] for r in rows), 2), ""])
    ws["A6"].font = Font(bold=True)
    save_xlsx(env(t, "claim_2026-01.xlsx"), wb)
    claim = [("2026-02-03", "MEAL", "Client dinner, Trattoria Roma (64.00 less wine 18.00, capped)", 40.00, "yes"),
             ("2026-02-03", "HOTEL", "Hotel Adler, 1 night (172.00, capped)", 150.00, "yes"),
             ("2026-02-04", "TRAVEL", "Train Munich-Stuttgart", 89.90, "yes"),
             ("2026-02-11", "MEAL", "Lunch, Cafe Mitte", 14.20, "yes"),
             ("2026-02-11", "TRAVEL", "Parking garage", 12.00, "no")]
    put(ref(t, "claim_2026-02.csv"), csv_text([("Date", "Category", "Description", "Amount claimed (EUR)", "Receipt")]
                                              + [(a, b, c, money(d), e) for a, b, c, d, e in claim]
                                              + [("TOTAL", "", "", money(sum(r[3] for r in claim)), "")]))


def li_study_references() -> None:
    from docx import Document

    t = "li-study-references"
    d = Document()
    d.add_heading("Why spacing beats cramming", level=1)
    d.add_paragraph("Students often cram the night before an exam, yet decades of research show that spreading "
                    "practice over time leads to better long-term retention (Okafor, 2019). Attention in the "
                    "classroom is limited, and lessons that revisit earlier material help students keep track "
                    "(Williams, 2017).")
    d.add_paragraph("Sleep matters as well: memories are consolidated overnight, so an all-night study session "
                    "works against the learner (Brandt & Hoang, 2021).")
    d.add_heading("References", level=2)
    refs = [("Brandt, L., & Hoang, T. (2021). ", "Sleep and memory consolidation in adolescents.",
             " Journal of Learning Sciences, 14(2), 101\u2013118.", False),
            ("Okafor, C. (2019). ", "Spaced repetition in secondary schools.",
             " Educational Review, 33(1), 45\u201367.", False),
            ("Williams, R. (2017). ", "Attention and the classroom.", " Cambridge University Press.", True)]
    for head, title, tail, book in refs:
        p = d.add_paragraph()
        p.add_run(head)
        r = p.add_run(title)
        r.italic = book
        if book:
            p.add_run(tail)
        else:
            journal, rest = tail.strip().split(",", 1)
            p.add_run(" ")
            p.add_run(journal).italic = True
            p.add_run("," + rest)
    save_docx(env(t, "essay_draft.docx"), d)
    put(env(t, "new_sources.csv"), csv_text([
        ("authors", "year", "title", "venue", "volume", "issue", "pages", "type"),
        ("Adeyemi, Kunle", 2020, "The Effect Of Retrieval Practice On Exam Scores", "Memory Studies", 8, 4,
         "210-225", "article"),
        ("Ishikawa, Yuki; Lopez, Maria", 2022, "Interleaving In Mathematics Homework", "Journal of Learning Sciences",
         15, 1, "12-30", "article"),
        ("Novak, Petra", 2018, "Learning How To Learn", "Oxford University Press", "", "", "", "book")]))
    put(ref(t, "references.md"), """# References

Adeyemi, K. (2020). The effect of retrieval practice on exam scores. *Memory Studies*, 8(4), 210\u2013225.

Brandt, L., & Hoang, T. (2021). Sleep and memory consolidation in adolescents. *Journal of Learning Sciences*, 14(2), 101\u2013118.

Ishikawa, Y., & Lopez, M. (2022). Interleaving in mathematics homework. *Journal of Learning Sciences*, 15(1), 12\u201330.

Novak, P. (2018). *Learning how to learn*. Oxford University Press.

Okafor, C. (2019). Spaced repetition in secondary schools. *Educational Review*, 33(1), 45\u201367.

Williams, R. (2017). *Attention and the classroom*. Cambridge University Press.
""")


def li_study_flashcards() -> None:
    t = "li-study-flashcards"
    deck = [("Population", "All individuals a study wants to describe", "ch1 vocab"),
            ("Variable", "A characteristic that differs between individuals", "ch1 vocab"),
            ("Histogram", "Bar chart of counts per value interval", "ch2 vocab"),
            ("Relative frequency", "Count of a value divided by the total count", "ch2 vocab"),
            ("Relative frequency formula", "f_rel = n_i / n", "ch2 formula"),
            ("Mean", "Sum of the values divided by their number", "ch3 vocab"),
            ("Mean formula", "x\u0304 = (x_1 + ... + x_n) / n", "ch3 formula"),
            ("Mode", "The most frequent value", "ch3 vocab")]
    put(env(t, "statistics_deck.csv"), csv_text(deck, delimiter=";"))
    put(env(t, "chapter4.html"), """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Chapter 4 - Spread</title></head>
<body>
<h1>Chapter 4: Measures of spread</h1>
<p>Knowing the centre of a data set is not enough: two classes can have the same mean grade and very
different spreads. This chapter introduces the usual measures.</p>
<dl>
  <dt>Range</dt><dd>The difference between the largest and the smallest value. It is very sensitive to extreme
  values.</dd>
  <dt>Variance</dt><dd>The average of the squared deviations from the mean; for a sample we divide by n - 1
  instead of n.</dd>
  <dt>Standard deviation</dt><dd>The square root of the variance, measured in the same unit as the data.</dd>
  <dt>Interquartile range</dt><dd>The difference between the third and the first quartile; it covers the middle
  half of the data.</dd>
  <dt>Outlier</dt><dd>A value far away from the rest of the data, for example more than 1.5 interquartile ranges
  beyond a quartile.</dd>
</dl>
<div class="formula"><h2>Formulas</h2>
<p>Sample variance: s&sup2; = &Sigma;(x_i - x&#772;)&sup2; / (n - 1)</p>
<p>Standard deviation: s = &radic;s&sup2;</p>
</div>
</body></html>
""")
    put(ref(t, "chapter4.csv"), csv_text([
        ("Range", "Largest value minus smallest value", "ch4 vocab"),
        ("Variance", "Average squared deviation from the mean", "ch4 vocab"),
        ("Standard deviation", "Square root of the variance, in the data's unit", "ch4 vocab"),
        ("Interquartile range", "Third quartile minus first quartile", "ch4 vocab"),
        ("Outlier", "A value far away from the rest of the data", "ch4 vocab"),
        ("Sample variance formula", "s\u00b2 = \u03a3(x_i - x\u0304)\u00b2 / (n - 1)", "ch4 formula"),
        ("Standard deviation formula", "s = \u221as\u00b2", "ch4 formula")], delimiter=";"))


RECIPES = [("Peanut noodle stir-fry", "noodles; peanuts; peanut butter; vegetables", 25, "yes", "no"),
           ("Chicken satay skewers", "chicken; satay sauce (peanut); rice", 35, "no", "no"),
           ("Vegetable lasagne", "pasta sheets; courgette; tomato; cheese", 60, "yes", "no"),
           ("Salmon traybake", "salmon; potatoes; green beans", 30, "no", "yes"),
           ("Tomato pasta", "spaghetti; tomato; basil", 15, "yes", "no"),
           ("Lentil curry", "lentils; coconut milk; spinach; rice", 40, "yes", "no"),
           ("Beef tacos", "beef mince; tortillas; salsa", 25, "no", "no"),
           ("Cheese omelette with salad", "eggs; cheese; salad", 12, "yes", "no"),
           ("Mushroom risotto", "rice; mushrooms; parmesan", 45, "yes", "no"),
           ("Fish tacos", "white fish; tortillas; cabbage", 25, "no", "yes"),
           ("Halloumi salad", "halloumi; tomato; cucumber; olives", 15, "yes", "no"),
           ("Pesto gnocchi", "gnocchi; basil pesto (pine nuts); peas", 20, "yes", "no")]


def li_life_meal_plan() -> None:
    t = "li-life-meal-plan"
    put(env(t, "recipes.csv"), csv_text([("recipe", "main_ingredients", "minutes", "vegetarian", "fish")] + RECIPES))
    put(env(t, "household.md"), """# Our household

- Two adults (Jana, Pavel) and two kids (Noah, 9, and Ida, 6).
- Wednesdays: swimming lessons, we are home at 19:00 - dinner has to be on the table in 20 minutes or less.
- Friday is fish night (a family tradition).
- Everyone eats meat, but we try to have at least three vegetarian dinners a week.
""")
    save_pdf(env(t, "letter_dr_keller.pdf"), "Paediatric practice Dr. M. Keller", [
        ("p", "Hauptstrasse 4, 79098 Freiburg - 12 January 2026"),
        ("p", "To the parents of Noah Svoboda (born 3 May 2016)"),
        ("p", "Dear Ms and Mr Svoboda,"),
        ("p", "the skin-prick test and the blood test of 9 January confirm that Noah has a <b>peanut allergy</b>. "
              "Please make sure that Noah does not eat peanuts or foods containing peanut (peanut butter, satay and "
              "peanut sauces, peanut oil). Tree nuts such as pine nuts were tested and are tolerated."),
        ("p", "Please keep the adrenaline auto-injector with you at all times."),
        ("p", "Kind regards, Dr. Miriam Keller"),
    ])
    put(ref(t, "meal_plan.csv"), csv_text([("day", "recipe"), ("Monday", "Lentil curry"),
                                           ("Tuesday", "Beef tacos"), ("Wednesday", "Tomato pasta"),
                                           ("Thursday", "Vegetable lasagne"), ("Friday", "Salmon traybake"),
                                           ("Saturday", "Mushroom risotto"), ("Sunday", "Pesto gnocchi")]))


def li_life_piano_lessons() -> None:
    t = "li-life-piano-lessons"
    put(env(t, "school_calendar_2025-26.ics"), "\r\n".join([
        "BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Grundschule am Park//Calendar//EN",
        "BEGIN:VEVENT", "UID:winter-2026@gs-park.example", "DTSTAMP:20250901T080000Z",
        "DTSTART;VALUE=DATE:20260216", "DTEND;VALUE=DATE:20260221", "SUMMARY:Winter break (no school)",
        "END:VEVENT",
        "BEGIN:VEVENT", "UID:easter-2026@gs-park.example", "DTSTAMP:20250901T080000Z",
        "DTSTART;VALUE=DATE:20260330", "DTEND;VALUE=DATE:20260411", "SUMMARY:Easter holidays (no school)",
        "END:VEVENT",
        "BEGIN:VEVENT", "UID:parents-2026@gs-park.example", "DTSTAMP:20250901T080000Z",
        "DTSTART:20260317T190000", "DTEND:20260317T203000", "SUMMARY:Parents' evening",
        "END:VEVENT",
        "BEGIN:VEVENT", "UID:may-2026@gs-park.example", "DTSTAMP:20250901T080000Z",
        "DTSTART;VALUE=DATE:20260501", "DTEND;VALUE=DATE:20260502", "SUMMARY:Labour Day (no school)",
        "END:VEVENT", "END:VCALENDAR", ""]))
    put(env(t, "email_from_teacher.html"), """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Re: Piano lessons for Mia</title></head>
<body>
<p><b>From:</b> Clara Vogt &lt;clara.vogt@example.org&gt;<br><b>To:</b> you<br><b>Subject:</b> Re: Piano lessons for Mia</p>
<p>Hello,</p>
<p>I'm happy to take Mia from March. Tuesdays at 17:00 work for me. Just so you know how I work: a lesson is
45 minutes, it takes place in my studio at Lindenstrasse 12, and like most teachers I follow the school
calendar - there are no lessons during school holidays.</p>
<p>Best wishes,<br>Clara</p>
</body></html>
""")
    days = [date(2026, 3, 3) + timedelta(weeks=i) for i in range(9)]
    days = [d for d in days if not (date(2026, 3, 30) <= d <= date(2026, 4, 10))]
    ev = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//ifbench reference//EN"]
    for d in days:
        s = d.strftime("%Y%m%d")
        ev += ["BEGIN:VEVENT", f"UID:piano-{s}@example.org", "DTSTAMP:20260301T000000Z",
               f"DTSTART:{s}T170000", f"DTEND:{s}T174500", "SUMMARY:Piano lesson (Mia)",
               "LOCATION:Clara Vogt's studio, Lindenstrasse 12", "END:VEVENT"]
    ev += ["END:VCALENDAR", ""]
    put(ref(t, "lessons.ics"), "\r\n".join(ev))


ALBUM_OLD = [("2026-05-02-lake.png", (120, 80), "Lake Constance", "2 May 2026", (70, 130, 180)),
             ("2026-04-18-blossom.png", (80, 120), "Kaiserstuhl", "18 April 2026", (230, 160, 190)),
             ("2026-03-29-snow.png", (100, 100), "Feldberg", "29 March 2026", (220, 230, 240))]
ALBUM_NEW = [("2026-06-14-beach.png", (128, 96), "Sylt", "14 June 2026", (240, 210, 140)),
             ("2026-05-23-vineyard.png", (96, 128), "Moselle valley", "23 May 2026", (110, 160, 80)),
             ("2026-06-01-castle.png", (112, 84), "Heidelberg", "1 June 2026", (170, 110, 90))]


def _figure(path: str, size, place: str, when: str) -> str:
    return (f'  <figure>\n    <img src="{path}" alt="{place}, {when}" width="{size[0]}" height="{size[1]}">\n'
            f"    <figcaption>{place} \u2014 {when}</figcaption>\n  </figure>")


def _album(figs) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Our trips 2026</title>\n"
            "<style>figure{display:inline-block;margin:8px} figcaption{font:14px sans-serif}</style></head>\n"
            "<body>\n<h1>Our trips 2026</h1>\n<!-- newest first -->\n<main>\n" + "\n".join(figs)
            + "\n</main>\n</body></html>\n")


def li_life_photo_album() -> None:
    t = "li-life-photo-album"

    def painter(color):
        def draw(dr, size):
            w, h = size
            dr.rectangle([0, 0, w, h // 2], fill=(200, 225, 245))
            dr.rectangle([0, h // 2, w, h], fill=color)
            dr.ellipse([w // 4, h // 6, w // 4 + h // 5, h // 6 + h // 5], fill=(250, 220, 90))
        return draw

    for name, size, _p, _w, color in ALBUM_OLD:
        save_png(env(t, f"photos/{name}"), size, painter(color))
    for name, size, _p, _w, color in ALBUM_NEW:
        save_png(env(t, f"new_photos/{name}"), size, painter(color))
    put(env(t, "album.html"), _album([_figure(f"photos/{n}", s, p, w) for n, s, p, w, _c in ALBUM_OLD]))
    put(env(t, "new_photos/captions.txt"), "".join(f"{n}: {p}\n" for n, _s, p, _w, _c in
                                                   sorted(ALBUM_NEW)))
    allp = sorted(ALBUM_OLD + ALBUM_NEW, reverse=True)
    put(ref(t, "album.html"), _album([_figure(("photos/" if e in ALBUM_OLD else "new_photos/") + e[0], e[1], e[2],
                                              e[3]) for e in allp]))


# ================================================================================ ITERATIVE REFINEMENT
BUDGET = [("Engineering", "Laptops", 18000), ("Engineering", "Cloud hosting", 24500),
          ("Engineering", "Software licences", 6200), ("Marketing", "Online ads", 15000),
          ("Marketing", "Trade fair", 9500), ("Marketing", "Merchandise", 2300),
          ("Sales", "Travel", 11200), ("Sales", "CRM seats", 4800),
          ("HR", "Recruiting", 7400), ("HR", "Training", 5100)]


def ir_work_budget() -> None:
    from openpyxl import Workbook
    from openpyxl.styles import Font

    t = "ir-work-budget"
    wb = Workbook()
    ws = wb.active
    ws.title = "Budget 2026"
    ws.append(["Department", "Item", "Amount (EUR)"])
    for c in ws[1]:
        c.font = Font(bold=True)
    for r in BUDGET:
        ws.append(list(r))
    save_xlsx(env(t, "budget_2026.xlsx"), wb)
    tot: dict[str, float] = {}
    for dep, _i, a in BUDGET:
        tot[dep] = tot.get(dep, 0) + a
    tot["Marketing"] = round(tot["Marketing"] * 0.9, 2)
    grand = sum(tot.values())
    rows = sorted(tot.items(), key=lambda x: -x[1])
    put(ref(t, "budget_summary.csv"), csv_text([("department", "total_eur", "share_pct")]
                                               + [(d, f"{v:.0f}", f"{v / grand * 100:.1f}") for d, v in rows]
                                               + [("TOTAL", f"{grand:.0f}", "100.0")]))


def ir_work_job_ad() -> None:
    from docx import Document

    t = "ir-work-job-ad"
    d = Document()
    d.add_heading("Backend Developer (m/f/d) - Kestrel Labs, Leipzig", level=1)
    d.add_heading("About us", level=2)
    d.add_paragraph("Kestrel Labs builds route-planning software for 400 logistics companies. We are a team of 35, "
                    "half of us engineers, with an office near Leipzig main station.")
    d.add_heading("Your role", level=2)
    for b in ["Design and build REST APIs in Python", "Own services from design to production",
              "Write tests and review your colleagues' code", "Improve the performance of our routing engine",
              "Work with product managers on new features", "Be an absolute rockstar in every sprint",
              "Mentor junior developers", "Take part in the on-call rotation (one week in eight)"]:
        d.add_paragraph(b, style="List Bullet")
    d.add_heading("What you bring", level=2)
    for b in ["3+ years of professional Python experience", "Good knowledge of PostgreSQL",
              "Experience with Docker and CI pipelines", "Fluent English; German is a plus"]:
        d.add_paragraph(b, style="List Bullet")
    d.add_heading("What we offer", level=2)
    d.add_paragraph("A competitive salary, 30 days of holiday, a public-transport ticket, two remote days a week "
                    "and a yearly training budget of EUR 1,500. Are you a coding ninja? Then we want to meet you.")
    save_docx(env(t, "job_ad_draft.docx"), d)
    put(ref(t, "job_ad.md"), """# Backend Developer (m/f/d) - Kestrel Labs, Leipzig

## About us

Kestrel Labs builds route-planning software for 400 logistics companies. We are a team of 35, half of us engineers, with an office near Leipzig main station.

## Your role

- Design, build and own REST APIs and services in Python, from design to production
- Write tests and review your colleagues' code
- Improve the performance of our routing engine
- Work with product managers on new features and mentor junior developers
- Take part in the on-call rotation (one week in eight)

## What you bring

- 3+ years of professional Python experience
- Good knowledge of PostgreSQL
- Experience with Docker and CI pipelines
- Fluent English; German is a plus

## What we offer

A salary of EUR 58,000-66,000 a year, 30 days of holiday, a public-transport ticket, two remote days a week and a yearly training budget of EUR 1,500.

## How to apply

Send your CV and a short note to jobs@example.com.
""")


SYLLABUS = [("Descriptive statistics", 3), ("Probability", 4), ("Random variables and distributions", 4),
            ("Sampling and the central limit theorem", 3), ("Hypothesis testing", 5), ("Linear regression", 4),
            ("Practice exam", 3)]


def ir_study_schedule() -> None:
    t = "ir-study-schedule"
    save_pdf(env(t, "syllabus_stat101.pdf"), "STAT 101 - Introduction to Statistics, summer term 2026", [
        ("p", "Lecturer: Dr. A. Moreau. Written exam: <b>Tuesday 19 May 2026, 09:00</b>, lecture hall H2."),
        ("h", "Exam topics and recommended revision time"),
        ("table", [["#", "Topic", "Revision (hours)"]] + [[str(i), n, str(h)] for i, (n, h) in
                                                          enumerate(SYLLABUS[:-1], 1)]),
        ("p", "Later topics build on earlier ones: revise them in this order. We strongly recommend a timed "
              "practice exam (3 hours) on the day before the exam."),
    ])
    plan = [("2026-05-13", "Descriptive statistics", 3), ("2026-05-13", "Probability", 2),
            ("2026-05-14", "Probability", 2), ("2026-05-14", "Random variables and distributions", 3),
            ("2026-05-15", "Random variables and distributions", 1),
            ("2026-05-15", "Sampling and the central limit theorem", 3), ("2026-05-15", "Hypothesis testing", 1),
            ("2026-05-16", "Hypothesis testing", 4), ("2026-05-16", "Linear regression", 2),
            ("2026-05-18", "Linear regression", 2), ("2026-05-18", "Practice exam", 3)]
    put(ref(t, "plan.csv"), csv_text([("date", "topic", "hours")] + plan))
    md = ["# STAT 101 revision plan", ""]
    for day in sorted({p[0] for p in plan}):
        md += [f"## {day}", "", "| topic | hours |", "|---|---|"]
        md += [f"| {tp} | {h} |" for d, tp, h in plan if d == day]
        md += [f"| **total** | {sum(h for d, _t, h in plan if d == day)} |", ""]
    put(ref(t, "plan.md"), "\n".join(md))


MEAS = [(0, 92.0), (5, 81.5), (10, 72.8), (15, 65.9), (20, 60.1), (25, 99.9), (30, 51.2), (35, 47.8),
        (40, 44.9), (45, 42.5)]


def ir_study_cooling_plot() -> None:
    t = "ir-study-cooling-plot"
    put(env(t, "measurements.csv"), csv_text([("time_min", "temp_c")] + MEAS))
    pts = [(m, c) for m, c in MEAS if m != 25]
    x = lambda m: 60 + m * 10  # noqa: E731
    y = lambda c: 340 - (c - 40) * 5  # noqa: E731
    poly = " ".join(f"{x(m)},{y(c):.1f}" for m, c in pts)
    dots = "\n".join(f'  <circle cx="{x(m)}" cy="{y(c):.1f}" r="3"/>' for m, c in pts)
    put(ref(t, "cooling.svg"), f"""<svg xmlns="http://www.w3.org/2000/svg" width="560" height="400" font-family="sans-serif">
  <text x="280" y="24" text-anchor="middle" font-size="18">Cooling of water</text>
  <line x1="60" y1="340" x2="520" y2="340" stroke="black"/>
  <line x1="60" y1="340" x2="60" y2="40" stroke="black"/>
  <text x="290" y="380" text-anchor="middle">time (min)</text>
  <text x="18" y="190" text-anchor="middle" transform="rotate(-90 18 190)">temperature (\u00b0C)</text>
  <polyline points="{poly}" fill="none" stroke="#c0392b" stroke-width="2"/>
{dots}
</svg>
""")
    put(ref(t, "notes.md"), "# Notes\n\nThe reading at t = 25 min (99.9 \u00b0C) is a sensor glitch: it is higher "
                            "than the starting temperature and breaks the smooth cooling curve, so it is left out "
                            "of cooling.svg. measurements.csv is unchanged.\n")


def ir_study_homework() -> None:
    t = "ir-study-homework"
    put(env(t, "homework.py"), '''"""Homework 4: simple statistics without libraries."""


def mean_and_median(values):
    """Return (mean, median) of a list of numbers."""
    raise NotImplementedError
''')
    put(env(t, "test_homework.py"), '''import unittest

from homework import mean_and_median


class TestMeanAndMedian(unittest.TestCase):
    def test_odd(self):
        self.assertEqual(mean_and_median([3, 1, 2]), (2, 2))

    def test_even(self):
        self.assertEqual(mean_and_median([4, 1, 3, 2]), (2.5, 2.5))

    def test_floats(self):
        mean, median = mean_and_median([1.5, 2.5, 10.0])
        self.assertAlmostEqual(mean, 14.0 / 3)
        self.assertEqual(median, 2.5)


if __name__ == "__main__":
    unittest.main()
''')
    put(ref(t, "homework.py"), '''"""Homework 4: simple statistics without libraries."""


def summary_stats(values):
    """Return (mean, median) of a list of numbers; (None, None) for an empty list."""
    if not values:
        return None, None
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return sum(ordered) / n, median


mean_and_median = summary_stats  # old name, kept for existing code
''')
    put(ref(t, "test_homework.py"), '''import unittest

from homework import mean_and_median, summary_stats


class TestMeanAndMedian(unittest.TestCase):
    def test_odd(self):
        self.assertEqual(mean_and_median([3, 1, 2]), (2, 2))

    def test_even(self):
        self.assertEqual(mean_and_median([4, 1, 3, 2]), (2.5, 2.5))

    def test_floats(self):
        mean, median = mean_and_median([1.5, 2.5, 10.0])
        self.assertAlmostEqual(mean, 14.0 / 3)
        self.assertEqual(median, 2.5)

    def test_empty(self):
        self.assertEqual(summary_stats([]), (None, None))

    def test_alias(self):
        self.assertIs(mean_and_median, summary_stats)


if __name__ == "__main__":
    unittest.main()
''')


GUESTS = [("Gerda Becker", "Becker family", "wheelchair"), ("Rosa Becker", "Becker family", ""),
          ("Hans Becker", "Becker family", ""), ("Lea Becker", "Becker family", "child, 7"),
          ("Dieter Schulz", "Schulz family", ""), ("Karin Schulz", "Schulz family", "vegetarian"),
          ("Ivan Novak", "Novak family", ""), ("Mila Novak", "Novak family", ""),
          ("Tomas Novak", "Novak family", "child, 10"), ("Eva Novak", "Novak family", "child, 5"),
          ("Sam Lee", "Lee & Kim", ""), ("Jordan Kim", "Lee & Kim", "vegetarian"),
          ("Priya Shah", "friend", ""), ("Omar Haddad", "friend", ""), ("Nina Roth", "friend", ""),
          ("Felix Wagner", "colleague", ""), ("Anna Berg", "colleague", ""), ("Paul Frey", "colleague", "")]


def ir_life_seating() -> None:
    t = "ir-life-seating"
    put(env(t, "guests.csv"), csv_text([("name", "party", "notes")] + GUESTS))
    put(env(t, "hall.svg"), """<svg xmlns="http://www.w3.org/2000/svg" width="420" height="300" font-family="sans-serif" font-size="13">
  <title>Hall of the Gasthaus Linde - table plan</title>
  <rect x="5" y="5" width="410" height="290" fill="#fafafa" stroke="#333" stroke-width="3"/>
  <rect x="380" y="230" width="35" height="60" fill="#8d6e63"/>
  <text x="330" y="285">Entrance</text>
  <rect x="110" y="120" width="200" height="30" fill="#d7ccc8"/><text x="180" y="140">Buffet</text>
  <circle cx="70" cy="60" r="35" fill="#fff" stroke="#333"/><text x="47" y="65">Table A</text>
  <circle cx="340" cy="60" r="35" fill="#fff" stroke="#333"/><text x="317" y="65">Table B</text>
  <circle cx="300" cy="230" r="35" fill="#fff" stroke="#333"/><text x="277" y="235">Table C</text>
  <text x="20" y="280" font-size="11">Three round tables, 6 seats each. Steps at tables A and B.</text>
</svg>
""")
    put(ref(t, "seating.csv"), csv_text([("table", "name")]
                                        + [("C", n) for n in ("Gerda Becker", "Rosa Becker", "Hans Becker",
                                                              "Lea Becker", "Sam Lee", "Jordan Kim")]
                                        + [("A", n) for n in ("Dieter Schulz", "Karin Schulz", "Priya Shah",
                                                              "Omar Haddad", "Nina Roth", "Felix Wagner")]
                                        + [("B", n) for n in ("Ivan Novak", "Mila Novak", "Tomas Novak",
                                                              "Eva Novak", "Anna Berg", "Paul Frey")]))


ITINERARY = [("Day 1 - Friday 11 September 2026", [("Tram 28 ride through Alfama", 3), ("Castelo de S. Jorge", 15),
                                                    ("Fado dinner", 45)]),
             ("Day 2 - Saturday 12 September 2026", [("Day trip to Sintra: Pena Palace", 20),
                                                     ("Hike to the Moorish Castle", 12), ("Train back", 5)]),
             ("Day 3 - Sunday 13 September 2026", [("Oceanarium", 25), ("Museu Nacional do Azulejo", 8),
                                                   ("Pasteis de Belem tasting", 10)])]


def _itin_html(days, extra="") -> str:
    parts = []
    for head, acts in days:
        items = "\n".join(f"    <li>{a} <span class=\"cost\">EUR {c}</span></li>" for a, c in acts)
        parts.append(f"  <section>\n    <h2>{head}</h2>\n    <ul>\n{items}\n    </ul>\n  </section>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Lisbon weekend</title></head>\n"
            "<body>\n<h1>Lisbon weekend - 11 to 13 September 2026</h1>\n<p>Costs are per person.</p>\n"
            + "\n".join(parts) + extra + "\n</body></html>\n")


def ir_life_itinerary() -> None:
    t = "ir-life-itinerary"
    put(env(t, "itinerary.html"), _itin_html(ITINERARY))
    swapped = [(ITINERARY[0][0], ITINERARY[0][1]), (ITINERARY[1][0], ITINERARY[2][1]),
               (ITINERARY[2][0], ITINERARY[1][1])]
    packing = ("\n  <section>\n    <h2>Packing list</h2>\n    <ul>\n" + "\n".join(
        f"    <li>{x}</li>" for x in ("Comfortable walking shoes (cobblestones, Sintra hike)", "Rain jacket",
                                      "Light sweater for the fado evening", "Sun cream and sunglasses",
                                      "Refillable water bottle", "Power bank for maps and tickets",
                                      "ID card and a payment card"))
        + "\n    </ul>\n  </section>")
    costs = "\n".join(f"      <tr><td>{h.split(' - ')[0]}</td><td>{sum(c for _a, c in acts)}</td></tr>"
                      for h, acts in swapped)
    total = sum(c for _h, acts in swapped for _a, c in acts)
    summary = (f"\n  <section>\n    <h2>Cost summary</h2>\n    <table>\n      <tr><th>Day</th><th>EUR</th></tr>\n"
               f"{costs}\n      <tr><th>Total</th><th>{total}</th></tr>\n    </table>\n  </section>")
    put(ref(t, "itinerary.html"), _itin_html(swapped, packing + summary))


WORKOUT = """# My training week (autumn 2026)

Goal: get fitter for the 10 km city run in spring; three sessions of strength a week.

- **Monday** - 40 min easy running, then 10 min stretching
- **Tuesday** - 45 min strength (legs and core)
- **Wednesday** - 30 min interval running
- **Thursday** - rest
- **Friday** - 45 min strength (upper body)
- **Saturday** - 60 min long run
- **Sunday** - 30 min yoga
"""


def ir_life_workout() -> None:
    t = "ir-life-workout"
    put(env(t, "training_plan.md"), WORKOUT)
    put(env(t, "physio_note.txt"), "Physio note - 2 October 2026\nPatient: knee pain (patellar tendon, right).\n"
                                   "No running and no jumping for 6 weeks. Cycling and swimming are fine, "
                                   "as is strength training without jumps. Review on 13 November.\n")
    put(ref(t, "week.csv"), csv_text([("day", "activity", "minutes"), ("Monday", "Easy cycling", 40),
                                      ("Monday", "Stretching", 10), ("Tuesday", "Strength (legs and core)", 45),
                                      ("Wednesday", "Rest", 0), ("Thursday", "Rest", 0),
                                      ("Friday", "Strength (upper body)", 45), ("Saturday", "Long cycling", 60),
                                      ("Saturday", "Interval cycling", 30), ("Sunday", "Yoga", 30)]))


# ========================================================================================= QUICK TASKS
def quick() -> None:
    put(env("quick-life-wifi", "house_notes.txt"), "Holiday flat - house notes\n\nCheck-out: 10:00\n"
                                                   "Wi-Fi network: CasaVerde\nWi-Fi password: olive-tree-42\n"
                                                   "Bins: Tuesday morning\n")
    put(ref("quick-life-wifi", "wifi.txt"), "olive-tree-42\n")
    put(env("quick-study-topic", "topics.txt"), "Photosynthesis\nCell division\nGenetics\n")
    put(ref("quick-study-topic", "next.txt"), "Photosynthesis\n")


TASKS = [ow_work_meeting_actions, ow_work_sales_report, ow_work_invoice_check, ow_study_subtitles,
         ow_study_glossary, ow_study_grades, ow_life_recipe_shopping, ow_life_trip_settle,
         li_work_changelog, li_work_support_replies, li_work_expense_claim, li_study_references,
         li_study_flashcards, li_life_meal_plan, li_life_piano_lessons, li_life_photo_album,
         ir_work_budget, ir_work_job_ad, ir_study_schedule, ir_study_cooling_plot, ir_study_homework,
         ir_life_seating, ir_life_itinerary, ir_life_workout, quick]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = ap.parse_args()
    for task in TASKS:
        task()
    changed = [p for p, data in _files.items() if not p.exists() or p.read_bytes() != data]
    if args.check:
        for p in changed:
            print(f"differs: {p.relative_to(ROOT)}")
        return 1 if changed else 0
    for p in changed:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(_files[p])
    print(f"{len(_files)} files, {len(changed)} written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
