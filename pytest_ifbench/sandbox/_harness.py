"""Child side, step 2: run the candidate code and report over the result pipe.

Runs inside the sandboxed child only (loaded by :mod:`._bootstrap`, after
:mod:`._confine` has locked the process down), so it imports only the standard
library -- never ``pytest_ifbench``.  :func:`main` reads the job description
(JSON, from an inherited unlinked temporary file), confines the process, puts
the working directory first on ``sys.path`` and runs one of two modes:

* ``"script"`` -- the candidate file runs as ``__main__`` the way ``python
  main.py`` would run it; an uncaught exception prints a trimmed traceback and
  exits with status 1, ``SystemExit`` behaves as usual.
* ``"tests"`` -- ``setup`` then the candidate code are loaded once into a
  module named ``solution``; each assert-style test snippet then runs in a
  shallow copy of that namespace under its own ``setitimer`` time slice, with
  ``assert a <op> b`` rewritten to report both values.

Records go to the dedicated result pipe, one JSON object per line, each
stamped with the per-run random token the parent chose, so nothing the
candidate prints (or writes to guessed file descriptors) can forge a verdict:
``{"kind": "start", "step": ...}``, ``{"kind": "load", "error": ...}``,
``{"kind": "test", "name": ..., "passed": ..., "message": ...}``,
``{"kind": "limit", "limit": "timeout" | "cpu" | "memory"}`` and
``{"kind": "done"}``.  The parent-side reader is :mod:`._python`.

Frames of the child-side modules are cut from the tracebacks shown to users
(:func:`_trim_tb`), so messages point at the candidate's code only.
"""

import builtins
import json
import linecache
import os
import signal
import sys
import time
import traceback

# Bound once: candidate code replacing os.write / json.dumps cannot break reporting.
_write = os.write
_dumps = json.dumps
_mono = time.monotonic
_CHILD_DIR = os.path.dirname(os.path.abspath(__file__))
#: co_filename of every child-side module; their frames are hidden from tracebacks.
_HARNESS_FILES = frozenset(os.path.join(_CHILD_DIR, n) for n in ("_bootstrap.py", "_confine.py", "_harness.py"))


def _read_payload(fd):
    chunks = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            break
        chunks.append(b)
    os.close(fd)
    return json.loads(b"".join(chunks))


def _register_source(filename, source):
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def _is_harness(tb):
    return tb.tb_frame.f_code.co_filename in _HARNESS_FILES


def _trim_tb(tb):
    """Drop the harness frames around the candidate's frames."""
    while tb is not None and _is_harness(tb):
        tb = tb.tb_next
    cur = tb
    while cur is not None:
        nxt = cur.tb_next
        rest = nxt
        while rest is not None and _is_harness(rest):
            rest = rest.tb_next
        if nxt is not None and rest is None:
            cur.tb_next = None  # only harness frames (e.g. the audit hook) follow
            break
        cur = nxt
    return tb


def _clip(text, limit=4000):
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + "\n...[truncated]...\n" + text[-half:]


def _describe(exc, *, load=False):
    """Human text for an exception raised by candidate code or a test."""
    try:
        if isinstance(exc, SystemExit):
            what = "while loading" if load else "during the test"
            return f"SystemExit: {exc.code!r} (sys.exit()/exit() was called {what})"
        if isinstance(exc, KeyboardInterrupt):
            return "KeyboardInterrupt"
        head = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        if isinstance(exc, SyntaxError):
            return _clip(head)
        tb = _trim_tb(exc.__traceback__)
        if isinstance(exc, AssertionError) and (tb is None or tb.tb_next is None):
            return _clip(head)
        frames = traceback.format_tb(tb)[-4:] if tb is not None else []
        if not frames:
            return _clip(head)
        return _clip(head + "\nTraceback (most recent call last, innermost frames):\n"
                     + "".join(frames).rstrip())
    except BaseException:
        try:
            return type(exc).__name__
        except BaseException:
            return "exception"


def _short_repr(value, limit=300):
    try:
        text = repr(value)
    except BaseException as e:
        text = f"<repr failed: {type(e).__name__}>"
    if len(text) > limit:
        text = text[:limit] + "..."
    return text


