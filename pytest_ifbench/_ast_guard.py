"""One lock around :func:`ast.parse` on the CPython versions whose AST constructor is not thread-safe.

CPython 3.11.0–3.11.7 and 3.12.0–3.12.1 count the depth of the tree being built in one per-interpreter
counter (gh-106905, fixed by python/cpython#113476 in 3.11.8 and #113472 in 3.12.2). When a garbage
collection inside one ``ast.parse`` lets another thread run a second ``ast.parse``, the first ends in
``SystemError: AST constructor recursion depth mismatch``. A run here has such threads: the background
generation thread, a stub server's thread in the tests, litellm's logging worker; and both sides parse
routinely, since pytest parses source to lay out a failure's traceback and Python 3.11's own traceback
module parses each line to place its ``^^^^`` markers. A clean-clone CI run ended in an INTERNALERROR this
way while pytest reported an instance's setup error. Holding one re-entrant lock for each parse makes the
conversions take turns; elsewhere :func:`install` does nothing.
"""

from __future__ import annotations

import ast
import sys
import threading
from typing import Any


def needs_guard(version: tuple[int, ...] = tuple(sys.version_info[:3])) -> bool:
    """Whether ``version`` of CPython has the shared AST recursion counter."""
    return (3, 11, 0) <= version < (3, 11, 8) or (3, 12, 0) <= version < (3, 12, 2)


def install() -> None:
    """Wrap :func:`ast.parse` in one process-wide re-entrant lock, once, where :func:`needs_guard`."""
    if not needs_guard() or getattr(ast.parse, "_ifbench_guarded", False):
        return
    unguarded = ast.parse
    lock = threading.RLock()

    def parse(*args: Any, **kwargs: Any) -> ast.AST:
        with lock:
            return unguarded(*args, **kwargs)

    parse.__doc__ = unguarded.__doc__
    parse._ifbench_guarded = True  # type: ignore[attr-defined]
    ast.parse = parse
