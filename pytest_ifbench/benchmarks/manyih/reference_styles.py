"""``reference`` mode of the 41 style checks: the authors' released checkers, rule for rule.

Each function here re-states, in this project's own code, what the authors'
checker of the same id computes (``manyih/coding/styles/*.py`` at the commit
named in ``tests/benchmarks/manyih/data/README.md``), quirks included: text
scans that read comments and strings, AST walks that look at some names and
not others, and "cannot parse: pass". A conformance corpus recorded from the
authors' code holds every function to their verdict.

The checkers run on the Python this package runs on, as the authors' code
would: ``ast`` and ``tokenize`` of that interpreter decide (on 3.12+ f-strings
are no longer ``STRING`` tokens, so the quote checks skip them there).

A checker returns ``(passed, evidence)``; one that raises is what the authors'
checker raises (:func:`reference_style` turns that into a failure, as their
evaluator fails the whole sample).
"""

from __future__ import annotations

import io
import math
import re
import tokenize
from collections.abc import Callable, Iterator
from functools import reduce

from .reference_ast_styles import (
    CAMEL,
    SNAKE,
    Result,
    check_naming_consonant_start,
    check_return_direct,
    check_return_explicit_none,
    check_return_variable,
    convention,
    fail_first,
    functions,
    name_length,
    parsed,
    type_hints,
)

# ---------------------------------------------------------------------------- extraction

_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
_BARE_BLOCK = re.compile(r"```\n(.*?)```", re.S)


def reference_code(reply: str) -> str:
    """The code the authors' evaluator extracts from a reply (stripped; ``""`` = no code).

    Reasoning: the text after the last ``</think>``, else the text before an
    unclosed ``<think>``. Then the first block opened by exactly
    ```` ```python ```` + newline, else by ```` ``` ```` + newline (which may be
    the closing fence of another block), else the whole reply.
    """
    if "</think>" in reply:
        reply = reply.rsplit("</think>", 1)[1]
    elif "<think>" in reply:
        reply = reply.split("<think>", 1)[0]
    for pattern in (_PYTHON_BLOCK, _BARE_BLOCK):
        block = pattern.search(reply)
        if block:
            return block.group(1).strip()
    return reply.strip()


# ---------------------------------------------------------------------------- shared scans


def _lines(code: str) -> list[str]:
    return code.split("\n")


def _indents(code: str) -> Iterator[tuple[int, str]]:
    """(row, leading whitespace) of every line that has text after ``str.lstrip`` whitespace."""
    for row, line in enumerate(_lines(code), start=1):
        rest = line.lstrip()
        if rest and rest != line:
            yield row, line[: len(line) - len(rest)]


# ---------------------------------------------------------------------------- indentation


def _indent_multiple(width: int, *, unit_must_match: bool) -> Callable[[str], Result]:
    def check(code: str) -> Result:
        widths = []
        for row, lead in _indents(code):
            if "\t" in lead:
                return False, f"line {row}: tab in the indentation"
            if len(lead) % width:
                return False, f"line {row}: indentation {len(lead)} is not a multiple of {width}"
            widths.append(len(lead))
        if unit_must_match and widths:
            unit = reduce(math.gcd, widths)
            if unit != width:
                return False, f"the indentation unit (gcd of all indents) is {unit}, not {width}"
        return True, f"every indentation is a multiple of {width} spaces"

    return check


def _indent_without(char: str, name: str) -> Callable[[str], Result]:
    def check(code: str) -> Result:
        return fail_first((f"line {row}: {name} in the indentation" for row, lead in _indents(code) if char in lead),
                           f"no {name} in any indentation")

    return check


# ---------------------------------------------------------------------------- quotes

_PREFIX_LETTERS = "rRbBfFuU"


def _string_tokens(code: str) -> list[tokenize.TokenInfo]:
    """All STRING tokens, or none when tokenizing ends in ``TokenError`` (the authors' list is then empty)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except tokenize.TokenError:
        return []
    return [tok for tok in tokens if tok.type == tokenize.STRING]


def _quotes(wanted: str) -> Callable[[str], Result]:
    banned = "'" if wanted == '"' else '"'

    def check(code: str) -> Result:
        def problems() -> Iterator[str]:
            for tok in _string_tokens(code):
                if tok.string[:3] in ('"""', "'''"):
                    continue  # only unprefixed triple-quoted strings are skipped
                body = tok.string.lstrip(_PREFIX_LETTERS)
                if body[:1] == banned:
                    yield f"line {tok.start[0]}: {tok.string[:20]!r} opens with {banned}"

        return fail_first(problems(), f"no string token opens with {banned}")

    return check


def check_quotes_docstring_triple_double(code: str) -> Result:
    return fail_first((f"line {tok.start[0]}: a string token opens with '''" for tok in _string_tokens(code)
                        if tok.string.startswith("'''")), "no string token opens with '''")


# ---------------------------------------------------------------------------- operator spacing

