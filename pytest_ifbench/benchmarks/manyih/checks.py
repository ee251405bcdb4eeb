"""The 41 ManyIH style checkers, on the AST and the token stream.

``paper`` mode: every checker takes an analysed :class:`Source` and returns
``(passed, evidence)`` for the plain meaning of the instruction: strings and
comments are never mistaken for code, and code that does not parse fails
every check. ``reference`` mode (the authors' checkers) is
``reference_styles``. The exact rules are documented in docs/manyih.md.
"""

from __future__ import annotations

import ast
import re
import tokenize
from collections.abc import Callable, Iterator

from .source import Source, analyse

Result = tuple[bool, str]
_SHOWN = 5


def _spaced(value: bool | None) -> bool:
    return value is None or value


def _unspaced(value: bool | None) -> bool:
    return value is None or not value


# ---------------------------------------------------------------------------- helpers


def _verdict(problems: list[str], ok_text: str) -> Result:
    if not problems:
        return True, ok_text
    shown = "; ".join(problems[:_SHOWN])
    more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
    return False, shown + more


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function's own body, not descending into nested functions or classes."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _terminates(body: list[ast.stmt]) -> bool:
    """Whether running ``body`` can never reach its end (every path returns or raises)."""
    return any(_stmt_terminates(stmt) for stmt in body)


def _has_break(body: list[ast.stmt]) -> bool:
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Break):
            return True
        if not isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef,
                                 ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _stmt_terminates(stmt: ast.stmt) -> bool:
    if isinstance(stmt, (ast.Return, ast.Raise)):
        return True
    if isinstance(stmt, ast.If):
        return bool(stmt.orelse) and _terminates(stmt.body) and _terminates(stmt.orelse)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return _terminates(stmt.body)
    if isinstance(stmt, ast.While):
        truthy = isinstance(stmt.test, ast.Constant) and bool(stmt.test.value)
        return truthy and not _has_break(stmt.body)
    if isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        if stmt.finalbody and _terminates(stmt.finalbody):
            return True
        main = _terminates(stmt.body) or (bool(stmt.orelse) and _terminates(stmt.orelse))
        return main and all(_terminates(h.body) for h in stmt.handlers)
    if isinstance(stmt, ast.Match):
        catch_all = any(isinstance(c.pattern, ast.MatchAs) and c.pattern.pattern is None and c.guard is None
                        for c in stmt.cases)
        return catch_all and all(_terminates(c.body) for c in stmt.cases)
    return False


