"""Analysis of model-written code for the ManyIH style checkers: parsed once, viewed many ways.

:class:`Source` holds the AST and the token stream of the extracted code and
derives what the checkers need: string literals (with docstrings and f-strings
marked), bound variable and parameter names, function header ends and blank
lines, comment blocks, and operator occurrences with their spacing. Nothing is
read with raw regular expressions over the file, so strings and comments are
never mistaken for code.
"""

from __future__ import annotations

import ast
import bisect
import io
import keyword
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache

_FSTRING_START = getattr(tokenize, "FSTRING_START", -1)
_FSTRING_END = getattr(tokenize, "FSTRING_END", -2)
_SKIP = {tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}
_QUOTE = re.compile(r"([A-Za-z]*)('''|\"\"\"|'|\")")


@dataclass(frozen=True, slots=True)
class Literal:
    """One string literal as written (an f-string is one literal with its replacement fields)."""

    start: tuple[int, int]
    end: tuple[int, int]
    prefix: str
    quote: str
    text: str
    docstring: bool

    @property
    def fstring(self) -> bool:
        return "f" in self.prefix.lower()

    @property
    def content(self) -> str:
        return self.text[len(self.prefix) + len(self.quote): len(self.text) - len(self.quote)]


@dataclass(frozen=True, slots=True)
class Operator:
    """An operator occurrence: ``kind`` is ``assign`` or ``binary``; spacing None = a line break."""

    text: str
    kind: str
    row: int
    before: bool | None
    after: bool | None


