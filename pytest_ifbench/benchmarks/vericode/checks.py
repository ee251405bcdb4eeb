"""VeriCode's response-level checks: the documentation that follows the code block.

``doc_4`` wants a JSON object with given keys, ``doc_5`` a bullet list of an
exact length and ``doc_6`` a headed Markdown section within a word limit, all
after the code block that the ruff-backed verifiers read (``text_after_code``).
A reply without a fenced code block fails them. Each check takes the reply and
the instruction's validated parameters and returns a ``Verdict``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pytest_ifbench import Verdict

#: A fenced block: indentation, tag, body (same shape as the core's code extraction).
_FENCE = re.compile(r"^([ \t]*)```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$",
                    re.DOTALL | re.MULTILINE)
_BULLET = re.compile(r"^ {0,3}[-*+][ \t]+\S", re.MULTILINE)
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’_-][A-Za-z0-9]+)*")


def text_after_code(response: str) -> str | None:
    """What follows the code block the code verifiers read, or None when there is none.

    The code block is the one ``extract_code`` takes: the first fenced block
    tagged python/py/python3, else the first untagged fenced block. A reply
    that is raw code only (or whose code fence is never closed) has no code
    block, hence nothing after it.
    """
    from pytest_ifbench import code_block

    block = code_block(response)
    return response[block.end():] if block is not None else None


def _without_fences(text: str) -> str:
    return _FENCE.sub("", text)


def _no_code_block() -> Verdict:
    return Verdict(passed=False, evidence="the reply has no fenced code block, so nothing follows the code")


def _json_after(text: str) -> tuple[Any, str] | None:
    """The JSON value explaining the code: a ```json block, else the first {...} object."""
    from pytest_ifbench import first_json_object

    for match in _FENCE.finditer(text):
        if match.group(2).lower() in ("json", "jsonc", "json5"):
            return _loads(match.group(3)), "```json block"
    raw = first_json_object(_without_fences(text))
    return (_loads(raw), "JSON object") if raw is not None else None


def _loads(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return _INVALID


_INVALID = object()


def check_json_explanation(response: str, params: Mapping[str, Any]) -> Verdict:
    after = text_after_code(response)
    if after is None:
        return _no_code_block()
    found = _json_after(after)
    if found is None:
        return Verdict(passed=False, evidence="no JSON object after the code block")
    value, where = found
    if value is _INVALID:
        return Verdict(passed=False, evidence=f"the {where} after the code is not valid JSON")
    if not isinstance(value, dict):
        return Verdict(passed=False, evidence=f"the {where} after the code is not a JSON object")
    missing = [k for k in params["keys"] if k not in value]
    empty = [k for k in params["keys"] if k in value and not (isinstance(value[k], str) and value[k].strip())]
    problems = ([f"missing keys: {', '.join(missing)}"] if missing else []) + (
        [f"not a non-empty string: {', '.join(empty)}"] if empty else [])
    return Verdict(passed=not problems, evidence="; ".join(problems) or f"{where} with keys {sorted(value)}",
                   details={"keys": sorted(value)})


def check_bullet_explanation(response: str, params: Mapping[str, Any]) -> Verdict:
    after = text_after_code(response)
    if after is None:
        return _no_code_block()
    n = len(_BULLET.findall(_without_fences(after)))
    want = params["num_bullets"]
    return Verdict(passed=n == want, evidence=f"{n} bullet items after the code block (required exactly {want})",
                   details={"bullets": n})


def check_section_explanation(response: str, params: Mapping[str, Any]) -> Verdict:
    after = text_after_code(response)
    if after is None:
        return _no_code_block()
    wanted = params["heading"].strip().lower()
    headings = list(_HEADING.finditer(after))
    for index, match in enumerate(headings):
        title = match.group(2).strip().rstrip(":").strip().strip("*_").strip()
        if title.lower() != wanted:
            continue
        level = len(match.group(1))
        end = len(after)
        for later in headings[index + 1:]:
            if len(later.group(1)) <= level:
                end = later.start()
                break
        words = len(_WORD.findall(after[match.end():end]))
        limit = params["max_words"]
        ok = 1 <= words <= limit
        return Verdict(passed=ok, evidence=f"section '{match.group(2).strip()}' has {words} words "
                                           f"(required 1..{limit})", details={"words": words})
    seen = ", ".join(repr(h.group(2).strip()) for h in headings) or "none"
    return Verdict(passed=False, evidence=f"no Markdown heading '{params['heading']}' after the code block "
                                          f"(headings there: {seen})")