def _is_singleton(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and (node.value is None or node.value is True or node.value is False)


_SINGLETON_OPS = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)
_OP_TEXT = {ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not"}


def _singleton_comparisons(src: Source) -> Iterator[tuple[ast.AST, ast.cmpop, ast.AST, int]]:
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for index, op in enumerate(node.ops):
                left, right = operands[index], operands[index + 1]
                if isinstance(op, _SINGLETON_OPS) and (_is_singleton(left) or _is_singleton(right)):
                    yield left, op, right, node.lineno


def _describe_cmp(left: ast.AST, op: ast.cmpop, right: ast.AST) -> str:
    return f"{_unparse(left)} {_OP_TEXT[type(op)]} {_unparse(right)}"


def _unparse(node: ast.AST) -> str:
    try:
        return _short(ast.unparse(node))
    except (RecursionError, ValueError):
        return "<expression>"


# ---------------------------------------------------------------------------- indent


def _leading_whitespace(src: Source) -> Iterator[tuple[int, str]]:
    for row, line in enumerate(src.lines, start=1):
        if line.strip() and row not in src.string_rows:
            yield row, line[: len(line) - len(line.lstrip(" \t"))]


def _indent_steps(src: Source) -> Iterator[tuple[int, str, str]]:
    """(row, parent indentation, new indentation) for every block opened."""
    stack = [""]
    for tok in src.tokens or ():
        if tok.type == tokenize.INDENT:
            yield tok.start[0], stack[-1], tok.string
            stack.append(tok.string)
        elif tok.type == tokenize.DEDENT:
            stack.pop()


def _indent_spaces_step(width: int) -> Callable[[Source], Result]:
    def check(src: Source) -> Result:
        problems = [f"line {row}: indentation contains a tab" for row, ws in _leading_whitespace(src) if "\t" in ws]
        for row, parent, new in _indent_steps(src):
            step = new[len(parent):] if new.startswith(parent) else None
            if "\t" not in new and step != " " * width:
                size = len(step) if step is not None else "?"
                problems.append(f"line {row}: block indented by {size} spaces, not {width}")
        return _verdict(sorted(set(problems), key=_row_key), f"every block is indented by {width} spaces")

    return check


def _row_key(text: str) -> tuple[int, str]:
    match = re.match(r"line (\d+)", text)
    return (int(match.group(1)) if match else 0, text)


def check_indent_tab(src: Source) -> Result:
    problems = []
    for row, parent, new in _indent_steps(src):
        if new != parent + "\t":
            problems.append(f"line {row}: block indented by {new[len(parent):]!r}, not one tab")
    return _verdict(problems, "every block is indented by one tab")


def check_indent_spaces(src: Source) -> Result:
    problems = [f"line {row}: indentation contains a tab" for row, ws in _leading_whitespace(src) if "\t" in ws]
    return _verdict(problems, "no tab in any indentation")


# ---------------------------------------------------------------------------- quotes


def _quote_check(want: str) -> Callable[[Source], Result]:
    def check(src: Source) -> Result:
        problems = []
        for lit in src.literals:
            if lit.docstring:
                continue
            if not lit.quote.startswith(want):
                problems.append(f"line {lit.start[0]}: {_short(lit.text)} is not {_QUOTE_NAME[want]}-quoted")
        return _verdict(problems, f"every non-docstring string literal uses {_QUOTE_NAME[want]} quotes")

    return check


_QUOTE_NAME = {"'": "single", '"': "double"}


def _short(text: str, limit: int = 40) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_quotes_docstring_triple_double(src: Source) -> Result:
    problems = [f"line {lit.start[0]}: docstring {_short(lit.text)} is not delimited by \"\"\""
                for lit in src.literals if lit.docstring and lit.quote != '"""']
    return _verdict(problems, 'every docstring uses """')


# ---------------------------------------------------------------------------- names


def _name_check(test: Callable[[str], bool], rule: str) -> Callable[[Source], Result]:
    def check(src: Source) -> Result:
        seen: dict[str, int] = {}
        for name, row in src.variables:
            if not test(name):
                seen.setdefault(name, row)
        problems = [f"line {row}: {name!r} {rule}" for name, row in seen.items()]
        count = len({name for name, _ in src.variables})
        return _verdict(problems, f"all {count} variable/parameter names comply")

    return check


_CONSONANTS = set("bcdfghjklmnpqrstvwxyz")


# ---------------------------------------------------------------------------- operators


def _operator_check(assign: str | None, binary: str | None) -> Callable[[Source], Result]:
    """``assign``/``binary``: ``spaced``, ``unspaced`` or None (not checked)."""
    rules = {"spaced": (_spaced, "needs spaces around it"), "unspaced": (_unspaced, "must not have spaces around it")}

    def check(src: Source) -> Result:
        problems = []
        for op in src.operators:
            rule = assign if op.kind == "assign" else binary
            if rule is None:
                continue
            test, text = rules[rule]
            if not (test(op.before) and test(op.after)):
                problems.append(f"line {op.row}: {op.text!r} {text}")
        return _verdict(problems, "operator spacing complies")

    return check


# ---------------------------------------------------------------------------- type hints


def _types_check(args: str, returns: str, variables: str = "any") -> Callable[[Source], Result]:
    """Each of ``args``/``returns``/``variables``: ``required``, ``forbidden`` or ``any``."""

    def check(src: Source) -> Result:
        problems = []
        for fn in src.functions:
            params = src.parameters(fn)
            if args == "required":
                missing = [p.arg for p in params if p.annotation is None]
                if missing:
                    problems.append(f"line {fn.lineno}: {fn.name}() parameter(s) {', '.join(missing)} not annotated")
            elif args == "forbidden":
                hinted = [p.arg for p in params if p.annotation is not None]
                if hinted:
                    problems.append(f"line {fn.lineno}: {fn.name}() parameter(s) {', '.join(hinted)} annotated")
            if returns == "required" and fn.returns is None:
                problems.append(f"line {fn.lineno}: {fn.name}() has no return annotation")
            elif returns == "forbidden" and fn.returns is not None:
                problems.append(f"line {fn.lineno}: {fn.name}() has a return annotation")
        if variables == "forbidden":
            problems.extend(f"line {n.lineno}: variable annotation on {_unparse(n.target)}"
                            for n in ast.walk(src.tree) if isinstance(n, ast.AnnAssign))
        return _verdict(problems, f"type hints comply in {len(src.functions)} function(s)")

    return check


# ---------------------------------------------------------------------------- license

_MIT = (re.compile(r"\bMIT\b", re.I), re.compile(r"licen[cs]e", re.I))
_MIT_TEXT = re.compile(r"permission\s+is\s+hereby\s+granted,?\s+free\s+of\s+charge", re.I)
_APACHE = (re.compile(r"\bapache\b", re.I), re.compile(r"licen[cs]e", re.I), re.compile(r"\b2(?:\.0)?\b"))
_ANY_NOTICE = re.compile(r"\w*licen[cs]\w*|copyright|\u00a9", re.I)


def _license_texts(src: Source) -> list[tuple[int, str]]:
    return [*src.comment_blocks, *((lit.start[0], lit.content) for lit in src.literals)]


def _is_mit(text: str) -> bool:
    return all(p.search(text) for p in _MIT) or bool(_MIT_TEXT.search(text))


def _is_apache(text: str) -> bool:
    return all(p.search(text) for p in _APACHE)


def check_license_mit(src: Source) -> Result:
    for row, text in _license_texts(src):
        if _is_mit(text):
            return True, f"MIT License notice at line {row}"
    return False, "no comment or string literal holds an MIT License notice"


def check_license_apache(src: Source) -> Result:
    for row, text in _license_texts(src):
        if _is_apache(text):
            return True, f"Apache License 2.0 notice at line {row}"
    return False, "no comment or string literal holds an Apache License 2.0 notice"


def check_license_none(src: Source) -> Result:
    problems = [f"line {row}: {_short(match.group(0))!r} in {_short(text.strip())!r}"
                for row, text in _license_texts(src) if (match := _ANY_NOTICE.search(text))]
    return _verdict(problems, "no license or copyright notice")


# ---------------------------------------------------------------------------- docstrings

def check_doc_required(src: Source) -> Result:
    documented = {id(n) for n in src.docstring_nodes}
    problems = [f"line {fn.lineno}: {fn.name}() has no docstring" for fn in src.functions
                if not (fn.body and isinstance(fn.body[0], ast.Expr) and id(fn.body[0].value) in documented)]
    return _verdict(problems, f"all {len(src.functions)} function(s) have a docstring")


def check_doc_none(src: Source) -> Result:
    problems = [f"line {n.lineno}: docstring {_short(repr(n.value))}" for n in src.docstring_nodes]
    return _verdict(problems, "no docstrings")


def check_doc_online(src: Source) -> Result:
    problems = [f"line {n.lineno}: docstring spans lines {n.lineno}-{n.end_lineno}"
                for n in src.docstring_nodes if n.end_lineno != n.lineno]
    return _verdict(problems, f"all {len(src.docstring_nodes)} docstring(s) fit on one line")


# ---------------------------------------------------------------------------- blank lines


def _blank_check(low: int, high: int | None, text: str) -> Callable[[Source], Result]:
    def check(src: Source) -> Result:
        problems = []
        for fn in src.functions:
            blanks = src.blank_rows(fn)
            if len(blanks) < low or (high is not None and len(blanks) > high):
                where = f" (line {', '.join(map(str, blanks[:_SHOWN]))})" if blanks else ""
                problems.append(f"line {fn.lineno}: {fn.name}() has {len(blanks)} blank line(s){where}")
        return _verdict(problems, f"every function body has {text}")

    return check


# ---------------------------------------------------------------------------- returns


def check_return_variable(src: Source) -> Result:
    problems = []
    for fn in src.functions:
        for node in _own_nodes(fn):
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value
                if not (isinstance(value, ast.Name) or (isinstance(value, ast.Constant) and value.value is None)):
                    problems.append(f"line {node.lineno}: returns the expression {_unparse(value)}")
    return _verdict(problems, "every return statement returns a variable")


def _assigned_names(fn: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in _own_nodes(fn):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        elif isinstance(node, (ast.AugAssign, ast.NamedExpr)):
            targets = [node.target]
        for target in targets:
            names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def check_return_direct(src: Source) -> Result:
    problems = []
    for fn in src.functions:
        assigned = _assigned_names(fn)
        for node in _own_nodes(fn):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Name) and node.value.id in assigned:
                problems.append(f"line {node.lineno}: returns the assigned variable {node.value.id!r}")
    return _verdict(problems, "no function returns a variable it assigned")


def check_return_explicit_none(src: Source) -> Result:
    problems = []
    for fn in src.functions:
        own = list(_own_nodes(fn))
        problems.extend(f"line {n.lineno}: bare 'return' in {fn.name}()" for n in own
                        if isinstance(n, ast.Return) and n.value is None)
        generator = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own)
        if not generator and not _terminates(fn.body):
            problems.append(f"line {fn.lineno}: {fn.name}() can end without 'return None'")
    return _verdict(problems, "every function ends with a return or raise; no bare 'return'")