class Source:
    """Code parsed once (``ast`` and ``tokenize``); derived views are computed on demand."""

    def __init__(self, code: str) -> None:
        self.code = code.replace("\r\n", "\n").replace("\r", "\n")
        self.lines = self.code.split("\n")
        self.error: str | None = None
        self.tree: ast.Module | None = None
        self.tokens: list[tokenize.TokenInfo] | None = None
        if not self.code.strip():
            self.error = "no code found in the response"
            return
        try:
            self.tree = ast.parse(self.code)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            self.error = f"the code does not parse: {type(exc).__name__}: {exc}"
            return
        try:
            self.tokens = list(tokenize.generate_tokens(io.StringIO(self.code).readline))
        except (tokenize.TokenError, SyntaxError) as exc:
            self.tree = None
            self.error = f"the code does not tokenize: {exc}"

    @property
    def ok(self) -> bool:
        return self.error is None

    # ------------------------------------------------------------------ positions

    def char_col(self, row: int, byte_col: int) -> int:
        """AST columns are UTF-8 byte offsets; tokens count characters."""
        line = self.lines[row - 1] if 0 < row <= len(self.lines) else ""
        return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))

    def span_text(self, start: tuple[int, int], end: tuple[int, int]) -> str:
        (r1, c1), (r2, c2) = start, end
        if r1 == r2:
            return self.lines[r1 - 1][c1:c2]
        parts = [self.lines[r1 - 1][c1:]] + self.lines[r1:r2 - 1] + [self.lines[r2 - 1][:c2]]
        return "\n".join(parts)

    # ------------------------------------------------------------------ derived views

    @cached_property
    def docstring_nodes(self) -> list[ast.Constant]:
        out = []
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
                first = node.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                        and isinstance(first.value.value, str):
                    out.append(first.value)
        return out

    @cached_property
    def literals(self) -> list[Literal]:
        spans = [((n.lineno, self.char_col(n.lineno, n.col_offset)),
                  (n.end_lineno, self.char_col(n.end_lineno, n.end_col_offset))) for n in self.docstring_nodes]

        def is_doc(start: tuple[int, int]) -> bool:
            return any(a <= start < b for a, b in spans)

        out: list[Literal] = []
        depth = 0
        opened: tokenize.TokenInfo | None = None
        for tok in self.tokens or ():
            if tok.type == _FSTRING_START:
                if depth == 0:
                    opened = tok
                depth += 1
            elif tok.type == _FSTRING_END:
                depth -= 1
                if depth == 0 and opened is not None:
                    match = _QUOTE.match(opened.string)
                    if match:
                        out.append(Literal(opened.start, tok.end, match.group(1), match.group(2),
                                           self.span_text(opened.start, tok.end), is_doc(opened.start)))
            elif tok.type == tokenize.STRING and depth == 0:
                match = _QUOTE.match(tok.string)
                if match:
                    out.append(Literal(tok.start, tok.end, match.group(1), match.group(2), tok.string,
                                       is_doc(tok.start)))
        return out

    @cached_property
    def string_rows(self) -> set[int]:
        """Rows that lie inside a multi-line literal (after its first row)."""
        rows: set[int] = set()
        for lit in self.literals:
            rows.update(range(lit.start[0] + 1, lit.end[0] + 1))
        return rows

    @cached_property
    def functions(self) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        return [n for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]

    @cached_property
    def methods(self) -> set[int]:
        return {id(stmt) for node in ast.walk(self.tree) if isinstance(node, ast.ClassDef)
                for stmt in node.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def parameters(self, fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.arg]:
        """Every parameter, without the ``self``/``cls`` of a method."""
        args = fn.args
        params = [*args.posonlyargs, *args.args, *([args.vararg] if args.vararg else []), *args.kwonlyargs,
                  *([args.kwarg] if args.kwarg else [])]
        positional = [*args.posonlyargs, *args.args]
        if id(fn) in self.methods and positional and positional[0].arg in ("self", "cls"):
            params.remove(positional[0])
        return params

    @cached_property
    def variables(self) -> list[tuple[str, int]]:
        """(name, line) of every variable and parameter binding; function, class and import names excluded."""
        out: list[tuple[str, int]] = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.append((node.id, node.lineno))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                out.extend((p.arg, p.lineno) for p in self.parameters(node))
            elif isinstance(node, ast.ExceptHandler) and node.name:
                out.append((node.name, node.lineno))
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                out.append((node.name, node.lineno))
            elif isinstance(node, ast.MatchMapping) and node.rest:
                out.append((node.rest, node.lineno))
        return [(name, line) for name, line in out if not re.fullmatch(r"_+", name)]

    @cached_property
    def header_end(self) -> dict[int, int]:
        """Function node id -> the row of the ``:`` that ends its ``def`` line(s)."""
        tokens = self.tokens or []
        starts = [tok.start for tok in tokens]
        out = {}
        for fn in self.functions:
            pos = (fn.lineno, self.char_col(fn.lineno, fn.col_offset))
            index = bisect.bisect_left(starts, pos)
            depth = 0
            for tok in tokens[index:]:
                if tok.type == tokenize.OP:
                    if tok.string in "([{":
                        depth += 1
                    elif tok.string in ")]}":
                        depth -= 1
                    elif tok.string == ":" and depth == 0:
                        out[id(fn)] = tok.end[0]
                        break
        return out

    def blank_rows(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[int]:
        first = self.header_end.get(id(fn), fn.lineno) + 1
        return [row for row in range(first, (fn.end_lineno or fn.lineno) + 1)
                if not self.lines[row - 1].strip() and row not in self.string_rows]

    @cached_property
    def comment_blocks(self) -> list[tuple[int, str]]:
        """Runs of comments on consecutive lines, joined (a notice may span lines)."""
        blocks: list[tuple[int, list[str], int]] = []
        for tok in self.tokens or ():
            if tok.type == tokenize.COMMENT:
                row = tok.start[0]
                if blocks and blocks[-1][2] == row - 1:
                    blocks[-1][1].append(tok.string.lstrip("#"))
                    blocks[-1] = (blocks[-1][0], blocks[-1][1], row)
                else:
                    blocks.append((row, [tok.string.lstrip("#")], row))
        return [(row, "\n".join(parts)) for row, parts, _ in blocks]

    @cached_property
    def operators(self) -> list[Operator]:
        return list(_code_operators(self))


@lru_cache(maxsize=128)
def analyse(code: str) -> Source:
    return Source(code)


# ---------------------------------------------------------------------------- operators

_BINARY = {"+", "-", "*", "/", "//", "%", "**", "@", "<<", ">>", "&", "|", "^", "==", "!=", "<", ">", "<=", ">="}
_ASSIGN = {"=", ":=", "+=", "-=", "*=", "/=", "//=", "%=", "**=", "@=", "<<=", ">>=", "&=", "|=", "^="}
_OPERAND_KEYWORDS = {"True", "False", "None"}


def _is_operand_end(tok: tokenize.TokenInfo | None) -> bool:
    if tok is None:
        return False
    if tok.type == tokenize.NAME:
        return not keyword.iskeyword(tok.string) or tok.string in _OPERAND_KEYWORDS
    if tok.type in (tokenize.NUMBER, tokenize.STRING, _FSTRING_END):
        return True
    return tok.type == tokenize.OP and tok.string in (")", "]", "}", "...")


def _spacing(src: Source, tok: tokenize.TokenInfo) -> tuple[bool | None, bool | None]:
    (row, col), (end_row, end_col) = tok.start, tok.end
    line, end_line = src.lines[row - 1], src.lines[end_row - 1]
    before = None if not line[:col].strip() else line[col - 1] in " \t"
    rest = end_line[end_col:].strip()
    after = None if rest in ("", "\\") or rest.startswith("#") else end_line[end_col] in " \t"
    return before, after


def _code_operators(src: Source) -> Iterator[Operator]:
    depth = 0
    fdepth = 0
    lambdas: list[int] = []
    prev: tokenize.TokenInfo | None = None
    for tok in src.tokens or ():
        if tok.type == _FSTRING_START:
            fdepth += 1
        elif tok.type == _FSTRING_END:
            fdepth -= 1
            prev = tok
            continue
        if fdepth or tok.type in _SKIP:
            continue
        if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            prev = None
            continue
        if tok.type == tokenize.NAME and tok.string == "lambda":
            lambdas.append(depth)
        elif tok.type == tokenize.OP:
            text = tok.string
            if text in "([{":
                depth += 1
            elif text in ")]}":
                depth -= 1
            elif text == ":" and lambdas and lambdas[-1] == depth:
                lambdas.pop()
            elif text in _BINARY and _is_operand_end(prev):
                before, after = _spacing(src, tok)
                yield Operator(text, "binary", tok.start[0], before, after)
            elif text == "=":
                if depth == 0 and not (lambdas and lambdas[-1] == depth):
                    before, after = _spacing(src, tok)
                    yield Operator(text, "assign", tok.start[0], before, after)
            elif text in _ASSIGN:
                before, after = _spacing(src, tok)
                yield Operator(text, "assign", tok.start[0], before, after)
        prev = tok