def _assert_fail(src, left, right):
    return AssertionError(f"assert {src}\n  left:  {_short_repr(left)}\n  right: {_short_repr(right)}")


def _make_rewriter():
    import ast

    class Rewriter(ast.NodeTransformer):
        """`assert a <op> b` -> evaluate a and b once, report both values."""

        def visit_Assert(self, node):
            if node.msg is not None:
                return node
            try:
                src = ast.unparse(node.test)
            except Exception:
                return node
            if len(src) > 300:
                src = src[:300] + "..."
            t = node.test
            if isinstance(t, ast.Compare) and len(t.ops) == 1:
                def name(ctx, n):
                    return ast.Name(id=n, ctx=ctx)
                L, R = "_ifb_left_", "_ifb_right_"
                stmts = [
                    ast.Assign(targets=[name(ast.Store(), L)], value=t.left),
                    ast.Assign(targets=[name(ast.Store(), R)], value=t.comparators[0]),
                    ast.If(
                        test=ast.UnaryOp(op=ast.Not(), operand=ast.Compare(
                            left=name(ast.Load(), L), ops=t.ops,
                            comparators=[name(ast.Load(), R)])),
                        body=[ast.Raise(exc=ast.Call(
                            func=name(ast.Load(), "_ifb_assert_fail_"),
                            args=[ast.Constant(src), name(ast.Load(), L), name(ast.Load(), R)],
                            keywords=[]), cause=None)],
                        orelse=[]),
                ]
                out = []
                for s in stmts:
                    ast.copy_location(s, node)
                    out.append(ast.fix_missing_locations(s))
                return out
            node.msg = ast.copy_location(ast.Constant("assert " + src), node)
            return node

    def compile_test(source, filename):
        tree = ast.parse(source, filename)
        tree = Rewriter().visit(tree)
        ast.fix_missing_locations(tree)
        return compile(tree, filename, "exec", dont_inherit=True)

    return compile_test


_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_SEQUENCES = ((list, "l"), (tuple, "t"), (set, "S"), (frozenset, "Z"))
_MAX_ITEMS = 200_000


class _NotPlain(Exception):
    pass


def _encode(value, depth=0, budget=None):
    """``[tag, payload]`` JSON for a plain value (see ``_checks.decode``).  Exact types only; a subclass
    of a built-in container or scalar, or an object offering ``tolist()`` (numpy) or ``__index__``, is
    converted first -- whatever it converts to, the parent compares it with a value this process never
    sees.  Anything else raises :class:`_NotPlain`."""
    if budget is None:
        budget = [_MAX_ITEMS]
    budget[0] -= 1
    if depth > 100 or budget[0] < 0:
        raise _NotPlain("the value is too deep or too large to compare")
    t = type(value)
    if value is None:
        return ["n", 0]
    if t is bool:
        return ["T" if value else "F", 0]
    if t is int:
        return ["i", hex(value)]
    if t is float:
        return ["f", repr(value)]
    if t is complex:
        return ["c", [repr(value.real), repr(value.imag)]]
    if t is str:
        return ["s", value]
    if t is bytes:
        return ["b", value.hex()]
    for kind, tag in _SEQUENCES:
        if t is kind:
            return [tag, [_encode(v, depth + 1, budget) for v in value]]
    if t is dict:
        return ["d", [[_encode(k, depth + 1, budget), _encode(v, depth + 1, budget)] for k, v in value.items()]]
    for base in (*_PLAIN[1:], list, tuple, set, frozenset, dict):
        if isinstance(value, base):
            return _encode(base(value), depth + 1, budget)
    convert = getattr(value, "tolist", None) or getattr(value, "__index__", None)
    if callable(convert):
        converted = convert()
        if type(converted) is not t:
            return _encode(converted, depth + 1, budget)
    raise _NotPlain(f"a {t.__name__} object is not plain data")


