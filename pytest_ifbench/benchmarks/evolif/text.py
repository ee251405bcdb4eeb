"""Deterministic, offline text measurements behind the EvolIF checkers.

Everything here is pure Python (no downloaded data): word, sentence,
paragraph and bullet counting, keyword counting, the edges of a reply, and
the structured-format validators. docs/evolif.md states each rule.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

# --------------------------------------------------------------------------- words and keywords

#: A word: letters/digits, optionally joined by an apostrophe or a hyphen ("don't", "well-known");
#: a number keeps its decimal point or thousands separator ("3.5", "1,000").
WORD = re.compile(r"[^\W_]+(?:(?:['’\-]|(?<=\d)[.,](?=\d))[^\W_]+)*")


def count_words(text: str) -> int:
    return len(WORD.findall(text))


def keyword_pattern(keyword: str) -> re.Pattern[str]:
    """Case-insensitive, whole-word, any run of whitespace between the keyword's words."""
    parts = [re.escape(p) for p in keyword.split()]
    body = r"\s+".join(parts) if parts else re.escape(keyword)
    return re.compile(rf"(?<![^\W_]){body}(?![^\W_])", re.IGNORECASE)


def count_keyword(text: str, keyword: str) -> int:
    """Non-overlapping whole-word occurrences of ``keyword`` (case-insensitive)."""
    return len(keyword_pattern(keyword).findall(text))


# --------------------------------------------------------------------------- paragraphs, bullets

_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_DIVIDER = re.compile(r"^[ \t]*(?:\*[ \t]*){3,}$|^[ \t]*(?:-[ \t]*){3,}$|^[ \t]*(?:_[ \t]*){3,}$", re.MULTILINE)
_FENCE_LINE = re.compile(r"^[ \t]*(```|~~~)")
BULLET = re.compile(r"^[ \t]*[*\-+•][ \t]+\S")


def paragraphs(text: str) -> list[str]:
    """Blocks separated by blank lines or Markdown divider lines (``***``, ``---``), non-empty."""
    text = _DIVIDER.sub("\n\n", text.replace("\r\n", "\n"))
    return [p.strip() for p in _BLANK_LINE.split(text) if p.strip()]


def _outside_fences(text: str) -> list[str]:
    lines, inside = [], False
    for line in text.replace("\r\n", "\n").split("\n"):
        if _FENCE_LINE.match(line):
            inside = not inside
            continue
        if not inside:
            lines.append(line)
    return lines


def count_bullets(text: str) -> int:
    """Lines (outside fenced code) starting with ``*``, ``-``, ``+`` or ``•`` then a space and text."""
    return sum(1 for line in _outside_fences(text) if BULLET.match(line))


# --------------------------------------------------------------------------- sentences

#: Abbreviations after which a period never ends a sentence.
_NEVER_ENDS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "e.g", "i.e", "cf", "approx", "fig", "no",
    "mt", "ft", "gen", "col", "lt", "sgt", "rev", "hon", "dept", "est", "vol", "ch", "p", "pp",
}
#: Abbreviations that end a sentence only when an upper-case word follows.
_MAYBE_ENDS = {"etc", "inc", "ltd", "co", "corp", "u.s", "u.k", "a.m", "p.m", "al"}
_TERMINATOR = re.compile(r"[.!?…]+[\"'”’)\]»]*(?=\s|$)|[。！？]+[」』”’)\]]*")
_LIST_OR_HEADING = re.compile(r"^[ \t]*(?:[*\-+•]|\d+[.)]|#{1,6})[ \t]+")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+")
_HAS_ALNUM = re.compile(r"[^\W_]")


