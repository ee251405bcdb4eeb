"""Text helpers shared by verifiers and protocols: reasoning stripping, code extraction."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^([ \t]*)```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)^[ \t]*```", re.DOTALL | re.MULTILINE)
_OPEN_PYTHON = re.compile(
    r"^([ \t]*)```[ \t]*(?:python3?|py)\b[^\n]*\n(.*)\Z", re.DOTALL | re.MULTILINE | re.IGNORECASE
)
_PYTHON_TAGS = {"python", "py", "python3"}
#: A lone surrogate: JSON may carry one (``"\\ud83d"``, half an emoji a provider cut), UTF-8 cannot.
_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_safe(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, so that every writer can encode it as UTF-8.
    A model's reply is made so where it enters (``ModelClient``): a lone surrogate in it errored the
    instance when a report writer (Allure's, the trajectory file) met it."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def printable(text: str) -> str:
    """``text`` as a prompt, a record or a terminal can show it: what is not UTF-8 (the undecodable bytes of a
    file name an agent chose, a lone surrogate) as U+FFFD, any other unprintable character (a line break in a
    name) escaped as Python writes it."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in utf8_safe(text))


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """A JSON value (a tool call) with ``change`` applied to every string in it (mappings become dicts,
    tuples lists)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, Mapping):
        return {key: map_strings(item, change) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [map_strings(item, change) for item in value]
    return value


def utf8_safe_value(value: Any) -> Any:
    """A JSON value with :func:`utf8_safe` applied to every string in it."""
    return map_strings(value, utf8_safe)


def strip_reasoning(text: str) -> tuple[str, str]:
    """Split a reply into (visible text, stripped reasoning).

    Removes every ``<think>…</think>`` block. A reply whose opening tag was
    eaten by the chat template (only ``</think>`` present) keeps what follows
    the last closing tag; an unclosed ``<think>`` hides everything after it.
    """
    reasoning: list[str] = []

    def keep(match: re.Match[str]) -> str:
        reasoning.append(match.group(0)[len("<think>"):-len("</think>")])
        return ""

    visible = _THINK_BLOCK.sub(keep, text)
    lower = visible.lower()
    if "</think>" in lower:
        cut = lower.rindex("</think>")
        reasoning.append(visible[:cut])
        visible = visible[cut + len("</think>"):]
    elif "<think>" in lower:
        cut = lower.index("<think>")
        reasoning.append(visible[cut + len("<think>"):])
        visible = visible[:cut]
    return visible.strip(), "\n".join(part.strip() for part in reasoning).strip()


def extract_code(text: str) -> str:
    """The code a reply contains, by the rule every code benchmark shares.

    1. the first fenced block tagged ``python``, ``py`` or ``python3``;
    2. else the first fenced block with no tag;
    3. else the whole reply.
    Blocks tagged with another language are never taken.

    A fence indented inside a list has that indentation removed from its
    lines. A python fence that is never closed (a reply cut off by
    ``max_tokens``) yields everything after it.
    """
    block = code_block(text)
    if block is not None:
        return _dedent(block.group(3), block.group(1))
    unclosed = _OPEN_PYTHON.search(text)
    if unclosed is not None:
        return _dedent(unclosed.group(2), unclosed.group(1))
    return text


def code_block(text: str) -> re.Match[str] | None:
    """The closed fenced block :func:`extract_code` takes (groups: indent, tag, body), or None."""
    untagged: re.Match[str] | None = None
    for match in _FENCE.finditer(text):
        tag = match.group(2).lower()
        if tag in _PYTHON_TAGS:
            return match
        if not tag and untagged is None:
            untagged = match
    return untagged


def _dedent(body: str, indent: str) -> str:
    if not indent:
        return body
    lines = body.splitlines(keepends=True)
    width = len(indent)
    return "".join(line[width:] if line[:width].strip() == "" else line.lstrip() for line in lines)


def first_json_object(text: str) -> str | None:
    """The first balanced ``{...}`` in ``text`` (judges often wrap JSON in prose or fences)."""
    return next(json_objects(text), None)


def json_objects(text: str) -> Iterator[str]:
    """Every balanced ``{...}`` in ``text`` that no other one holds, in order (braces inside JSON strings do
    not count; a ``{`` that never closes is skipped)."""
    start = text.find("{")
    while start != -1:
        depth = 0
        in_string = False
        escaped = False
        for index in range(start, len(text)):
            char = text[index]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    yield text[start:index + 1]
                    break
        else:
            index = start
        start = text.find("{", index + 1)



def short_repr(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters with ``…``, for error messages about untrusted data.

    Never raises and never builds more than ``limit`` characters: an int too long for
    ``repr`` (Python refuses more than 4,300 digits) is described by its size, and
    strings and containers are rendered only as far as the limit reaches.
    """
    out: list[str] = []
    _render(value, out, limit + 1)
    text = "".join(out)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _render(value: object, out: list[str], budget: int) -> int:
    """Append a repr of ``value`` to ``out``, stopping once ``budget`` characters are used; the rest."""
    if budget <= 0:
        return 0
    if isinstance(value, (str, bytes)):
        piece = repr(value[:budget])
    elif isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * budget:
        piece = f"<int of about {int(value.bit_length() * 0.30103) + 1} digits>"
    elif isinstance(value, (list, tuple, set, frozenset, dict)):
        opening, closing = {list: "[]", tuple: "()", dict: "{}"}.get(type(value), "{}")
        out.append(opening)
        budget -= 1
        items = value.items() if isinstance(value, dict) else value
        for index, item in enumerate(items):
            if budget <= 0:
                return 0
            if index:
                out.append(", ")
                budget -= 2
            if isinstance(value, dict):
                budget = _render(item[0], out, budget)
                out.append(": ")
                budget = _render(item[1], out, budget - 2)
            else:
                budget = _render(item, out, budget)
        piece = closing
    else:
        try:
            piece = repr(value)[:budget]
        except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the real error
            piece = f"<{type(value).__name__}>"
    out.append(piece)
    return budget - len(piece)
