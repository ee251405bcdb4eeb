"""Parent side: verdicts of assert tests decided outside the candidate's process.

Candidate code and the test snippets run in the same sandboxed interpreter
(tests mock the candidate's module, mutate its arguments, use its classes), so
anything that process says about a test -- "passed", a value, an exception --
can be forged by code that walks frames or ``gc`` to the harness, patches
builtins or returns an object whose ``__eq__`` is always true.  This module
takes the decision back where that code cannot reach: before the job is sent,
:func:`split_test` looks at the snippet's *top-level* asserts (statements that
run exactly once when the snippet runs) and, for each one whose expected side
the parent can evaluate itself (:func:`trusted_value`: literals, ``set``/
``sorted``/``float``/... of literals, ``json.loads`` of a string constant),
replaces the whole statement by ``_ifb_check_(k, <the other side>)``.

The child then only learns *what to compute*, never *what it should be*: it
evaluates that expression and reports the value as plain data
(:func:`decode` reads the harness's encoding).  The parent rebuilds the value
with its own types and applies the operator itself (:meth:`Check.verdict`), so
an always-true ``__eq__``, a patched ``builtins`` or a forged "passed" record
cannot turn a wrong answer into a pass: a forger would have to report the
expected value, which never enters the sandbox.  ``assert X`` / ``assert not
X`` become truth checks: the child reports ``bool(X)`` computed with the
built-in ``bool`` as it was before the candidate ran, so a truthy object of any
type (a ``re.Match``) passes as it does in Python.  Every test also runs with
the built-ins as they were before the candidate ran (the harness puts back any
it replaced and gives each test a private copy), so ``builtins.sorted = ...``
in the candidate cannot change what ``sorted(f(x))`` computes.

Limits, on purpose: a truth check carries one bit (a forger reporting ``True``,
or an object whose ``__bool__`` lies, passes a positive one), other modules the
candidate patches (``json.dumps = ...``) stay patched, and ``!=``/``<``-style checks are guessable;
asserts nested in functions, loops or branches, asserts comparing two
computed values, and whole ``unittest`` classes still run -- and are decided
-- in the candidate's process.  :class:`SplitTest` records how many checks a
test has, and ``TestOutcome.trusted`` says whether its verdict rests on such a
check.
"""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_OPS: dict[type[ast.cmpop], tuple[str, Callable[[Any, Any], bool]]] = {
    ast.Eq: ("==", operator.eq), ast.NotEq: ("!=", operator.ne), ast.Lt: ("<", operator.lt),
    ast.LtE: ("<=", operator.le), ast.Gt: (">", operator.gt), ast.GtE: (">=", operator.ge),
    ast.In: ("in", lambda a, b: a in b), ast.NotIn: ("not in", lambda a, b: a not in b),
    ast.Is: ("is", operator.is_), ast.IsNot: ("is not", operator.is_not),
}
_PURE_CALLS: dict[str, Callable[..., Any]] = {
    "set": set, "frozenset": frozenset, "tuple": tuple, "list": list, "dict": dict, "sorted": sorted,
    "float": float, "int": int, "str": str, "bool": bool, "complex": complex, "bytes": bytes,
}
_ARITH: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}
_MAX_DEPTH = 200
#: The name of the reporting function the harness puts in every test namespace.
CHECK_FUNCTION = "_ifb_check_"


class NotTrusted(Exception):
    """The expression needs more than the parent evaluates itself."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One top-level assert decided by the parent.  ``op`` is None for a truth check (``negate`` for
    ``assert not X``); otherwise the reported value goes on the ``side`` of ``op`` opposite ``expected``."""

    index: int
    source: str
    op: str | None = None
    expected: Any = None
    value_left: bool = True
    negate: bool = False

    def verdict(self, value: Any, message: str = "") -> str | None:
        """None when ``value`` (already decoded into plain parent-side objects) satisfies the assert,
        else the failure text."""
        if self.op is None:
            ok = bool(value) != self.negate
            left = right = None
        else:
            left, right = (value, self.expected) if self.value_left else (self.expected, value)
            try:
                ok = bool(_OPS_BY_NAME[self.op](left, right))
            except Exception as exc:  # e.g. "in" against a non-container
                return f"AssertionError: assert {self.source}\n  {type(exc).__name__}: {exc}"
        if ok:
            return None
        if message:
            return f"AssertionError: {message}"
        text = f"AssertionError: assert {self.source}"
        if self.op is not None:
            text += f"\n  left:  {_short(left)}\n  right: {_short(right)}"
        return text


