"""``reference`` mode, the AST-based style checks: names, type hints, returns.

What the authors' AST checkers of these ids compute (see :mod:`.reference_styles`
for the text scans, the table and the dispatch), quirks included: only some names
are looked at, and code that does not parse passes.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

Result = tuple[bool, str]


def parsed(code: str) -> ast.Module | None:
    """The AST, or None for a ``SyntaxError`` (the authors' AST checks then pass)."""
    try:
        return ast.parse(code)
    except SyntaxError:
        return None


def stored_names(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Every ``ast.Name`` in store context: assignment, ``for``, ``with``, comprehension and ``:=`` targets."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.id, node.lineno


def functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def checked_names(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Stored names plus the *plain positional* parameters (``args.args``) of every def --
    not positional-only, keyword-only, ``*args``, ``**kwargs`` or lambda parameters."""
    yield from stored_names(tree)
    for fn in functions(tree):
        for arg in fn.args.args:
            yield arg.arg, arg.lineno


def fail_first(problems: Iterator[str], ok: str) -> Result:
    first = next(problems, None)
    return (True, ok) if first is None else (False, first)


# ---------------------------------------------------------------------------- names

SNAKE = re.compile(r"_*[a-z][a-z0-9]*(?:_[a-z0-9]+)*_*|_+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")
CAMEL = re.compile(r"_*[a-z][a-zA-Z0-9]*|_+")
CONSONANTS = frozenset("bcdfghjklmnpqrstvwxyzBCDFGHJKLMNPQRSTVWXYZ")


def convention(pattern: re.Pattern[str], name: str) -> Callable[[str], Result]:
    def check(code: str) -> Result:
        tree = parsed(code)
        if tree is None:
            return True, "the code does not parse: the authors' AST check passes"

        def problems() -> Iterator[str]:
            for ident, row in checked_names(tree):
                dunder = ident.startswith("__") and ident.endswith("__")
                if not dunder and ident != "_" and pattern.fullmatch(ident) is None:
                    yield f"line {row}: {ident!r} is not {name}"

        return fail_first(problems(), f"every checked name is {name}")

    return check


def check_naming_consonant_start(code: str) -> Result:
    tree = parsed(code)
    if tree is None:
        return True, "the code does not parse: the authors' AST check passes"

    def problems() -> Iterator[str]:
        for ident, row in stored_names(tree):  # parameters are not looked at
            if (ident.startswith("__") and ident.endswith("__")) or ident == "_":
                continue
            core = ident.lstrip("_")
            if core and core[0] not in CONSONANTS:
                yield f"line {row}: {ident!r} does not start with an ASCII consonant"

    return fail_first(problems(), "every assigned name starts with a consonant")


def name_length(low: int, high: int | None) -> Callable[[str], Result]:
    def check(code: str) -> Result:
        tree = parsed(code)
        if tree is None:
            return True, "the code does not parse: the authors' AST check passes"

        def problems() -> Iterator[str]:
            for ident, row in checked_names(tree):
                if ident.startswith("_"):
                    continue
                if len(ident) < low or (high is not None and len(ident) > high):
                    yield f"line {row}: {ident!r} has {len(ident)} characters"

        return fail_first(problems(), "every checked name has an allowed length")

    return check


# ---------------------------------------------------------------------------- type hints


def hint_flags(code: str) -> list[tuple[str, bool, bool]]:
    """(name, some plain positional parameter is annotated, has a return annotation) per def."""
    tree = parsed(code)
    if tree is None:
        return []
    return [(fn.name, any(a.annotation is not None for a in fn.args.args), fn.returns is not None)
            for fn in functions(tree)]


def type_hints(args: bool | None, returns: bool | None) -> Callable[[str], Result]:
    """``args``/``returns``: True required, False forbidden, None free. "Annotated parameters"
    means at least one annotated plain positional parameter (a def without one fails ``True``)."""

    def check(code: str) -> Result:
        def problems() -> Iterator[str]:
            for name, hinted, returned in hint_flags(code):
                if args is not None and hinted != args:
                    yield f"{name}(): {'no' if args else 'an'} annotated positional parameter"
                if returns is not None and returned != returns:
                    yield f"{name}(): {'no' if returns else 'a'} return annotation"

        return fail_first(problems(), "type hints comply")

    return check


# ---------------------------------------------------------------------------- returns


def direct_returns(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[set[str], list[ast.Return]]:
    """Names a def's *own top-level* ``x = ...`` statements assign (plain-name targets), and its
    top-level ``return <value>`` statements: nothing inside ``if``/``for``/``with``/``try`` is seen."""
    assigned = {target.id for stmt in fn.body if isinstance(stmt, ast.Assign)
                for target in stmt.targets if isinstance(target, ast.Name)}
    returns = [stmt for stmt in fn.body if isinstance(stmt, ast.Return) and stmt.value is not None]
    return assigned, returns


def check_return_variable(code: str) -> Result:
    tree = parsed(code)
    if tree is None:
        return True, "the code does not parse: the authors' AST check passes"
    return fail_first((f"line {ret.lineno}: returns a non-name" for fn in functions(tree)
                        for ret in direct_returns(fn)[1] if not isinstance(ret.value, ast.Name)),
                       "every top-level return of every def returns a name")


def check_return_direct(code: str) -> Result:
    tree = parsed(code)
    if tree is None:
        return True, "the code does not parse: the authors' AST check passes"

    def problems() -> Iterator[str]:
        for fn in functions(tree):
            assigned, returns = direct_returns(fn)
            for ret in returns:
                if isinstance(ret.value, ast.Name) and ret.value.id in assigned:
                    yield f"line {ret.lineno}: returns {ret.value.id!r}, assigned at the top level of {fn.name}()"

    return fail_first(problems(), "no top-level return returns a name assigned at the top level")


def check_return_explicit_none(code: str) -> Result:
    tree = parsed(code)
    if tree is None:
        return True, "the code does not parse: the authors' AST check passes"
    return fail_first((f"line {node.lineno}: bare return" for fn in functions(tree) for node in ast.walk(fn)
                        if isinstance(node, ast.Return) and node.value is None),
                       "no bare return inside a def (falling off the end is not checked)")