#: The built-ins as they were before any candidate code ran (this module loads first): every test
#: runs with a copy of them, so ``builtins.sorted = ...`` in the candidate cannot change what a test
#: computes, and ``_bool`` decides truth checks.
_PRISTINE_BUILTINS = dict(builtins.__dict__)
_bool = bool


def _pristine_builtins():
    """Put back every original built-in the candidate replaced (names it added stay) and return a
    private copy for one test's namespace, which later patching of the module cannot reach."""
    current = builtins.__dict__
    for key, value in _PRISTINE_BUILTINS.items():
        if current.get(key) is not value:
            current[key] = value
    return dict(current)


def _make_check(name, report):
    """The ``_ifb_check_`` of one test: report the value the parent will judge (see ``_checks``).
    A truth check (``truth=True``) reports ``bool(value)``, computed here as Python would, so any
    truthy object passes ``assert x`` as it does outside the sandbox."""
    def check(index, value, message=None, truth=False):
        if truth:
            try:
                value = _bool(value)
            except BaseException as e:
                report(kind="check", step=name, k=index, error=_clip(f"{type(e).__name__}: {e}", 1500))
                return
        text = ""
        if message is not None:
            try:
                text = _clip(str(message()), 1500)
            except BaseException:
                text = ""
        try:
            report(kind="check", step=name, k=index, value=_encode(value), message=text)
        except _NotPlain as e:
            report(kind="check", step=name, k=index, error=f"{e}: the sandbox compares only plain data "
                   "(None, bool, numbers, str, bytes and lists/tuples/sets/dicts of them)")
        except (RecursionError, MemoryError, ValueError, TypeError) as e:
            report(kind="check", step=name, k=index, error=f"the value could not be reported ({type(e).__name__})")
    return check