def _blocks(text: str) -> list[str]:
    """Prose blocks: blank lines end a block; every list item or heading line starts a new one."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if not line.strip():
            if current:
                blocks.append(current)
            current = []
            continue
        if _LIST_OR_HEADING.match(line) and current:
            blocks.append(current)
            current = []
        current.append(line.strip())
        if _HEADING.match(line):  # a heading is a block of its own
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return [" ".join(b) for b in blocks]


def split_sentences(text: str) -> list[str]:
    """Sentences by a rule-based splitter (no model, no downloaded data).

    A sentence ends at ``.``, ``!``, ``?`` or ``…`` (with closing quotes or
    brackets) followed by whitespace or the end of its block, or at a CJK
    terminator; a period after a title or Latin abbreviation ("Dr.", "e.g.")
    or a single-letter initial does not end one ("etc."-like abbreviations do
    when an upper-case word follows). Blank lines, list items and headings
    also end sentences. Segments without a letter or digit are not sentences.
    """
    out: list[str] = []
    for block in _blocks(text):
        start = 0
        for match in _TERMINATOR.finditer(block):
            end = match.end()
            if match.group(0).startswith(".") and not _period_ends(block, match.start(), end):
                continue
            piece = block[start:end].strip()
            if _HAS_ALNUM.search(piece):
                out.append(piece)
            start = end
        tail = block[start:].strip()
        if _HAS_ALNUM.search(tail):
            out.append(tail)
        elif tail and out and start > 0:
            out[-1] += " " + tail
    return out


def _period_ends(block: str, dot: int, end: int) -> bool:
    if block[dot:end].startswith(".."):  # an ellipsis written as dots ends a sentence
        return True
    word = re.search(r"([^\W_]+(?:\.[^\W_]+)*)$", block[:dot])
    if word is None:
        return True
    token = word.group(1).lower()
    initial = len(word.group(1)) == 1 and word.group(1).isupper()  # "J. Smith"
    if token in _NEVER_ENDS or initial:
        return False
    if token in _MAYBE_ENDS:
        following = block[end:].lstrip()
        return bool(following) and following[0].isupper()
    return True


def count_sentences(text: str) -> int:
    return len(split_sentences(text))


# --------------------------------------------------------------------------- edges

#: Markdown emphasis/heading/quote markers ignored at the edges of a reply.
_LEAD_MARKUP = "#*_>`~ \t\r\n\u200b\ufeff"
_TRAIL_MARKUP = "*_`~ \t\r\n\u200b\ufeff"
_TRAIL_PUNCT = ".!?…;:,"


def lead(text: str) -> str:
    """The reply from its first character of content (leading whitespace and Markdown markers skipped)."""
    return text.lstrip(_LEAD_MARKUP)


def trail(text: str, *, punctuation: bool = False) -> str:
    """The reply up to its last character of content; ``punctuation`` also drops final ``.!?…;:,``."""
    out = text.rstrip(_TRAIL_MARKUP)
    if punctuation:
        out = out.rstrip(_TRAIL_PUNCT + _TRAIL_MARKUP)
    return out


def no_variation_selectors(text: str) -> str:
    """Emoji compare equal with or without U+FE0F / U+FE0E."""
    return text.replace("\ufe0f", "").replace("\ufe0e", "")


# --------------------------------------------------------------------------- formats

_WHOLE_FENCE = re.compile(r"\A```[ \t]*[A-Za-z0-9_+.-]*[^\n]*\n(.*?)\n?[ \t]*```\Z", re.DOTALL)


def unfenced(text: str) -> str:
    """The reply, or the body of the single fenced block that is the whole reply."""
    stripped = text.strip()
    match = _WHOLE_FENCE.match(stripped)
    if match and "```" not in match.group(1):
        return match.group(1).strip()
    return stripped


def check_json(text: str) -> tuple[bool, str]:
    body = unfenced(text)
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        return False, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    if not isinstance(value, (dict, list)):
        return False, f"valid JSON but a bare {type(value).__name__}, not an object or array"
    return True, f"valid JSON {'object' if isinstance(value, dict) else 'array'}"


def check_xml(text: str) -> tuple[bool, str]:
    import xml.etree.ElementTree as ET

    body = unfenced(text)
    if "<!ENTITY" in body.upper():
        return False, "entity declarations are not accepted"
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        return False, f"not well-formed XML: {exc}"
    return True, f"well-formed XML with root <{root.tag}>"


VOID_ELEMENTS = frozenset({
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "keygen", "command", "basefont", "frame", "isindex",
})


class _NestingChecker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.elements = 0
        self.problem: str | None = None

    def _fail(self, message: str) -> None:
        if self.problem is None:
            line, col = self.getpos()
            self.problem = f"{message} (line {line}, column {col + 1})"

    def handle_starttag(self, tag, attrs):
        self.elements += 1
        if tag not in VOID_ELEMENTS:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.elements += 1

    def handle_endtag(self, tag):
        if tag in VOID_ELEMENTS:
            return
        if not self.stack:
            self._fail(f"closing </{tag}> without an open element")
        elif self.stack[-1] != tag:
            self._fail(f"</{tag}> closes <{self.stack[-1]}>: tags are not properly nested")
        else:
            self.stack.pop()

    def handle_data(self, data):
        if not self.stack and data.strip():
            self._fail(f"text outside any element: {data.strip()[:40]!r}")


def check_html(text: str) -> tuple[bool, str]:
    """Every non-void element closed in order, at least one element, no text outside elements."""
    parser = _NestingChecker()
    parser.feed(unfenced(text))
    parser.close()
    if parser.problem:
        return False, parser.problem
    if parser.stack:
        return False, f"unclosed element(s): {', '.join('<' + t + '>' for t in parser.stack)}"
    if not parser.elements:
        return False, "no HTML elements"
    return True, f"{parser.elements} properly nested HTML element(s)"


class CsvError(ValueError):
    pass


def parse_csv(text: str) -> list[list[str]]:
    """Strict RFC 4180: ``,`` separated, ``"``-quoted fields with ``""`` escapes; a quote inside an
    unquoted field, text after a closing quote, or an unterminated quote is an error."""
    rows: list[list[str]] = []
    row: list[str] = []
    field: list[str] = []
    i, n = 0, len(text)
    line = 1
    while True:
        if i < n and text[i] == '"':
            i += 1
            start_line = line
            while True:
                if i >= n:
                    raise CsvError(f"unterminated quoted field starting on line {start_line}")
                ch = text[i]
                if ch == '"':
                    if i + 1 < n and text[i + 1] == '"':
                        field.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                if ch == "\n":
                    line += 1
                field.append(ch)
                i += 1
            if i < n and text[i] not in ",\r\n":
                raise CsvError(f"text after a closing quote on line {line}")
        else:
            while i < n and text[i] not in ",\r\n":
                if text[i] == '"':
                    raise CsvError(f"a quote inside an unquoted field on line {line} (fields with quotes "
                                   "must be quoted and the quotes doubled)")
                field.append(text[i])
                i += 1
        row.append("".join(field))
        field = []
        if i >= n:
            rows.append(row)
            return rows
        if text[i] == ",":
            i += 1
            continue
        if text[i] == "\r":
            i += 1
            if i < n and text[i] == "\n":
                i += 1
        else:
            i += 1
        line += 1
        rows.append(row)
        row = []
        if i >= n:
            return rows


def check_csv(text: str) -> tuple[bool, str]:
    """At least two rows and two columns, the same number of fields in every row, strict quoting."""
    body = unfenced(text)
    try:
        rows = parse_csv(body)
    except CsvError as exc:
        return False, f"not valid CSV: {exc}"
    if len(rows) < 2:
        return False, f"{len(rows)} row(s): CSV needs at least a header and one data row"
    widths = [len(r) for r in rows]
    if widths[0] < 2:
        return False, "a single column: CSV needs at least two comma-separated columns"
    for number, width in enumerate(widths, start=1):
        if width != widths[0]:
            return False, f"row {number} has {width} field(s), the first row has {widths[0]}"
    return True, f"{len(rows)} rows x {widths[0]} columns"


_MARKDOWN_BLOCK = re.compile(
    r"^[ \t]{0,3}#{1,6}[ \t]+\S"            # heading
    r"|^[ \t]*(?:[-*+]|\d+[.)])[ \t]+\S"     # list item
    r"|^[ \t]{0,3}>"                          # block quote
    r"|^[ \t]{0,3}(?:```|~~~)"                # fenced code
    r"|^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*\|",   # table separator row
    re.MULTILINE,
)
_MARKDOWN_INLINE = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__|\[[^\]\n]+\]\([^)\s]+\)|`[^`\n]+`")


def check_markdown(text: str) -> tuple[bool, str]:
    """At least one Markdown construct (heading, list, quote, fence, table, bold, link, code) and
    balanced code fences."""
    fences = sum(1 for line in text.split("\n") if _FENCE_LINE.match(line))
    if fences % 2:
        return False, "an unclosed ``` code fence"
    block = _MARKDOWN_BLOCK.search(text)
    inline = _MARKDOWN_INLINE.search(text)
    found = block or inline
    if not found:
        return False, "no Markdown syntax (headings, lists, bold, links, quotes, code or tables)"
    line_start = text.rfind("\n", 0, found.start()) + 1
    line_end = text.find("\n", found.start())
    shown = text[line_start: line_end if line_end != -1 else len(text)].strip()
    return True, f"Markdown syntax found: {shown[:60]!r}"


FORMAT_CHECKS = {
    "json": check_json, "xml": check_xml, "html": check_html, "csv": check_csv, "markdown": check_markdown,
}