_ARITH = ("+", "-", "*", "/", "%", "//", "**")
_BINARY = (*_ARITH, "&", "|", "^", "<<", ">>")
_ASSIGN = ("=", "+=", "-=", "*=", "/=", "%=", "//=", "**=", "&=", "|=", "^=", "<<=", ">>=")
_COMPARE = ("==", "!=", "<", ">", "<=", ">=")


def _operator_scan(code: str, ops: tuple[str, ...], rule: Callable[[str, bool, bool], bool]) -> Iterator[str]:
    """The authors' line scan: every occurrence of each operator string on each line (text after the
    first ``#`` cut off; strings are not recognised), unless the operator with one neighbour on each
    side, stripped, is a *different* operator of ``ops``. ``rule(op, space_before, space_after)``
    says whether an occurrence is fine; only a plain space counts as a space, a line edge counts as one."""
    known = set(ops)
    for row, line in enumerate(_lines(code), start=1):
        if "#" in line:
            line = line[: line.index("#")]
        for op in ops:
            start = line.find(op)
            while start != -1:
                around = line[start - 1: start + len(op) + 1].strip() if start > 0 else None
                if around is None or around not in known or around == op:
                    end = start + len(op)
                    before = start == 0 or line[start - 1] == " "
                    after = end >= len(line) or line[end] == " "
                    if not rule(op, before, after):
                        yield f"line {row}: {op!r} spacing"
                        break
                start = line.find(op, start + 1)


def _spaced(op: str, before: bool, after: bool) -> bool:
    return before and after


def _unspaced(op: str, before: bool, after: bool) -> bool:
    return not before and not after


def _minimal(op: str, before: bool, after: bool) -> bool:
    return (before and after) if op in _ASSIGN else (not before and not after)


def _operators(ops: tuple[str, ...], rule: Callable[[str, bool, bool], bool], ok: str) -> Callable[[str], Result]:
    def check(code: str) -> Result:
        return fail_first(_operator_scan(code, ops, rule), ok)

    return check


# ---------------------------------------------------------------------------- license


def check_license_mit(code: str) -> Result:
    found = "MIT License" in code or "MIT license" in code
    return (True, "'MIT License' occurs") if found else (False, "neither 'MIT License' nor 'MIT license' occurs")


def check_license_apache(code: str) -> Result:
    found = "apache" in code.lower()
    return (True, "'apache' occurs (any case)") if found else (False, "'apache' does not occur (any case)")


def check_license_none(code: str) -> Result:
    found = "license" in code.lower()
    return (False, "'license' occurs (any case, anywhere)") if found else (True, "'license' does not occur")


# ---------------------------------------------------------------------------- docstrings

# A def header as the authors' pattern reads it: parameters without ")" and an optional "->" annotation.
_DEF_HEADER = re.compile(r"^\s*def\s+(\w+)\s*\([^)]*\)\s*(?:->.*?)?\s*:", re.M)
_DEF_OR_CLASS_HEADER = re.compile(r"^\s*(?:def|class)\s+\w+[^:]*:", re.M)
# What must follow a header: optional whitespace, prefix letters, a closed triple-quoted string.
_TRIPLE_STRING_NEXT = re.compile(r"\s*[rfbuRFBU]*(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?''')")
_MULTILINE_DOC = (re.compile(r"(\"\"\"|''')\n[\s\S]*?\1"), re.compile(r"(\"\"\"|''')\s*\S[^\n]*\n[^\n]*\1"))


def check_doc_required(code: str) -> Result:
    for header in _DEF_HEADER.finditer(code):
        if not _TRIPLE_STRING_NEXT.match(code, header.end()):
            return False, f"def {header.group(1)}: the header is not followed by a triple-quoted string"
    return True, "every def header the pattern finds is followed by a triple-quoted string"


def check_doc_none(code: str) -> Result:
    for header in _DEF_OR_CLASS_HEADER.finditer(code):
        if _TRIPLE_STRING_NEXT.match(code, header.end()):
            row = code.count("\n", 0, header.start()) + 1
            return False, f"line {row}: a def/class header is followed by a triple-quoted string"
    return True, "no def/class header the pattern finds is followed by a triple-quoted string"


def check_doc_oneline(code: str) -> Result:
    for pattern in _MULTILINE_DOC:
        found = pattern.search(code)
        if found:
            return False, f"a triple quote spans lines: {found.group(0)[:40]!r}"
    return True, "no triple-quoted text spans lines"


# ---------------------------------------------------------------------------- blank lines


def _blank_counts(code: str) -> list[tuple[str, int]]:
    """(name, blank lines) per def: lines from its first body statement's line to its last one's
    ``end_lineno``, counted on ``code.split("\\n")``; nested defs' lines count for the outer one."""
    tree = parsed(code)
    if tree is None:
        return []
    lines = _lines(code)
    out = []
    for fn in functions(tree):
        first, last = fn.body[0].lineno, fn.body[-1].end_lineno or fn.body[-1].lineno
        out.append((fn.name, sum(1 for i in range(first - 1, min(last, len(lines))) if not lines[i].strip())))
    return out


