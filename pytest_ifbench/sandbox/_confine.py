"""Child side, step 1: confine the sandboxed interpreter before candidate code runs.

Runs inside the child only (loaded by :mod:`._bootstrap`), so it imports only
the standard library.  Three layers, installed in this order by
:func:`confine`:

* **rlimits** (:func:`set_limits`): ``RLIMIT_CPU`` (hard = soft + 2 s),
  ``RLIMIT_FSIZE``, ``RLIMIT_CORE`` = 0, ``RLIMIT_AS``; ``SIGXFSZ`` ignored so
  oversized writes fail with ``EFBIG`` instead of killing the child.  They are
  set here rather than in a ``preexec_fn`` of the parent because
  ``preexec_fn`` is unsafe in a threaded parent (the stdio front end supervises
  several children from a thread pool) and would keep ``subprocess`` from
  using ``vfork``.  A kernel-enforced layer.
* **seccomp** (:func:`install_seccomp`, x86-64 / aarch64 Linux, only when
  subprocesses are not allowed): a classic-BPF filter that makes ``fork``,
  ``vfork``, non-thread ``clone`` and ``execve`` fail with ``EPERM`` (and
  ``clone3`` with ``ENOSYS`` so glibc falls back to the filtered ``clone``).
  ``PR_SET_NO_NEW_PRIVS`` is set first, as the kernel requires.  A
  kernel-enforced layer; candidate code cannot remove it.
* **an audit hook** (:func:`install_audit_hook`, PEP 578): refuses network
  access, process creation and ``ctypes`` symbol look-ups (unless
  subprocesses are allowed), raising resource limits, signalling processes
  outside the child's own process group, and writing files outside the
  working directory.  This layer is *not* a security boundary: PEP 578 says
  audit hooks can be bypassed by determined in-process code (``ctypes`` is
  refused for that reason, but e.g. a fresh copy of an extension module raises
  no events -- which is what the seccomp filter is for).  It turns the common
  accidents of model-written code into clear ``PermissionError`` messages.

The hook is defined with a *private copy* of the builtins (see
:mod:`._bootstrap`), so candidate code reassigning ``builtins.isinstance`` and
the like does not disable it.
"""

import os
import resource
import signal
import sys


def set_limits(lim):
    """Apply ``lim`` (``cpu_seconds``, ``file_size_mb``, ``memory_mb``) as rlimits, never raising a hard limit."""
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


def install_seccomp():
    """Kernel-level ban on fork/vfork/clone (except threads)/clone3/execve.

    Returns whether the filter is in place (False on other architectures or
    when the kernel refuses it; the other layers still apply)."""
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


def install_audit_hook(allow_subprocess, writable):
    """Install the refusing audit hook; writes are allowed only below the ``writable`` directories."""
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
    ROOTS = tuple(realpath(w) for w in writable)
    PREFIXES = tuple(r.rstrip("/") + "/" for r in ROOTS)
    DEV_OK = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
    WFLAGS = o.O_WRONLY | o.O_RDWR | o.O_CREAT | o.O_TRUNC | o.O_APPEND
    busy = [False]

    def outside(path, dir_fd, follow):
        if isinstance(path, int):
            return False                      # an already open fd
        p = fsdecode(fspath(path))
        if isinstance(dir_fd, int) and dir_fd >= 0 and not isabs(p):
            base = readlink(f"/proc/self/fd/{dir_fd:d}")
        else:
            base = getcwd()
        full = join(base, p)
        if follow:
            r = realpath(full)
        else:
            head, tail = split(full.rstrip("/") or "/")
            r = join(realpath(head), tail)
        return not (r in ROOTS or r.startswith(PREFIXES) or r in DEV_OK)

    def deny_write(event, path):
        raise PermissionError(f"sandbox: writing outside the working directory is not allowed ({event} {path!r})")

    def hook(event, args):
        if event in NET:
            raise PermissionError(f"sandbox: network access is disabled ({event})")
        if event in PROC:
            raise PermissionError(f"sandbox: creating processes is disabled ({event})")
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


def confine(lim, writable):
    """All three layers, in order: rlimits, then seccomp (needs ``ctypes``, so
    before the hook refuses it), then the audit hook (writes allowed below ``writable``)."""
    set_limits(lim)
    if not lim["allow_subprocess"]:
        install_seccomp()
    install_audit_hook(bool(lim["allow_subprocess"]), writable)
