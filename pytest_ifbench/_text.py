"""Text helpers shared by verifiers and protocols: reasoning stripping, code extraction."""

from __future__ import annotations

import re

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)^[ \t]*```", re.DOTALL | re.MULTILINE)
_PYTHON_TAGS = {"python", "py", "python3"}


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
    """
    untagged: str | None = None
    for match in _FENCE.finditer(text):
        tag = match.group(1).lower()
        if tag in _PYTHON_TAGS:
            return match.group(2)
        if not tag and untagged is None:
            untagged = match.group(2)
    if untagged is not None:
        return untagged
    return text


def first_json_object(text: str) -> str | None:
    """The first balanced ``{...}`` in ``text`` (judges often wrap JSON in prose or fences)."""
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
                    return text[start:index + 1]
        start = text.find("{", start + 1)
    return None