def _blanks(test: Callable[[int], bool], text: str) -> Callable[[str], Result]:
    def check(code: str) -> Result:
        return fail_first((f"{name}() has {count} blank line(s)" for name, count in _blank_counts(code)
                            if not test(count)), f"every function body has {text}")

    return check


# ---------------------------------------------------------------------------- singletons

_SINGLETON = r"(?:None|True|False)"
_SINGLETON_PATTERNS = {
    "singleton_is": re.compile(rf"(?:==|!=)\s*{_SINGLETON}\b|\b{_SINGLETON}\s*(?:==|!=)"),
    "singleton_eq": re.compile(rf"\bis\s+(?:not\s+)?{_SINGLETON}\b"),
    "singleton_variable_first": re.compile(rf"\b{_SINGLETON}\s*(?:is|==|!=)"),
    "singleton_yoda": re.compile(rf"(?:is\s+not|is|==|!=)\s*{_SINGLETON}\b"),
}


def _singleton(style: str) -> Callable[[str], Result]:
    pattern = _SINGLETON_PATTERNS[style]

    def check(code: str) -> Result:
        found = pattern.search(code)
        if found:
            return False, f"line {code.count(chr(10), 0, found.start()) + 1}: the text matches {found.group(0)!r}"
        return True, "no text match"

    return check


# ---------------------------------------------------------------------------- line length


def _line_limit(limit: int) -> Callable[[str], Result]:
    def check(code: str) -> Result:
        return fail_first((f"line {row}: {len(line)} characters" for row, line in enumerate(_lines(code), start=1)
                            if len(line) > limit), f"every line has at most {limit} characters")

    return check


# ---------------------------------------------------------------------------- table

REFERENCE_CHECKERS: dict[str, Callable[[str], Result]] = {
    "indent_2": _indent_multiple(2, unit_must_match=True),
    "indent_4": _indent_multiple(4, unit_must_match=False),
    "indent_tab": _indent_without(" ", "space"),
    "indent_spaces": _indent_without("\t", "tab"),
    "quotes_single": _quotes("'"),
    "quotes_double": _quotes('"'),
    "quotes_docstring_triple_double": check_quotes_docstring_triple_double,
    "naming_snake": convention(SNAKE, "snake_case"),
    "naming_camel": convention(CAMEL, "camelCase"),
    "naming_consonant_start": check_naming_consonant_start,
    "op_space_around": _operators((*_ASSIGN, *_BINARY), _spaced, "spaces around every operator"),
    "op_space_none": _operators((*_ASSIGN, *_BINARY), _unspaced, "no spaces around any operator"),
    "op_space_minimal": _operators((*_ASSIGN, *_BINARY), _minimal, "spaces around assignments only"),
    "op_space_arithmetic": _operators((*_COMPARE, *_ARITH), _spaced, "spaces around arithmetic/comparison"),
    "types_full": type_hints(True, True),
    "types_none": type_hints(False, False),
    "types_args_only": type_hints(True, False),
    "types_args_required": type_hints(True, None),
    "var_min3": name_length(3, None),
    "var_single": name_length(1, 1),
    "var_min5": name_length(5, None),
    "var_max2": name_length(1, 2),
    "license_mit": check_license_mit,
    "license_apache": check_license_apache,
    "license_none": check_license_none,
    "doc_required": check_doc_required,
    "doc_none": check_doc_none,
    "doc_online": check_doc_oneline,
    "blank_internal_none": _blanks(lambda n: n == 0, "no blank line"),
    "blank_internal_one": _blanks(lambda n: n == 1, "exactly one blank line"),
    "blank_internal_required": _blanks(lambda n: n >= 1, "a blank line"),
    "return_variable": check_return_variable,
    "return_direct": check_return_direct,
    "return_explicit_none": check_return_explicit_none,
    "singleton_is": _singleton("singleton_is"),
    "singleton_eq": _singleton("singleton_eq"),
    "singleton_variable_first": _singleton("singleton_variable_first"),
    "singleton_yoda": _singleton("singleton_yoda"),
    "line_79": _line_limit(79),
    "line_120": _line_limit(120),
    "line_unlimited": lambda code: (True, "no line length limit"),
}


def reference_style(style_id: str, reply: str) -> Result:
    """The authors' verdict for ``style_id`` on a whole reply: extraction, the empty-code rule
    (no code: every style fails) and the checker; a checker that raises fails."""
    code = reference_code(reply)
    if not code:
        return False, "no code in the reply: the authors' evaluator fails every style"
    try:
        return REFERENCE_CHECKERS[style_id](code)
    except Exception as exc:  # noqa: BLE001 - their evaluator then fails the sample
        return False, f"the authors' checker raises {type(exc).__name__}: {exc}; their evaluator fails the sample"