# ---------------------------------------------------------------------------- singletons

def _singleton_check(bad: Callable[[ast.AST, ast.cmpop, ast.AST], bool],
                     ok_text: str) -> Callable[[Source], Result]:
    def check(src: Source) -> Result:
        problems = [f"line {row}: {_describe_cmp(left, op, right)}"
                    for left, op, right, row in _singleton_comparisons(src) if bad(left, op, right)]
        return _verdict(problems, ok_text)

    return check


# ---------------------------------------------------------------------------- line length


def _line_check(limit: int | None) -> Callable[[Source], Result]:
    def check(src: Source) -> Result:
        if limit is None:
            return True, "no line length limit"
        problems = [f"line {row}: {len(line)} characters" for row, line in enumerate(src.lines, start=1)
                    if len(line) > limit]
        return _verdict(problems, f"every line has at most {limit} characters")

    return check


# ---------------------------------------------------------------------------- table

CHECKERS: dict[str, Callable[[Source], Result]] = {
    "indent_2": _indent_spaces_step(2),
    "indent_4": _indent_spaces_step(4),
    "indent_tab": check_indent_tab,
    "indent_spaces": check_indent_spaces,
    "quotes_single": _quote_check("'"),
    "quotes_double": _quote_check('"'),
    "quotes_docstring_triple_double": check_quotes_docstring_triple_double,
    "naming_snake": _name_check(lambda n: n == n.lower(), "is not snake_case"),
    "naming_camel": _name_check(lambda n: re.fullmatch(r"[a-z][A-Za-z0-9]*", n) is not None, "is not camelCase"),
    "naming_consonant_start": _name_check(lambda n: n[0].lower() in _CONSONANTS, "does not start with a consonant"),
    "op_space_around": _operator_check("spaced", "spaced"),
    "op_space_none": _operator_check("unspaced", "unspaced"),
    "op_space_minimal": _operator_check("spaced", "unspaced"),
    "op_space_arithmetic": _operator_check(None, "spaced"),
    "types_full": _types_check("required", "required"),
    "types_none": _types_check("forbidden", "forbidden", "forbidden"),
    "types_args_only": _types_check("required", "forbidden"),
    "types_args_required": _types_check("required", "any"),
    "var_min3": _name_check(lambda n: len(n) >= 3, "is shorter than 3 characters"),
    "var_single": _name_check(lambda n: len(n) == 1, "is longer than 1 character"),
    "var_min5": _name_check(lambda n: len(n) >= 5, "is shorter than 5 characters"),
    "var_max2": _name_check(lambda n: len(n) <= 2, "is longer than 2 characters"),
    "license_mit": check_license_mit,
    "license_apache": check_license_apache,
    "license_none": check_license_none,
    "doc_required": check_doc_required,
    "doc_none": check_doc_none,
    "doc_online": check_doc_online,
    "blank_internal_none": _blank_check(0, 0, "no blank line"),
    "blank_internal_one": _blank_check(1, 1, "exactly one blank line"),
    "blank_internal_required": _blank_check(1, None, "at least one blank line"),
    "return_variable": check_return_variable,
    "return_direct": check_return_direct,
    "return_explicit_none": check_return_explicit_none,
    "singleton_is": _singleton_check(lambda left, op, right: isinstance(op, (ast.Eq, ast.NotEq)),
                                     "no ==/!= comparison with None/True/False"),
    "singleton_eq": _singleton_check(lambda left, op, right: isinstance(op, (ast.Is, ast.IsNot)),
                                     "no is/is not comparison with None/True/False"),
    "singleton_variable_first": _singleton_check(
                                                 lambda left, op, right: _is_singleton(left),
                                                 "the variable comes first in every singleton comparison"),
    "singleton_yoda": _singleton_check(lambda left, op, right: not _is_singleton(left),
                                       "the singleton comes first in every singleton comparison"),
    "line_79": _line_check(79),
    "line_120": _line_check(120),
    "line_unlimited": _line_check(None),
}

def check_style(style_id: str, code: str) -> Result:
    """(passed, evidence) for one style on extracted code (``paper`` mode)."""
    src = analyse(code)
    if not src.ok:
        return False, src.error or "the code does not parse"
    return CHECKERS[style_id](src)
