"""AST conversions take turns on CPython versions whose AST constructor is not thread-safe (gh-106905)."""

import subprocess
import sys
import textwrap

import pytest

from pytest_ifbench._ast_guard import needs_guard

_GUARD = """
import sys
if sys.argv[1] == "guarded":
    from pytest_ifbench import _ast_guard
    _ast_guard.install()
"""

#: Three threads parse while a fourth makes cyclic garbage whose finalizer yields the GIL: a collection
#: inside one parse lets another thread parse too. Prints how many parses failed.
_THREADS = _GUARD + textwrap.dedent("""
    import ast, gc, threading, time
    source = "\\n".join(f"x{i} = [a + b * c for a in range(3) if f(g(h(a)))]" for i in range(300))

    class Yields:
        def __del__(self):
            time.sleep(0)

    stop = False
    def churn():
        while not stop:
            garbage = Yields()
            garbage.me = garbage
            time.sleep(0.0002)

    errors = []
    def parse():
        for _ in range(3):
            try:
                ast.parse(source)
            except SystemError as exc:
                errors.append(exc)

    gc.set_threshold(20, 1, 1)
    churner = threading.Thread(target=churn)
    churner.start()
    parsers = [threading.Thread(target=parse) for _ in range(3)]
    for thread in parsers:
        thread.start()
    for thread in parsers:
        thread.join()
    stop = True
    churner.join()
    print(len(errors))
""")

#: One thread: a finalizer parses (as the traceback module does for pytest's unraisable-exception hook)
#: while a collection runs in the middle of a parse. Prints how many parses failed.
_FINALIZER = _GUARD + textwrap.dedent("""
    import ast, gc

    left = 2000

    # Cyclic garbage whose finalizer parses a line and leaves the next such garbage behind, so that
    # every collection (some happen in the middle of a parse) finds one.
    class Parses:
        def __del__(self):
            global left
            try:
                ast.parse("a + b")
            except SyntaxError:
                pass  # what the traceback module and pytest do with a line they cannot parse
            if left > 0:
                left -= 1
                garbage = Parses()
                garbage.me = garbage

    source = "\\n".join(f"x{i} = [a + b * c for a in range(3) if f(g(h(a)))]" for i in range(300))
    gc.set_threshold(20, 1, 1)
    garbage = Parses()
    garbage.me = garbage
    del garbage
    errors = 0
    for _ in range(20):
        try:
            ast.parse(source)
        except SystemError:
            errors += 1
    print(errors)
""")


def _failed_parses(script: str, mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", script, mode], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


@pytest.mark.parametrize(("version", "guarded"), [
    ((3, 10, 14), False), ((3, 11, 0), True), ((3, 11, 7), True), ((3, 11, 8), False),
    ((3, 12, 1), True), ((3, 12, 2), False), ((3, 13, 0), False)])
def test_versions_with_the_shared_counter(version, guarded):
    assert needs_guard(version) is guarded


@pytest.mark.skipif(not needs_guard(), reason="this CPython's AST constructor is thread-safe")
@pytest.mark.parametrize("script", [_THREADS, _FINALIZER], ids=["threads", "finalizer"])
def test_the_race_is_real_here_and_the_guard_removes_it(script):
    assert any(_failed_parses(script, "bare") for _ in range(3))  # the bug, on this interpreter
    assert _failed_parses(script, "guarded") == 0


def test_the_plugin_installs_the_guard_where_needed():
    import builtins

    import pytest_ifbench._plugin  # noqa: F401

    assert getattr(builtins.compile, "_ifbench_guarded", False) is needs_guard()


@pytest.mark.skipif(not needs_guard(), reason="this CPython's AST constructor is thread-safe")
def test_plain_compiles_and_parses_behave_as_before():
    import ast

    assert eval(compile("1 + 2", "<x>", "eval")) == 3
    tree = ast.parse("a = 1")
    assert isinstance(tree, ast.Module)
    namespace: dict = {}
    exec(compile(tree, "<x>", "exec"), namespace)
    assert namespace["a"] == 1
    with pytest.raises(SyntaxError):
        ast.parse("a = ")