def _write_files(workdir, files):
    import base64
    for rel, b64 in files.items():
        target = os.path.join(workdir, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as fh:
            fh.write(base64.b64decode(b64))


def _print_exception(exc):
    try:
        tb = _trim_tb(exc.__traceback__)
        exc.__traceback__ = tb
        sys.excepthook(type(exc), exc, tb)
    except BaseException:
        try:
            traceback.print_exception(type(exc), exc, exc.__traceback__)
        except BaseException:
            pass


def _flush_std():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:
            pass


def _run_script(P, report):
    main = sys.modules["__main__"]
    g = main.__dict__
    keep = ("__name__", "__doc__", "__builtins__", "__loader__", "__spec__", "__package__")
    for k in list(g):
        if k not in keep:
            del g[k]
    # What ``python -c`` gives __main__ (the harness used to be started that
    # way), not the bootstrap script's own docstring and loader.
    g["__doc__"] = None
    g["__loader__"] = getattr(sys.modules.get("_frozen_importlib"), "BuiltinImporter", None)
    g["__builtins__"] = builtins
    path, source = P["path"], P["source"]
    g["__file__"] = path
    g["__cached__"] = None
    sys.argv[:] = [path]
    _register_source(path, source)
    try:
        code = compile(source, path, "exec", dont_inherit=True)
    except BaseException as e:
        msg = _describe(e, load=True)
        report(kind="load", error=msg)
        if isinstance(e, MemoryError):
            report(kind="limit", limit="memory")
        _print_exception(e)
        _flush_std()
        os._exit(1)
    report(kind="load", error=None)
    try:
        exec(code, g)
    except SystemExit:
        raise
    except BaseException as e:
        if isinstance(e, MemoryError):
            report(kind="limit", limit="memory")
        _print_exception(e)
        raise SystemExit(1) from None


class _Timeout(BaseException):
    pass


class _CpuLimit(BaseException):
    pass


def _run_tests(P, report):
    import types
    compile_test = _make_rewriter()
    tests = P["tests"]
    setup = P["setup"]
    code_src = P["code"]
    T = float(P["timeout"])
    margin = min(0.3, 0.1 * T)
    deadline = float(P["deadline"]) - margin  # CLOCK_MONOTONIC is system-wide: the parent's clock
    state = {"armed": False, "cpu": False}

    def on_alarm(signum, frame):
        if state["armed"]:
            raise _Timeout()

    def on_xcpu(signum, frame):
        state["cpu"] = True
        if state["armed"]:
            raise _CpuLimit()

    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGXCPU, on_xcpu)

    def time_slice(steps_after):
        remaining = deadline - _mono()
        if remaining <= 0.005:
            return 0.0
        reserve = min(1.0, remaining / (2 * (steps_after + 1)))
        return max(remaining - steps_after * reserve, 0.005)

    def run_step(fn, seconds, load=False):
        """-> (ok, message, limit)"""
        if seconds <= 0:
            return False, "timeout: no time left in the overall time budget", "timeout"
        try:
            state["armed"] = True
            signal.setitimer(signal.ITIMER_REAL, seconds, 0.05)
            try:
                fn()
                return True, "", None
            except (_Timeout, _CpuLimit):
                raise
            except BaseException as e:
                # formatted while the timer is still armed: str()/repr() of a
                # candidate's exception may itself misbehave.
                return (False, _describe(e, load=load),
                        "memory" if isinstance(e, MemoryError) else None)
            finally:
                state["armed"] = False
                signal.setitimer(signal.ITIMER_REAL, 0, 0)
        except _Timeout:
            return False, f"timeout: did not finish within its {seconds:.2f} s time slice", "timeout"
        except _CpuLimit:
            return False, "CPU time limit exceeded", "cpu"

    mod = types.ModuleType("solution")
    sys.modules["solution"] = mod
    ns = mod.__dict__
    ns["__builtins__"] = builtins

    def load():
        if setup:
            _register_source("<setup>", setup)
            try:
                exec(compile(setup, "<setup>", "exec", dont_inherit=True), ns)
            except BaseException as e:
                if hasattr(e, "add_note"):
                    e.add_note("(raised by the test setup code, not by the candidate code)")
                raise
        _register_source("<solution>", code_src)
        exec(compile(code_src, "<solution>", "exec", dont_inherit=True), ns)

    report(kind="start", step="load")
    ok, msg, lim = run_step(load, time_slice(len(tests)), load=True)
    if lim:
        report(kind="limit", limit=lim)
    report(kind="load", error=None if ok else msg)
    if ok:
        for i, src in enumerate(tests):
            name = f"test_{i}"
            filename = f"<{name}>"

            check = _make_check(name, report)

            def one(src=src, filename=filename, check=check):
                _register_source(filename, src)
                code = compile_test(src, filename)
                tns = dict(ns)
                tns["__builtins__"] = _pristine_builtins()
                tns["_ifb_assert_fail_"] = _assert_fail
                tns["_ifb_check_"] = check
                exec(code, tns)

            report(kind="start", step=name)
            ok_t, msg_t, lim_t = run_step(one, time_slice(len(tests) - i - 1))
            if lim_t:
                report(kind="limit", limit=lim_t)
            report(kind="test", name=name, passed=ok_t, message=msg_t)
    if state["cpu"]:
        report(kind="limit", limit="cpu")
    report(kind="done")
    _flush_std()
    os._exit(0)


def main(payload_fd, report_fd, confine):
    """Read the job from ``payload_fd``, confine the process with
    ``confine(limits, workdir)``, run the job, report on ``report_fd``.

    In script mode this returns normally or raises ``SystemExit`` (the
    candidate's exit status); in tests mode it ends with ``os._exit(0)``."""
    P = _read_payload(payload_fd)
    token = P["token"]

    def report(**rec):
        rec["t"] = token
        try:
            data = (_dumps(rec) + "\n").encode("utf-8", "replace")
        except BaseException:
            return
        try:
            while data:
                n = _write(report_fd, data)
                data = data[n:]
        except BaseException:
            pass

    _write_files(P["workdir"], P.get("files") or {})
    if P["mode"] == "script":
        P["path"] = os.path.join(P["workdir"], P["script_name"])
        with open(P["path"], "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write(P["source"])
    confine(P["limits"], P["writable"])
    if P["workdir"] not in sys.path:
        sys.path.insert(0, P["workdir"])
    if P["mode"] == "script":
        _run_script(P, report)
    else:
        _run_tests(P, report)
