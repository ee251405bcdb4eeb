"""Run model-written code in a separate, resource-limited child process.

Nothing here ever executes candidate code inside the calling (pytest) process.
Every call starts a fresh child interpreter with:

* a wall-clock timeout enforced by the parent, which then kills the child's
  whole process group (the child gets its own session, ``start_new_session``);
* ``RLIMIT_CPU`` / ``RLIMIT_AS`` / ``RLIMIT_FSIZE`` limits, ``RLIMIT_CORE`` = 0;
* a throwaway temporary working directory (also ``HOME`` and ``TMPDIR``),
  deleted afterwards;
* a minimal environment built from scratch (no variable of the parent, so no
  ``*_KEY`` / ``*_TOKEN`` leaks);
* an isolated interpreter: ``-s -P`` (no user site-packages, no script/cwd
  directory on ``sys.path``) and ``-B``.  This is ``python -I`` minus ``-E``:
  ``-I`` would make the interpreter ignore ``PYTHONHASHSEED=0`` and hashing
  would be randomised.  ``-E`` buys nothing here because the environment is
  constructed by us;
* stdin fed from a string, stdout/stderr captured and capped;
* an audit hook (``sys.addaudithook``), installed by a small bootstrap before
  the candidate code runs, that refuses network access, process creation
  (unless ``allow_subprocess``), ``ctypes`` symbol look-ups (unless
  ``allow_subprocess``), raising resource limits, signalling processes outside
  the child's own process group, and writing files outside the working
  directory;
* where available (x86-64 / aarch64 Linux, ``allow_subprocess=False``) a
  seccomp filter that makes ``fork``/``clone`` (non-thread) / ``execve`` fail
  with ``EPERM`` at the kernel level;
* when ``unshare --net true`` works on this machine (probed once and cached),
  the child runs under ``unshare --net``: an empty network namespace.

Results of the test harness come back through a dedicated pipe (``pass_fds``),
never through stdout, so candidate code printing or closing stdout cannot
corrupt the report.  Every record carries a random per-run token.

This is defence in depth against *accidents and casual misbehaviour* of model
code, not a hardened security boundary: the child runs as the same user as the
caller (possibly root) and audit hooks can be subverted by determined
in-process code (PEP 578 says so explicitly).  The kernel-level layers (network
namespace, seccomp, rlimits, process-group kill) are the parts that hold
against adversarial code.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

__all__ = [
    "SandboxLimits",
    "SandboxResult",
    "TestOutcome",
    "TestRun",
    "network_namespace_available",
    "run_assert_tests",
    "run_python",
    "run_stdio_tests",
]


# --------------------------------------------------------------------------
# Public data types
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxLimits:
    """Resource limits for one sandboxed child process.

    * ``timeout`` -- wall-clock seconds for the whole child (startup included).
      When exceeded the child's whole process group is SIGKILLed and the
      result's ``limit`` is ``"timeout"``.  In :func:`run_assert_tests` each
      test additionally gets a time slice of this budget (see there).
    * ``cpu_seconds`` -- ``RLIMIT_CPU`` soft limit (hard limit = soft + 2 s).
    * ``memory_mb`` -- ``RLIMIT_AS`` (address space); allocations beyond it raise
      ``MemoryError`` in the child.
    * ``file_size_mb`` -- ``RLIMIT_FSIZE``; larger writes fail with ``EFBIG``.
    * ``max_output_bytes`` -- cap applied to stdout and to stderr separately;
      when a stream exceeds it the child is killed, the stream is truncated to
      the cap and ``limit`` is ``"output"``.
    * ``allow_subprocess`` -- when False (default) the child may not fork,
      exec, spawn or use ``subprocess``/``os.system``/``pty`` (audit hook plus
      seccomp where available).  When True only the kernel-level guarantees
      (network namespace, rlimits, group kill) apply to grand-children.
    """

    timeout: float = 10.0
    cpu_seconds: int = 10
    memory_mb: int = 1024
    file_size_mb: int = 16
    max_output_bytes: int = 200_000
    allow_subprocess: bool = False

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise ValueError("SandboxLimits.timeout must be > 0")
        for name in ("cpu_seconds", "memory_mb", "file_size_mb", "max_output_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"SandboxLimits.{name} must be > 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxResult:
    """Outcome of one child process.

    * ``returncode`` -- the child's exit status (negative signal number when it
      died from a signal, e.g. ``-24`` for SIGXCPU); ``None`` when the sandbox
      itself killed the child because of the wall-clock timeout or the output
      cap (there is no meaningful exit status then).
    * ``stdout`` / ``stderr`` -- decoded as UTF-8 (invalid bytes replaced),
      each truncated to ``max_output_bytes`` bytes.
    * ``duration`` -- wall-clock seconds from process start to reaping.
    * ``limit`` -- ``None``, or which limit ended/affected the run:
      ``"timeout"`` (wall clock, or a per-test time slice in
      :func:`run_assert_tests`), ``"cpu"``, ``"memory"`` (a ``MemoryError``
      escaped the candidate code) or ``"output"``.
    """

    returncode: int | None
    stdout: str
    stderr: str
    duration: float
    limit: str | None

    @property
    def ok(self) -> bool:
        """True iff the process exited with status 0 and no limit was hit."""
        return self.returncode == 0 and self.limit is None


@dataclass(frozen=True, slots=True, kw_only=True)
class TestOutcome:
    """Result of one test.

    ``name`` is ``"test_<i>"`` for assert tests and ``"case_<i>"`` for stdio
    cases (``i`` = index in the given sequence).  ``message`` is ``""`` when the
    test passed, otherwise the assertion text (with left/right values for
    simple comparisons), a traceback tail, an expected-vs-got diff, or why the
    test did not run.
    """

    __test__ = False  # not a pytest test class

    name: str
    passed: bool
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TestRun:
    """Outcomes of a test run plus the underlying process result.

    ``load_error`` is set when the candidate code itself failed to run
    (SyntaxError, exception or ``SystemExit`` while loading, process death
    during loading); the tests are then all reported as failed/not run.
    """

    __test__ = False  # not a pytest test class

    outcomes: tuple[TestOutcome, ...]
    load_error: str | None
    result: SandboxResult

    @property
    def passed(self) -> bool:
        """True iff the code loaded, no limit was hit, there is at least one
        outcome and every outcome passed."""
        return (
            self.load_error is None
            and self.result.limit is None
            and bool(self.outcomes)
            and all(o.passed for o in self.outcomes)
        )

    def summary(self) -> str:
        """Short one-line human description, e.g.
        ``"3/4 tests passed; test_2: AssertionError: ..."``."""
        if self.load_error is not None:
            text = f"load error: {_last_line(self.load_error)}"
            if self.result.limit:
                text += f" (limit: {self.result.limit})"
            return text
        total = len(self.outcomes)
        if total == 0:
            return "no tests were run"
        good = sum(o.passed for o in self.outcomes)
        text = f"{good}/{total} tests passed"
        if self.result.limit:
            text += f" (limit: {self.result.limit})"
        failing = [o for o in self.outcomes if not o.passed]
        if failing:
            first = failing[0]
            msg = _first_line(first.message)
            if len(msg) > 200:
                msg = msg[:197] + "..."
            text += f"; {first.name}: {msg}"
            if len(failing) > 1:
                text += f" (+{len(failing) - 1} more failing)"
        return text


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return text.strip()


def _last_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return text.strip()


# --------------------------------------------------------------------------
# The code that runs inside the child
# --------------------------------------------------------------------------

# Executed by a tiny ``-c`` stub in a namespace with a *private copy* of the
# builtins, so that candidate code monkeypatching ``builtins`` does not break
# the harness.  argv: [-c, payload_fd, report_fd].
_HARNESS = r'''
import os, sys, json, signal, resource, time, traceback, linecache, builtins

_write = os.write
_dumps = json.dumps
_mono = time.monotonic
_HARNESS_FILES = ("<string>", "<ifbench-harness>")


def _read_payload(fd):
    chunks = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            break
        chunks.append(b)
    os.close(fd)
    return json.loads(b"".join(chunks))


def _set_limits(lim):
    R = resource
    inf = R.RLIM_INFINITY

    def setl(which, soft, hard):
        try:
            cur_soft, cur_hard = R.getrlimit(which)
            if cur_hard != inf:
                hard = min(hard, cur_hard)
            soft = min(soft, hard)
            R.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            pass

    cpu = int(lim["cpu_seconds"])
    setl(R.RLIMIT_CPU, cpu, cpu + 2)
    setl(R.RLIMIT_FSIZE, int(lim["file_size_mb"]) << 20, int(lim["file_size_mb"]) << 20)
    setl(R.RLIMIT_CORE, 0, 0)
    setl(R.RLIMIT_AS, int(lim["memory_mb"]) << 20, int(lim["memory_mb"]) << 20)
    try:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of death
    except (ValueError, OSError):
        pass


def _install_seccomp():
    """Kernel-level ban on fork/vfork/clone (except threads)/clone3/execve."""
    machine = os.uname().machine
    if machine == "x86_64":
        arch, deny, clone, x32 = 0xC000003E, (57, 58, 59, 322), 56, True
    elif machine == "aarch64":
        arch, deny, clone, x32 = 0xC00000B7, (221, 281), 220, False
    else:
        return False
    try:
        import ctypes
    except ImportError:
        return False
    LD, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
    ALLOW, EPERM, ENOSYS = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    ins = []

    def op(code, k, jt=None, jf=None):
        ins.append([code, jt, jf, k])

    op(LD, 4)                            # seccomp_data.arch
    op(JEQ, arch, None, "deny")
    op(LD, 0)                            # seccomp_data.nr
    if x32:
        op(JGE, 0x40000000, "deny", None)
    for nr in deny:
        op(JEQ, nr, "deny", None)
    op(JEQ, 435, "enosys", None)         # clone3 -> glibc falls back to clone
    op(JEQ, clone, None, "allow")
    op(LD, 16)                           # args[0] (flags), low 32 bits
    op(JSET, 0x00010000, "allow", "deny")  # CLONE_THREAD
    labels = {"allow": len(ins), "deny": len(ins) + 1, "enosys": len(ins) + 2}
    op(RET, ALLOW)
    op(RET, EPERM)
    op(RET, ENOSYS)

    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte),
                    ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    arr = (SockFilter * len(ins))()
    for i, (code, jt, jf, k) in enumerate(ins):
        arr[i].code = code
        arr[i].jt = 0 if jt is None else labels[jt] - i - 1
        arr[i].jf = 0 if jf is None else labels[jf] - i - 1
        arr[i].k = k
    prog = SockFprog(len(ins), arr)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
        ul = ctypes.c_ulong
        if prctl(38, ul(1), ul(0), ul(0), ul(0)) != 0:      # PR_SET_NO_NEW_PRIVS
            return False
        if prctl(22, ul(2), ctypes.byref(prog), ul(0), ul(0)) != 0:  # SECCOMP_MODE_FILTER
            return False
    except Exception:
        return False
    return True


def _install_hook(allow_subprocess, workdir):
    o = os
    realpath, join, split, isabs = o.path.realpath, o.path.join, o.path.split, o.path.isabs
    fsdecode, fspath, getcwd, readlink = o.fsdecode, o.fspath, o.getcwd, o.readlink
    getpid, getpgrp, getpgid = o.getpid, o.getpgrp, o.getpgid
    NET = frozenset({
        "socket.connect", "socket.bind", "socket.getaddrinfo", "socket.sendto",
        "socket.sendmsg", "socket.gethostbyname", "socket.gethostbyname_ex",
        "socket.gethostbyaddr", "socket.getnameinfo",
    })
    PROC = frozenset() if allow_subprocess else frozenset({
        "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec",
        "os.system", "subprocess.Popen", "pty.spawn", "os.startfile",
        "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.cdata",
    })
    LIMITS = frozenset({"resource.setrlimit", "resource.prlimit"})
    # event -> ((path_index, dir_fd_index), ...), follow_symlinks
    WRITES = {
        "os.remove": (((0, 1),), False), "os.rmdir": (((0, 1),), False),
        "os.mkdir": (((0, 2),), False), "os.rename": (((0, 2), (1, 3)), False),
        "os.link": (((1, 3),), False), "os.symlink": (((1, 2),), False),
        "os.chmod": (((0, 2),), True), "os.chown": (((0, 3),), True),
        "os.utime": (((0, 3),), True), "os.truncate": (((0, None),), True),
        "os.setxattr": (((0, None),), True), "os.removexattr": (((0, None),), True),
    }
    W = realpath(workdir)
    WS = W.rstrip("/") + "/"
    DEV_OK = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
    WFLAGS = o.O_WRONLY | o.O_RDWR | o.O_CREAT | o.O_TRUNC | o.O_APPEND
    busy = [False]

    def outside(path, dir_fd, follow):
        if isinstance(path, int):
            return False                      # an already open fd
        p = fsdecode(fspath(path))
        if isinstance(dir_fd, int) and dir_fd >= 0 and not isabs(p):
            base = readlink("/proc/self/fd/%d" % dir_fd)
        else:
            base = getcwd()
        full = join(base, p)
        if follow:
            r = realpath(full)
        else:
            head, tail = split(full.rstrip("/") or "/")
            r = join(realpath(head), tail)
        return not (r == W or r.startswith(WS) or r in DEV_OK)

    def deny_write(event, path):
        raise PermissionError(
            "sandbox: writing outside the working directory is not allowed "
            "(%s %r)" % (event, path))

    def hook(event, args):
        if event in NET:
            raise PermissionError("sandbox: network access is disabled (%s)" % event)
        if event in PROC:
            raise PermissionError("sandbox: creating processes is disabled (%s)" % event)
        if event in LIMITS:
            raise PermissionError("sandbox: changing resource limits is not allowed")
        if busy[0]:
            return
        if event == "open":
            path, mode, flags = args
            if isinstance(flags, int):
                writing = bool(flags & WFLAGS)
            else:
                writing = isinstance(mode, str) and any(c in mode for c in "wax+")
            if not writing or path is None:
                return
            busy[0] = True
            try:
                bad = outside(path, None, True)
            except Exception:
                bad = True
            finally:
                busy[0] = False
            if bad:
                deny_write(event, path)
        elif event in WRITES:
            spec, follow = WRITES[event]
            busy[0] = True
            try:
                bad = None
                for pi, di in spec:
                    path = args[pi]
                    dir_fd = args[di] if di is not None else None
                    try:
                        if outside(path, dir_fd, follow):
                            bad = path
                    except Exception:
                        bad = path
            finally:
                busy[0] = False
            if bad is not None:
                deny_write(event, bad)
        elif event == "os.kill":
            pid = args[0]
            if pid == 0 or pid == getpid():
                return
            try:
                ok = (pid > 0 and getpgid(pid) == getpgrp()) or (pid < -1 and -pid == getpgrp())
            except ProcessLookupError:
                ok = True
            except Exception:
                ok = False
            if not ok:
                raise PermissionError("sandbox: signalling other processes is not allowed")
        elif event == "os.killpg":
            if args[0] not in (0, getpgrp()):
                raise PermissionError("sandbox: signalling other processes is not allowed")

    sys.addaudithook(hook)


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
            return "SystemExit: %r (sys.exit()/exit() was called %s)" % (exc.code, what)
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
    except BaseException as e:  # noqa
        text = "<repr failed: %s>" % type(e).__name__
    if len(text) > limit:
        text = text[:limit] + "..."
    return text


def _assert_fail(src, left, right):
    return AssertionError("assert %s\n  left:  %s\n  right: %s"
                          % (src, _short_repr(left), _short_repr(right)))


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
    deadline = float(P["deadline"]) - margin
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
            return False, "timeout: did not finish within its %.2f s time slice" % seconds, "timeout"
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
            name = "test_%d" % i
            filename = "<%s>" % name

            def one(src=src, filename=filename):
                _register_source(filename, src)
                code = compile_test(src, filename)
                tns = dict(ns)
                tns["_ifb_assert_fail_"] = _assert_fail
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


def _main():
    payload_fd, report_fd = int(sys.argv[1]), int(sys.argv[2])
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

    lim = P["limits"]
    _set_limits(lim)
    if not lim["allow_subprocess"]:
        _install_seccomp()
    _install_hook(bool(lim["allow_subprocess"]), P["workdir"])
    if P["workdir"] not in sys.path:
        sys.path.insert(0, P["workdir"])
    if P["mode"] == "script":
        _run_script(P, report)
    else:
        _run_tests(P, report)


_main()
'''

_STUB = (
    "import builtins as _b\n"
    "exec(compile(" + repr(_HARNESS) + ", '<ifbench-harness>', 'exec'),"
    " {'__builtins__': dict(vars(_b)), '__name__': '__ifbench_harness__'})\n"
)

# == ``-I`` without ``-E`` (see the module docstring): keeps PYTHONHASHSEED=0
# effective.  ``-P`` needs Python 3.11, the project's minimum.
_PYTHON_FLAGS: tuple[str, ...] = ("-s", "-P", "-B")

_REPORT_CAP = 8 << 20  # bytes accepted on the report channel


# --------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------

_unshare_lock = threading.Lock()
_unshare_cache: list[tuple[str, ...]] = []


def network_namespace_available() -> bool:
    """Whether children run in an empty network namespace (``unshare --net``).

    Probed once per process (``unshare --net true``) and cached."""
    return bool(_unshare_prefix())


def _unshare_prefix() -> tuple[str, ...]:
    with _unshare_lock:
        if _unshare_cache:
            return _unshare_cache[0]
        prefix: tuple[str, ...] = ()
        exe = shutil.which("unshare") or next(
            (p for p in ("/usr/bin/unshare", "/bin/unshare") if os.access(p, os.X_OK)), None)
        if exe and sys.platform.startswith("linux"):
            candidates = [(exe, "--net")]
            if os.geteuid() != 0:
                candidates.append((exe, "--user", "--map-root-user", "--net"))
            for cand in candidates:
                try:
                    probe = subprocess.run(
                        [*cand, "true"], check=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, timeout=10, env=_base_env("/"))
                except (OSError, subprocess.SubprocessError):
                    continue
                if probe.returncode == 0:
                    prefix = cand
                    break
        _unshare_cache.append(prefix)
        return prefix


def _base_env(workdir: str) -> dict[str, str]:
    bindir = os.path.dirname(os.path.realpath(sys.executable))
    path = os.pathsep.join(dict.fromkeys([bindir, "/usr/local/bin", "/usr/bin", "/bin"]))
    return {
        "PATH": path,
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        # keep numeric libraries from spawning one thread per core (and from
        # reserving huge address space under RLIMIT_AS)
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


def _write_files(workdir: str, files: Mapping[str, str | bytes] | None) -> None:
    if not files:
        return
    for name, content in files.items():
        rel = os.path.normpath(str(name))
        if os.path.isabs(rel) or rel == "." or rel.split(os.sep)[0] == "..":
            raise ValueError(f"sandbox file name must be a relative path inside the work dir: {name!r}")
        target = os.path.join(workdir, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        with open(target, "wb") as fh:
            fh.write(data)


def _rmtree(path: str) -> None:
    def onerror(func, p, _exc):  # make it writable and retry once
        try:
            os.chmod(p, 0o700)
            parent = os.path.dirname(p)
            os.chmod(parent, 0o700)
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=onerror)
    if os.path.exists(path):
        shutil.rmtree(path, ignore_errors=True)


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _execute(
    payload: dict,
    *,
    stdin: str | None,
    files: Mapping[str, str | bytes] | None,
    limits: SandboxLimits,
    script_name: str | None = None,
) -> tuple[SandboxResult, list[dict]]:
    """Start one sandboxed child, supervise it, return (result, report records)."""
    token = os.urandom(16).hex()
    workdir = os.path.realpath(tempfile.mkdtemp(prefix="ifbench-sbx-"))
    try:
        _write_files(workdir, files)
        if script_name is not None:
            path = os.path.join(workdir, script_name)
            with open(path, "w", encoding="utf-8", errors="surrogatepass") as fh:
                fh.write(payload["source"])
            payload = {**payload, "path": path}
        start = time.monotonic()
        payload = {
            **payload,
            "token": token,
            "workdir": workdir,
            "timeout": limits.timeout,
            "deadline": start + limits.timeout,
            "limits": {
                "cpu_seconds": limits.cpu_seconds,
                "memory_mb": limits.memory_mb,
                "file_size_mb": limits.file_size_mb,
                "allow_subprocess": limits.allow_subprocess,
            },
        }
        return _supervise(payload, token, workdir, stdin, limits, start)
    finally:
        _rmtree(workdir)


def _supervise(payload, token, workdir, stdin, limits, start):
    cap = limits.max_output_bytes
    # Both temp files only need to live until Popen has inherited them.
    payload_file = tempfile.TemporaryFile()  # noqa: SIM115
    stdin_file = None
    report_r, report_w = os.pipe()
    proc = None
    try:
        payload_file.write(json.dumps(payload).encode("utf-8", "surrogatepass"))
        payload_file.flush()
        payload_file.seek(0)
        if stdin:
            stdin_file = tempfile.TemporaryFile()  # noqa: SIM115
            stdin_file.write(stdin.encode("utf-8", "surrogatepass"))
            stdin_file.flush()
            stdin_file.seek(0)
        cmd = [
            *_unshare_prefix(), sys.executable, *_PYTHON_FLAGS, "-c", _STUB,
            str(payload_file.fileno()), str(report_w),
        ]
        proc = subprocess.Popen(
            cmd,
            stdin=stdin_file if stdin_file is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workdir,
            env=_base_env(workdir),
            pass_fds=(payload_file.fileno(), report_w),
            close_fds=True,
            start_new_session=True,
        )
    except BaseException:
        os.close(report_r)
        raise
    finally:
        os.close(report_w)
        payload_file.close()
        if stdin_file is not None:
            stdin_file.close()

    pid = proc.pid
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    bufs = {out_fd: bytearray(), err_fd: bytearray(), report_r: bytearray()}
    caps = {out_fd: cap, err_fd: cap, report_r: _REPORT_CAP}
    open_fds = set(bufs)
    sel = selectors.DefaultSelector()
    for fd in bufs:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    pidfd = None
    try:
        pidfd = os.pidfd_open(pid)
        sel.register(pidfd, selectors.EVENT_READ)
    except (AttributeError, OSError):
        pidfd = None

    killed_for: str | None = None
    deadline = start + limits.timeout

    def exited() -> bool:
        try:
            return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def pump(events) -> None:
        nonlocal killed_for
        for key, _ in events:
            fd = key.fd
            if fd == pidfd:
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                sel.unregister(fd)
                open_fds.discard(fd)
                continue
            buf = bufs[fd]
            room = caps[fd] - len(buf)
            if len(chunk) > room:
                buf += chunk[: max(room, 0)]
                if killed_for is None:
                    killed_for = "output"
                    _killpg(pid)
            else:
                buf += chunk

    try:
        while True:
            if exited():
                break
            now = time.monotonic()
            if now >= deadline:
                killed_for = killed_for or "timeout"
                _killpg(pid)
                break
            wait = deadline - now
            if pidfd is None:
                wait = min(wait, 0.02)
            pump(sel.select(wait))
            if killed_for is not None:
                break
        # The leader has exited (or been killed) but is not reaped yet, so its
        # pid cannot be recycled: killing the group now is safe and takes
        # down any stragglers still holding our pipes.
        _killpg(pid)
        drain_until = time.monotonic() + 2.0
        while open_fds and time.monotonic() < drain_until:
            pump(sel.select(0.05))
            if killed_for == "output":
                # stop reading once the cap was hit; the group is dead
                break
        _, status, rusage = os.wait4(pid, 0)
        returncode = os.waitstatus_to_exitcode(status)
        proc.returncode = returncode
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
        os.close(report_r)
        proc.stdout.close()
        proc.stderr.close()
        if proc.returncode is None:  # only on an unexpected error above
            _killpg(pid)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
    duration = time.monotonic() - start

    records: list[dict] = []
    for line in bytes(bufs[report_r]).split(b"\n"):
        if not line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("t") == token:
            records.append(rec)

    limit = killed_for
    if limit is None:
        for rec in records:
            if rec.get("kind") == "limit" and rec.get("limit") in ("timeout", "cpu", "memory", "output"):
                limit = rec["limit"]
                break
    if limit is None and returncode < 0:
        cpu_used = rusage.ru_utime + rusage.ru_stime
        if -returncode == signal.SIGXCPU or (
            -returncode == signal.SIGKILL and cpu_used >= limits.cpu_seconds - 0.5
        ):
            limit = "cpu"
    result = SandboxResult(
        returncode=None if killed_for is not None else returncode,
        stdout=_decode(bytes(bufs[out_fd])),
        stderr=_decode(bytes(bufs[err_fd])),
        duration=duration,
        limit=limit,
    )
    return result, records


# --------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------


def run_python(
    source: str,
    *,
    stdin: str = "",
    files: Mapping[str, str | bytes] | None = None,
    limits: SandboxLimits = SandboxLimits(),
) -> SandboxResult:
    """Run ``source`` as a script (``__name__ == "__main__"``) in the sandbox.

    ``files`` (relative path -> text or bytes) are written into the temporary
    working directory first; the script itself is written there as
    ``main.py`` (``_ifbench_main.py`` if ``files`` already has a ``main.py``)
    and that directory is ``sys.path[0]``, as for ``python main.py``.
    ``stdin`` is the child's standard input.  Uncaught exceptions print a
    traceback and exit with status 1; ``SystemExit`` behaves as usual.
    Never raises for anything the code does; raises ``ValueError`` for bad
    ``files`` names and ``OSError`` if the child cannot be started at all.
    """
    return _run_script(source, stdin=stdin, files=files, limits=limits)[0]


def _run_script(source, *, stdin, files, limits):
    name = "main.py"
    if files and any(os.path.normpath(str(k)) == name for k in files):
        name = "_ifbench_main.py"
    return _execute({"mode": "script", "source": source}, stdin=stdin, files=files,
                    limits=limits, script_name=name)


def _death_reason(result: SandboxResult, limits: SandboxLimits) -> str:
    if result.limit == "timeout":
        return f"wall-clock timeout ({limits.timeout:g} s)"
    if result.limit == "output":
        return f"output limit exceeded ({limits.max_output_bytes} bytes)"
    if result.limit == "cpu":
        return f"CPU time limit exceeded ({limits.cpu_seconds} s)"
    if result.limit == "memory":
        return f"memory limit exceeded ({limits.memory_mb} MB)"
    rc = result.returncode
    if rc is None:
        return "killed by the sandbox"
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = str(-rc)
        text = f"killed by signal {name}"
    else:
        text = f"the process exited with code {rc} (os._exit() or a crash)"
    tail = _stderr_tail(result.stderr)
    return text + (f"; stderr: {tail}" if tail else "")


def _stderr_tail(stderr: str, lines: int = 6, chars: int = 1500) -> str:
    tail = "\n".join(stderr.rstrip().splitlines()[-lines:])
    return tail[-chars:]


def run_assert_tests(
    code: str,
    tests: Sequence[str],
    *,
    setup: str = "",
    limits: SandboxLimits = SandboxLimits(),
) -> TestRun:
    """Load ``code`` once in the sandbox, then run each assert-style test.

    In one child process: ``setup`` (if any) then ``code`` are executed in a
    fresh module namespace named ``solution`` (so ``if __name__ ==
    "__main__":`` blocks do not run; setup runs first so the code may rely on
    its imports).  Any exception there -- including ``SystemExit`` -- is the
    ``load_error``.  Then every test snippet runs in a shallow copy of that
    namespace and passes iff it raises nothing.  Plain ``assert a <op> b``
    statements are rewritten to report both values on failure.
    ``SystemExit``/``KeyboardInterrupt`` in a test fail that test only.

    Time: the whole child gets ``limits.timeout`` seconds.  Each step (the
    load, each test) runs under its own ``setitimer`` alarm sized to leave a
    reserve for the remaining steps, so a test that loops forever fails with
    ``"timeout: ..."`` and the following tests still run; ``result.limit`` is
    then ``"timeout"``.  A ``MemoryError`` escaping a step sets
    ``result.limit = "memory"``; hitting ``RLIMIT_CPU`` fails the running test
    and sets ``"cpu"``.  If the process dies (``os._exit``, crash, kill), the
    running test fails with the reason and later tests are reported as
    "not run".  Outcomes are always returned in order, one per test, named
    ``test_<i>``.
    """
    tests = [str(t) for t in tests]
    result, records = _execute(
        {"mode": "tests", "code": code, "setup": setup or "", "tests": tests},
        stdin=None, files=None, limits=limits)
    return _assemble_assert_run(tests, result, records, limits)


def _assemble_assert_run(tests, result, records, limits) -> TestRun:
    load_rec = next((r for r in records if r.get("kind") == "load"), None)
    started = [r.get("step") for r in records if r.get("kind") == "start"]
    current = started[-1] if started else None
    reported: dict[str, TestOutcome] = {}
    for rec in records:
        if rec.get("kind") == "test" and isinstance(rec.get("name"), str):
            reported[rec["name"]] = TestOutcome(
                name=rec["name"], passed=bool(rec.get("passed")), message=str(rec.get("message") or ""))

    if load_rec is None:
        load_error: str | None = (
            "the sandboxed process ended before the code finished loading: "
            + _death_reason(result, limits))
    else:
        err = load_rec.get("error")
        load_error = str(err) if err else None

    reason = _death_reason(result, limits)
    outcomes = []
    for i in range(len(tests)):
        name = f"test_{i}"
        if name in reported:
            outcomes.append(reported[name])
        elif load_error is not None:
            outcomes.append(TestOutcome(name=name, passed=False, message="not run: the code failed to load"))
        elif name == current:
            outcomes.append(TestOutcome(name=name, passed=False, message=f"did not finish: {reason}"))
        else:
            outcomes.append(TestOutcome(name=name, passed=False, message=f"not run: {reason}"))
    return TestRun(outcomes=tuple(outcomes), load_error=load_error, result=result)


def _normalize_output(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _diff_message(expected: list[str], got: list[str]) -> str:
    import difflib

    first = next(
        (i for i, (e, g) in enumerate(zip(expected, got)) if e != g),
        min(len(expected), len(got)),
    )
    exp_line = repr(expected[first]) if first < len(expected) else "<end of output>"
    got_line = repr(got[first]) if first < len(got) else "<end of output>"
    head = (f"wrong output (expected {len(expected)} lines, got {len(got)}); "
            f"first difference at line {first + 1}: expected {exp_line[:200]}, got {got_line[:200]}")
    diff = list(difflib.unified_diff(expected, got, "expected", "got", n=1, lineterm=""))
    if len(diff) > 40:
        diff = diff[:40] + [f"... ({len(diff) - 40} more diff lines)"]
    return head + "\n" + "\n".join(diff)


def run_stdio_tests(
    code: str,
    cases: Sequence[Mapping[str, str]],
    *,
    limits: SandboxLimits = SandboxLimits(),
) -> TestRun:
    """Run ``code`` as a script once per case with ``case["input"]`` on stdin.

    A case passes iff the program exits with status 0, hits no limit, and its
    stdout equals ``case["output"]`` after ``rstrip()`` of every line and
    removal of trailing blank lines (``\\r\\n`` is treated as ``\\n``).  Each
    case is its own child with the full ``limits``; cases run concurrently on
    at most ``min(4, cpu_count)`` threads.  Outcomes are named ``case_<i>``.
    ``load_error`` is set when the code does not compile.  ``result`` is the
    :class:`SandboxResult` of the first failing case (of the last case when all
    pass) with ``duration`` replaced by the total wall time of the run.
    """
    from concurrent.futures import ThreadPoolExecutor

    cases = list(cases)
    started = time.monotonic()
    if not cases:
        empty = SandboxResult(returncode=None, stdout="", stderr="", duration=0.0, limit=None)
        return TestRun(outcomes=(), load_error=None, result=empty)

    def one(case: Mapping[str, str]):
        return _run_script(code, stdin=str(case.get("input", "") or ""), files=None, limits=limits)

    workers = max(1, min(4, len(cases), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ifbench-sandbox") as pool:
        runs = list(pool.map(one, cases))

    load_error = None
    outcomes = []
    for i, (case, (res, records)) in enumerate(zip(cases, runs)):
        load_rec = next((r for r in records if r.get("kind") == "load"), None)
        if load_rec is not None and load_rec.get("error") and load_error is None:
            load_error = str(load_rec["error"])
        name = f"case_{i}"
        if res.limit is not None:
            msg = _death_reason(res, limits)
            if res.limit in ("memory", "cpu") and res.stderr:
                msg += "; stderr: " + _stderr_tail(res.stderr)
            outcomes.append(TestOutcome(name=name, passed=False, message=msg))
            continue
        if res.returncode != 0:
            if load_rec is not None and load_rec.get("error"):
                msg = f"the code does not compile: {load_rec['error']}"
            elif res.returncode is not None and res.returncode > 0:
                tail = _stderr_tail(res.stderr)
                msg = f"runtime error (exit code {res.returncode})" + (f":\n{tail}" if tail else "")
            else:
                msg = _death_reason(res, limits)
            outcomes.append(TestOutcome(name=name, passed=False, message=msg))
            continue
        expected = _normalize_output(str(case.get("output", "") or ""))
        got = _normalize_output(res.stdout)
        if expected == got:
            outcomes.append(TestOutcome(name=name, passed=True, message=""))
        else:
            outcomes.append(TestOutcome(name=name, passed=False, message=_diff_message(expected, got)))

    chosen = next((runs[i][0] for i, o in enumerate(outcomes) if not o.passed), runs[-1][0])
    result = replace(chosen, duration=time.monotonic() - started)
    return TestRun(outcomes=tuple(outcomes), load_error=load_error, result=result)
