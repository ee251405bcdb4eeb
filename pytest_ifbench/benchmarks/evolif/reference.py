"""``compat: reference``: the EvolIF authors' released checkers (``src/instruction/*.py``), verdict for verdict.

Each function takes the reply and the validated params and returns
``(passed, evidence)``. The rules are the authors' as their evaluation runs
them (``src/eval.py`` assigns the official ``args`` directly, and runs with
``src/`` on the import path, so the start/end checkers' optional
"structured wrapper" stripping never happens; any exception is a failure).
Our own wording and code; docs/evolif.md ("paper vs reference") lists every
place where this differs from the ``paper`` rules, with an example.
"""

from __future__ import annotations

import csv
import io
import json
import re
import string
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from typing import Any

from . import punkt

#: Characters the authors strip before a start/end check (every punctuation candidate of their pools).
EDGE_PUNCTUATION = "".join(dict.fromkeys(
    list(string.punctuation)
    + list("。，、？！：；（）【】「」『』《》〈〉—…·～￥")))
_LEAD_SPACE = "\ufeff\n\r\t "
_INVISIBLE = re.compile(r"^[\s\ufeff\u00A0\u1680\u180E\u2000-\u200F\u2028\u2029\u202F\u205F\u2060\u3000]+")
_ASCII_LETTER = re.compile(r"[A-Za-z]")

Result = tuple[bool, str]


def startwith(text: str, params: Mapping[str, Any]) -> Result:
    body = text.lstrip(_LEAD_SPACE)
    if params["mode"] == "quotation":
        left, right = params.get("left") or "", params.get("right") or ""
        if not left or not right:
            return False, "quotation mode without both marks"
        ok = body.startswith(left) and right in body[len(left):]
        return ok, f"starts with {left!r}: {body.startswith(left)}; {right!r} after it: {right in body[len(left):]}"
    body = _INVISIBLE.sub("", body).lstrip(EDGE_PUNCTUATION)
    value = params.get("value") or ""
    if not value:
        return True, "empty value"
    if params["mode"] == "letter":
        first = _ASCII_LETTER.search(body)
        if first is None:
            return False, "no ASCII letter in the reply"
        return first.group(0).casefold() == value.casefold(), f"first ASCII letter {first.group(0)!r}"
    return body.casefold().startswith(value.casefold()), f"after leading punctuation it begins {body[:30]!r}"


def endwith(text: str, params: Mapping[str, Any]) -> Result:
    body = text.rstrip(_LEAD_SPACE)
    if params["mode"] == "quotation":
        left, right = params.get("left") or "", params.get("right") or ""
        if not left or not right:
            return False, "quotation mode without both marks"
        ok = body.endswith(right) and left in body[:len(body) - len(right)]
        return ok, f"ends with {right!r}: {body.endswith(right)}"
    value = params.get("value") or ""
    if not value:
        return True, "empty value"
    body = body.rstrip(EDGE_PUNCTUATION)
    if params["mode"] == "letter":
        letters = _ASCII_LETTER.findall(body)
        if not letters:
            return False, "no ASCII letter in the reply"
        return letters[-1].casefold() == value.casefold(), f"last ASCII letter {letters[-1]!r}"
    return body.casefold().endswith(value.casefold()), f"without trailing punctuation it ends {body[-30:]!r}"


# --------------------------------------------------------------------------- format

_FENCED = re.compile(r"^```[\w.+-]*\s*\n(.*?)\n```\s*$", re.DOTALL)
_TAG = re.compile(r"<\/?([A-Za-z][A-Za-z0-9:-]*)\b[^>]*?>")
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                   "track", "wbr"})


def _json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _xml(text: str) -> bool:
    try:
        ET.fromstring(text)
    except (ET.ParseError, ValueError):
        return False
    return True


def _html(text: str) -> bool:
    stack: list[str] = []
    tags = list(_TAG.finditer(text))
    if not tags:
        return False
    for tag in tags:
        name = tag.group(1).lower()
        if tag.group(0).startswith("</"):
            if not stack or stack.pop() != name:
                return False
        elif not (tag.group(0).endswith("/>") or name in _VOID):
            stack.append(name)
    return not stack


def _csv(text: str) -> bool:
    try:
        widths = [len(row) for row in csv.reader(io.StringIO(text))]
    except csv.Error:
        return False
    return bool(widths) and widths[0] > 0 and all(w == widths[0] for w in widths)


def _markdown(text: str) -> bool:
    if text.count("```") % 2:
        return False
    inside = False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            inside = not inside
    return not inside