_OPS_BY_NAME = {name: fn for name, fn in _OPS.values()}


@dataclass(frozen=True, slots=True, kw_only=True)
class SplitTest:
    """A test snippet as sent to the child (``source``) and the checks the parent keeps."""

    source: str
    checks: tuple[Check, ...]


def split_test(source: str) -> SplitTest:
    """Take the trusted checks out of one snippet; a snippet that does not parse is sent unchanged
    (the child reports its ``SyntaxError``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return SplitTest(source=source, checks=())
    aliases = {a.asname or a.name for node in tree.body if isinstance(node, ast.Import)
               for a in node.names if a.name == "json"}
    data = source.encode("utf-8", "surrogatepass")
    offsets = _line_offsets(data)
    edits: list[tuple[int, int, bytes]] = []
    checks: list[Check] = []
    for node in tree.body:
        if not isinstance(node, ast.Assert):
            continue
        found = _check_for(node, len(checks), aliases)
        if found is None:
            continue
        check, computed = found
        start, end = _span(node, offsets)
        value = _span(computed, offsets)
        original = data[start:end]
        call = f"{CHECK_FUNCTION}({check.index}, (".encode() + data[value[0]:value[1]] + b")"
        if node.msg is not None:
            msg = _span(node.msg, offsets)
            call += b", lambda: (" + data[msg[0]:msg[1]] + b")"
        if check.op is None:
            call += b", truth=True"
        call += b")"
        missing = original.count(b"\n") - call.count(b"\n")
        if missing > 0:  # keep the line numbers of what follows
            call = call[:-1] + b"\n" * missing + b")"
        edits.append((start, end, call))
        checks.append(check)
    for start, end, text in reversed(edits):
        data = data[:start] + text + data[end:]
    return SplitTest(source=data.decode("utf-8", "surrogatepass"), checks=tuple(checks))


def _check_for(node: ast.Assert, index: int, aliases: set[str]) -> tuple[Check, ast.expr] | None:
    test = node.test
    source = ast.unparse(test)
    if len(source) > 300:
        source = source[:300] + "..."
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        name = _OPS[type(test.ops[0])][0]
        for computed, other, value_left in ((test.left, test.comparators[0], True),
                                            (test.comparators[0], test.left, False)):
            if _is_trusted(computed, aliases):
                continue
            try:
                expected = trusted_value(other, aliases)
            except NotTrusted:
                continue
            if name in ("is", "is not") and not (expected is None or isinstance(expected, bool)):
                return None  # identity with a fresh object: only None/True/False mean the same here
            return Check(index=index, source=source, op=name, expected=expected, value_left=value_left), computed
        return None
    if isinstance(test, ast.Compare):
        return None
    negate = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    computed = test.operand if negate else test
    if _is_trusted(computed, aliases):
        return None
    return Check(index=index, source=source, negate=negate), computed


def _is_trusted(node: ast.expr, aliases: set[str]) -> bool:
    try:
        trusted_value(node, aliases)
    except NotTrusted:
        return False
    return True


def trusted_value(node: ast.expr, json_aliases: set[str] | frozenset[str] = frozenset(), depth: int = 0) -> Any:
    """Evaluate ``node`` in the parent if it is built from constants and pure built-ins only; raises
    :class:`NotTrusted` otherwise.  No name of the test or candidate namespace is looked up (a
    candidate shadowing ``sorted`` does not change the expected value)."""
    if depth > _MAX_DEPTH:
        raise NotTrusted
    sub = depth + 1
    if isinstance(node, ast.Constant) and not isinstance(node.value, type(...)):
        return node.value
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            raise NotTrusted
        items = [trusted_value(e, json_aliases, sub) for e in node.elts]
        kind = {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)]
        return _guard(kind, items)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise NotTrusted
        return _guard(dict, [(trusted_value(k, json_aliases, sub), trusted_value(v, json_aliases, sub))  # type: ignore[arg-type]
                             for k, v in zip(node.keys, node.values)])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = trusted_value(node.operand, json_aliases, sub)
        if not _number(operand):
            raise NotTrusted
        return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        left, right = trusted_value(node.left, json_aliases, sub), trusted_value(node.right, json_aliases, sub)
        if not (_number(left) and _number(right)) or any(isinstance(v, int) and abs(v) > 1 << 256
                                                        for v in (left, right)):
            raise NotTrusted
        return _guard(_ARITH[type(node.op)], [left, right], spread=True)
    if isinstance(node, ast.Call) and not node.keywords:
        args = [trusted_value(a, json_aliases, sub) for a in node.args if not isinstance(a, ast.Starred)]
        if len(args) != len(node.args):
            raise NotTrusted
        func = node.func
        if isinstance(func, ast.Name) and func.id in _PURE_CALLS:
            if func.id in ("str", "bytes") and args and not isinstance(args[0], str | bytes):
                raise NotTrusted  # str(x)/bytes(n) of a non-string: a repr or a huge buffer
            return _guard(_PURE_CALLS[func.id], args, spread=True)
        if (isinstance(func, ast.Attribute) and func.attr == "loads" and isinstance(func.value, ast.Name)
                and func.value.id in json_aliases and len(args) == 1 and isinstance(args[0], str | bytes)):
            return _guard(json.loads, args, spread=True)
    raise NotTrusted


def _number(value: Any) -> bool:
    return type(value) in (int, float, complex)


def _guard(func: Callable[..., Any], args: list[Any], *, spread: bool = False) -> Any:
    try:
        return func(*args) if spread else func(args)
    except Exception as exc:
        raise NotTrusted from exc


def _line_offsets(data: bytes) -> list[int]:
    offsets = [0]
    for line in data.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def _span(node: ast.AST, offsets: list[int]) -> tuple[int, int]:
    """Byte offsets of ``node`` in the UTF-8 source (``col_offset`` counts UTF-8 bytes)."""
    return (offsets[node.lineno - 1] + node.col_offset,  # type: ignore[attr-defined]
            offsets[node.end_lineno - 1] + node.end_col_offset)  # type: ignore[attr-defined]


# --- the child's value encoding (see _harness._encode) ------------------------------------------

_SCALARS: dict[str, Callable[[Any], Any]] = {
    "n": lambda _: None, "T": lambda _: True, "F": lambda _: False, "i": lambda v: int(v, 16),
    "f": float, "c": lambda v: complex(*(float(x) for x in v)), "s": str, "b": bytes.fromhex,
}


def decode(data: Any, depth: int = 0) -> Any:
    """The plain value the harness encoded as ``[tag, payload]``; raises ``ValueError`` on anything
    else (a forged or truncated record).  Builds parent-side builtins only."""
    if depth > _MAX_DEPTH or not isinstance(data, list) or len(data) != 2 or not isinstance(data[0], str):
        raise ValueError("malformed value")
    tag, payload = data
    if tag in _SCALARS:
        try:
            value = _SCALARS[tag](payload)
        except (TypeError, ValueError) as exc:
            raise ValueError("malformed value") from exc
        if tag == "s" and not isinstance(payload, str):
            raise ValueError("malformed value")
        return value
    if not isinstance(payload, list):
        raise ValueError("malformed value")
    if tag == "d":
        try:
            return {decode(k, depth + 1): decode(v, depth + 1) for k, v in payload}
        except TypeError as exc:
            raise ValueError("malformed value") from exc
    items = [decode(item, depth + 1) for item in payload]
    kinds: dict[str, Callable[[list[Any]], Any]] = {"l": list, "t": tuple, "S": set, "Z": frozenset}
    if tag not in kinds:
        raise ValueError("malformed value")
    try:
        return kinds[tag](items)
    except TypeError as exc:  # an unhashable set member
        raise ValueError("malformed value") from exc


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
