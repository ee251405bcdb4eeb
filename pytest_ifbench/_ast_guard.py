"""AST conversions take turns on the CPython versions whose AST constructor is not thread-safe.

CPython 3.11.0–3.11.7 and 3.12.0–3.12.1 count the depth of the tree being converted (source to
``ast`` objects and back) in one per-interpreter counter (gh-106905; fixed by python/cpython#113476
in 3.11.8 and #113472 in 3.12.2). A second conversion that starts while one is in progress -- on
another thread, or on the same thread from a finalizer that a garbage collection runs in the middle of
the first -- resets that counter, and the first ends in ``SystemError: AST constructor recursion
depth mismatch``. A run here has the ingredients: the background generation thread, litellm's logging
worker and the test stub's server thread beside the main thread; pytest parses source to lay out a
failure's traceback; Python 3.11's traceback module parses each line to place its ``^^^^`` markers, and
pytest's unraisable-exception hook formats a traceback from inside a finalizer.  Clean-clone CI runs
ended in INTERNALERRORs this way twice while pytest reported an instance's setup error.

:func:`install` wraps the builtin :func:`compile` (which :func:`ast.parse` calls) so that conversions
(``PyCF_ONLY_AST``, or an ``ast`` tree as the source) hold one process-wide lock; a conversion asked
for on a thread that is already inside one (a finalizer) raises :class:`SyntaxError` instead of
corrupting the outer one -- both pytest and the traceback module treat that as "no layout for this
line" and carry on.  Compiling source to code objects is untouched. Elsewhere :func:`install` does
nothing.
"""

from __future__ import annotations

import ast
import builtins
import sys
import threading
from typing import Any


def needs_guard(version: tuple[int, ...] = tuple(sys.version_info[:3])) -> bool:
    """Whether ``version`` of CPython has the shared AST recursion counter."""
    return (3, 11, 0) <= version < (3, 11, 8) or (3, 12, 0) <= version < (3, 12, 2)


def install() -> None:
    """Replace :func:`builtins.compile` by the guarded one, once, where :func:`needs_guard`."""
    if not needs_guard() or getattr(builtins.compile, "_ifbench_guarded", False):
        return
    unguarded = builtins.compile
    lock = threading.Lock()
    inside = threading.local()

    def compile(source: Any, filename: Any, mode: str, flags: int = 0, dont_inherit: bool = False,
                optimize: int = -1, **kwargs: Any) -> Any:
        if not (flags & ast.PyCF_ONLY_AST or isinstance(source, ast.AST)):
            return unguarded(source, filename, mode, flags, dont_inherit, optimize, **kwargs)
        if getattr(inside, "converting", False):
            raise SyntaxError("an AST conversion inside another on this thread (CPython gh-106905); skipped")
        with lock:
            inside.converting = True
            try:
                return unguarded(source, filename, mode, flags, dont_inherit, optimize, **kwargs)
            finally:
                inside.converting = False

    compile.__doc__ = unguarded.__doc__
    compile._ifbench_guarded = True  # type: ignore[attr-defined]
    builtins.compile = compile