_FORMATS: dict[str, Callable[[str], bool]] = {
    "json": _json, "xml": _xml, "html": _html, "csv": _csv, "markdown": _markdown,
}


def fmt(text: str, params: Mapping[str, Any]) -> Result:
    body = text.strip()
    fenced = _FENCED.match(body)
    if fenced:
        body = fenced.group(1).strip()
    ok = _FORMATS[params["mode"]](body)
    return ok, f"{params['mode']} check {'passed' if ok else 'failed'}" + (" (on the fenced block)" if fenced else "")


# --------------------------------------------------------------------------- case, punctuation, items


def case(text: str, params: Mapping[str, Any]) -> Result:
    mode = params["mode"]
    if mode == "all_upper":
        lower = re.findall(r"[a-z]", text)
        return not lower, f"{len(lower)} ASCII lower-case letter(s)"
    if mode == "all_lower":
        upper = re.findall(r"[A-Z]", text)
        return not upper, f"{len(upper)} ASCII upper-case letter(s)"
    target = params.get("min")
    if type(target) is not int or target < 0:
        return True, f"min {target!r} is not an integer percentage: not checked"
    letters = re.findall(r"[A-Za-z]", text)
    if not letters:
        return True, "no ASCII letters: not checked"
    share = sum(1 for c in letters if c.isupper()) * 100 / len(letters)
    return abs(share - target) <= 3, f"{share:.2f}% of ASCII letters upper case (required {target}% ± 3)"


def punctuation(text: str, params: Mapping[str, Any]) -> Result:
    present = params["value"] in text
    ok = present if params["mode"] == "must_include" else not present
    return ok, f"{params['value']!r} {'occurs' if present else 'does not occur'}"


_STAR_ITEM = re.compile(r"^\s*\*[^\*].*$", re.MULTILINE)
_DASH_ITEM = re.compile(r"^\s*-.*$", re.MULTILINE)


def countable_items(text: str, params: Mapping[str, Any]) -> Result:
    count = len(_STAR_ITEM.findall(text)) + len(_DASH_ITEM.findall(text))
    return count == params["num"], f"{count} '*'/'-' line(s), required {params['num']}"


# --------------------------------------------------------------------------- length


def _paragraphs(text: str) -> int:
    stripped = text.strip()
    if not stripped:
        return 0
    return sum(1 for part in re.split(r"(?:\r?\n\s*){2,}", stripped) if part.strip())


_MEASURES: dict[str, Callable[[str], int]] = {
    "word": lambda text: len(re.findall(r"\w+", text)),
    "paragraph": _paragraphs,
    "characters": len,
    "sentence": punkt.count_sentences,
}


def length(text: str, params: Mapping[str, Any]) -> Result:
    count = _MEASURES[params["mode"]](text)
    number, relation = params["number"], params["relation"]
    ok = count < number if relation == "less_than" else count > number if relation == "more_than" else count == number
    return ok, f"{count} {params['mode']}(s) (required {relation} {number})"


# --------------------------------------------------------------------------- keywords


def keyword_count(text: str, keyword: str) -> int:
    """Case-insensitive: whole words (``\\b``) for a keyword of word characters only, else substrings."""
    if not keyword:
        return 0
    pattern = rf"\b{re.escape(keyword)}\b" if re.match(r"^\w+$", keyword) else re.escape(keyword)
    return len(re.findall(pattern, text, flags=re.IGNORECASE))


def existence(text: str, params: Mapping[str, Any]) -> Result:
    counts = {k: keyword_count(text, k) for k in params}
    wrong = [k for k, n in counts.items() if type(params[k]) is int and params[k] >= 1 and n != params[k]]
    shown = ", ".join(f"{k!r}: {n} (required {params[k]})" for k, n in counts.items())
    return not wrong, shown


def forbidden(text: str, params: Mapping[str, Any]) -> Result:
    present = [k for k in params["keywords"] if keyword_count(text, k)]
    return not present, ("forbidden: " + ", ".join(map(repr, present))) if present else "none occurs"


def language(text: str, params: Mapping[str, Any]) -> Result:
    return False, "the authors' evaluation does not know 'language' (disabled in src/eval.py): always fails"


CHECKS: dict[str, Callable[[str, Mapping[str, Any]], Result]] = {
    "startwith": startwith, "endwith": endwith, "format": fmt, "case": case, "punctuation": punctuation,
    "countableItems": countable_items, "length": length, "existence": existence, "forbidden": forbidden,
    "language": language,
}
