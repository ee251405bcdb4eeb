"""Parent side: the bubblewrap command line that contains an arbitrary command at the OS level.

:mod:`._python` confines one interpreter from inside; an agent's shell
commands (``git``, ``npm``, a whole agent CLI) cannot be confined that way, so
:func:`command_line` builds a launcher that the kernel enforces before the
command's first instruction:

* **an unprivileged host uid** (65534 by default), never root mapped into a
  namespace: root-owned ``0600`` files stay unreadable and ``RLIMIT_NPROC``
  applies (the kernel does not enforce it for root);
* **rlimits** (CPU, address space, processes, file size, open files, core = 0)
  set by util-linux ``prlimit`` on itself before it execs the rest of the chain
  -- no ``preexec_fn`` in our threaded parent (see :mod:`._confine`);
* **bubblewrap** >= 0.8: new user, mount, PID, network, IPC, UTS and cgroup
  namespaces, further user namespaces disabled (``unshare``/``mount``/``setns``
  fail), no capabilities, no-new-privileges, a new session, killed with its
  parent, a ``/proc`` showing only the sandbox's processes, a minimal ``/dev``
  and an environment built from scratch.

The file system is an empty read-only root holding the system directories
(``/usr``, ``/etc``, ``/opt``, the ``/bin``, ``/sbin``, ``/lib*`` links or
directories) read-only; :data:`MOUNT`, :data:`HOME` and ``/tmp`` -- host
directories of the run, read-write, persisting across its commands; a 64 MiB
``/dev/shm``; and the caller's ``extra_ro`` paths, read-only at their own
paths.  ``/root``, ``/home``, ``/var``, ``/run``, the host's ``/tmp`` and the
checkout are not there.

Why two bubblewraps when we are root: an unprivileged bubblewrap resolves its
bind sources *as the sandbox uid*, so it cannot reach a run directory under a
``0700`` parent (pytest's ``tmp_path``) or an interpreter under ``/root``.  So
an outer, root bubblewrap first makes a private mount namespace holding the
system directories, ``/dev``, ``/proc`` and, on a fresh tmpfs at ``/tmp``, just
the sources (:data:`STAGE`; never the host's whole tree, see :func:`_outer_root`); then ``prlimit``
sets the limits, ``setpriv`` drops to the sandbox uid and the inner,
unprivileged bubblewrap builds the sandbox from the staged paths.  Nothing
changes on the host.  When we are not root the chain is ``prlimit -- bwrap``
with the host paths bound directly, as our own uid (``RLIMIT_NPROC`` then counts
all our processes).

:func:`sandbox_problem` probes the whole chain once; callers must refuse to
run anything when it gives a reason -- there is no unsandboxed fallback.
:class:`Watch` follows a running sandbox (disk budget, teardown) and
:func:`tree_usage` is its ``du``-like walk.
"""

from __future__ import annotations

import json
import os
import re
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .backend import HOME, MOUNT, SYSTEM_DIRS, SandboxUnavailable, sandbox_python
from .backend import visible as _visible

__all__ = ["HOME", "MOUNT", "Jail", "Rlimits", "SandboxUnavailable", "Watch", "command_line", "require_sandbox",
           "sandbox_problem", "sandbox_python", "tree_usage"]

#: The default unprivileged host uid/gid of sandboxed commands ("nobody").
SANDBOX_UID = 65534
#: Where the proxy's Unix socket and the relay script appear inside the sandbox.
SOCKET = "/run/ifbench/proxy.sock"
FORWARDER_MOUNT = "/run/ifbench/forward.py"
#: The outer mount namespace's tmpfs that holds the bind sources (root only).
STAGE = "/tmp"
#: The relay started in front of the command when a socket is given (:mod:`._forward`).
FORWARDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_forward.py")
#: The environment of the launcher itself -- what the sandbox's pid 1 (bubblewrap) shows in its environ.
LAUNCHER_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}

_SYSTEM_DIRS = SYSTEM_DIRS
#: No extra_ro path may be or lie below these (its mount point would land in the workspace or HOME, or
#: cover the sandbox's own mounts).  Paths below ``/tmp`` are allowed: their mount points are created in
#: the run's private ``/tmp``, which is removed with the run.
_RESERVED = (MOUNT, HOME, "/proc", "/dev", "/run/ifbench")
_SHM_BYTES = 64 << 20
_SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True, slots=True, kw_only=True)
class Rlimits:
    """Per-process limits of every process in the sandbox.  ``processes`` (``RLIMIT_NPROC``) counts the
    sandbox uid's processes *and threads* host-wide; the CPU limit's ``SIGKILL`` comes 2 s after ``SIGXCPU``."""

    cpu_seconds: int
    memory_mb: int
    processes: int
    file_size_mb: int
    open_files: int = 4096

    def prlimit_args(self) -> list[str]:
        """``prlimit`` options, clamped to our own hard limits (the chain could not raise them)."""
        cpu = _clamp(resource.RLIMIT_CPU, self.cpu_seconds + 2)
        return [f"--cpu={min(self.cpu_seconds, cpu)}:{cpu}", f"--as={_clamp(resource.RLIMIT_AS, self.memory_mb << 20)}",
                f"--nproc={_clamp(resource.RLIMIT_NPROC, self.processes)}",
                f"--fsize={_clamp(resource.RLIMIT_FSIZE, self.file_size_mb << 20)}",
                f"--nofile={_clamp(resource.RLIMIT_NOFILE, self.open_files)}", "--core=0"]


def _clamp(which: int, value: int) -> int:
    hard = resource.getrlimit(which)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


@dataclass(frozen=True, slots=True, kw_only=True)
class Jail:
    """What one sandboxed command sees.  With ``socket``, that host Unix socket is bound at :data:`SOCKET`
    and the command starts behind :mod:`._forward` on ``127.0.0.1:port``, run by ``python`` (made
    visible through ``extra_ro`` by the caller -- see :func:`sandbox_python`)."""

    workspace: str
    home: str
    tmp: str
    uid: int = SANDBOX_UID
    gid: int = SANDBOX_UID
    extra_ro: tuple[str, ...] = ()
    socket: str | None = None
    port: int = 0
    python: str = ""
    #: With ``socket``: the command is a launcher (see :class:`~.backend.ProxyRoute`).
    launcher: bool = False
    #: > 0: no host directory at all -- :data:`MOUNT` and ``/tmp`` are fresh tmpfs mounts of this many
    #: bytes each (a kernel-enforced disk cap; ``workspace``/``home``/``tmp`` are ignored, there is no
    #: ``HOME`` directory: point ``HOME`` at :data:`MOUNT`).  Everything written vanishes with the sandbox.
    scratch_bytes: int = 0


def command_line(jail: Jail, argv: Sequence[str], *, env: Mapping[str, str], rlimits: Rlimits,
                 info_fd: int | None = None) -> list[str]:
    """The full launcher argv running ``argv`` in ``jail`` with exactly ``env``.

    Start it with :data:`LAUNCHER_ENV` as its environment.  ``info_fd`` (an
    inherited writable descriptor) receives bubblewrap's JSON status, whose
    ``child-pid`` is the host pid of the sandbox's pid 1: killing it tears the
    whole PID namespace down.  Raises ``ValueError`` for a reserved or relative
    ``extra_ro`` path or a malformed environment, ``FileNotFoundError`` when a
    tool or an ``extra_ro`` path is missing."""
    tools = _tools()
    if not argv:
        raise ValueError("empty command")
    extra = _extra_paths(jail.extra_ro)
    scratch = jail.scratch_bytes > 0
    sources: dict[str, str] = {} if scratch else {"ws": jail.workspace, "home": jail.home, "tmp": jail.tmp}
    sources.update({f"ro{i}": path for i, path in enumerate(extra)})
    if jail.socket is not None:
        sources["sock"] = jail.socket
        sources["fwd"] = FORWARDER
    privileged = os.geteuid() == 0
    if privileged:
        outer = [tools["bwrap"], "--die-with-parent", *_outer_root(), "--tmpfs", STAGE, *_tool_binds(tools)]
        for name, src in sources.items():
            outer += ["--bind" if name in ("ws", "home", "tmp") else "--ro-bind", src, f"{STAGE}/{name}"]
        src = {name: f"{STAGE}/{name}" for name in sources}
        chain = [*outer, "--", tools["prlimit"], *rlimits.prlimit_args(), "--", tools["setpriv"],
                 f"--reuid={jail.uid}", f"--regid={jail.gid}", "--clear-groups", "--no-new-privs", "--"]
    else:
        src = dict(sources)
        chain = [tools["prlimit"], *rlimits.prlimit_args(), "--"]
    inner = [tools["bwrap"], "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
             "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox", "--clearenv"]
    for key, value in env.items():
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise ValueError(f"invalid environment variable {key!r}")
        inner += ["--setenv", key, value]
    inner += _system_binds()
    inner += ["--dev", "/dev", "--size", str(_SHM_BYTES), "--tmpfs", "/dev/shm", "--proc", "/proc"]
    if scratch:
        inner += ["--size", str(jail.scratch_bytes), "--tmpfs", MOUNT, "--size", str(jail.scratch_bytes),
                  "--tmpfs", "/tmp"]
    else:
        inner += ["--bind", src["ws"], MOUNT, "--bind", src["home"], HOME, "--bind", src["tmp"], "/tmp"]
    for i, path in enumerate(extra):
        inner += ["--ro-bind", src[f"ro{i}"], path]
    command = list(argv)
    if jail.socket is not None:
        if not jail.python or not 0 < jail.port < 65536:
            raise ValueError("a socket route needs a port (1-65535) and the sandbox's python")
        inner += ["--ro-bind", src["sock"], SOCKET, "--ro-bind", src["fwd"], FORWARDER_MOUNT]
        command = [jail.python, "-I", "-S", "-B", FORWARDER_MOUNT, *(["--launcher"] if jail.launcher else []),
                   str(jail.port), SOCKET, "--", *command]
        inner += ["--remount-ro", "/proc"]  # no writing the CLI's memory (/proc/<pid>/mem) from its tools
    inner += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", MOUNT]
    if info_fd is not None:
        inner += ["--info-fd", str(info_fd)]
    return [*chain, *inner, "--", *command]


def _outer_root() -> list[str]:
    """The outer (root) namespace's file system: the system directories, a fresh ``/dev`` and the host's
    ``/proc`` (the inner, unprivileged bubblewrap may mount a proc of its own only where a fully visible
    one is) -- never the host's whole tree.  Binding ``/`` recursively copies every mount on the host, and
    one that a container engine unmounts meanwhile (an overlay under Docker's data root, which Docker makes
    shared) fails bubblewrap's remount of it with EINVAL: the sandbox never starts."""
    return [*_system_binds(), "--dev", "/dev", "--bind", "/proc", "/proc"]


def _tool_binds(tools: Mapping[str, str | None]) -> list[str]:
    """The tools the outer namespace runs that lie outside the system directories (bound after the
    stage's tmpfs, which would cover one under ``/tmp``)."""
    args: list[str] = []
    for tool in dict.fromkeys(path for path in tools.values() if path):
        real = os.path.realpath(tool)
        if not _in_system_dirs(tool):  # e.g. a bubblewrap built into /root/bin
            args += ["--ro-bind", real, tool]
        elif not _in_system_dirs(real):  # a link in /usr/local/bin to a build elsewhere
            args += ["--ro-bind", real, real]
    return args


def _in_system_dirs(path: str) -> bool:
    return any(path.startswith(f"/{name}/") for name in _SYSTEM_DIRS)


def _system_binds() -> list[str]:
    args: list[str] = []
    for name in _SYSTEM_DIRS:
        host = f"/{name}"
        if os.path.islink(host):
            args += ["--symlink", os.readlink(host), host]
        elif os.path.isdir(host):
            args += ["--ro-bind", host, host]
    return args


def _extra_paths(paths: Iterable[str]) -> list[str]:
    out: list[str] = []
    for raw in paths:
        path = os.path.normpath(str(raw))
        if not os.path.isabs(path):
            raise ValueError(f"extra_ro paths must be absolute: {raw!r}")
        if path in ("/", "/tmp") or any(path == r or path.startswith(r + "/") for r in _RESERVED):
            raise ValueError(f"extra_ro path would cover a sandbox directory: {raw!r}")
        if not os.path.exists(path):
            raise FileNotFoundError(f"extra_ro path does not exist: {raw!r}")
        if not _visible(os.path.realpath(path)) or not _visible(path):
            if path not in out:
                out.append(path)
    return out


# --- is it usable? ---------------------------------------------------------------------------------

_probe_lock = threading.Lock()
_probe_cache: list[str | None] = []


def require_sandbox() -> None:
    """Raise :class:`SandboxUnavailable` unless :func:`sandbox_problem` is None."""
    problem = sandbox_problem()
    if problem is not None:
        raise SandboxUnavailable(problem)


def sandbox_problem() -> str | None:
    """None when a contained command starts on this machine, else ONE line saying what is missing
    and how to fix it.  Probed once per process (a ``true`` through the full chain) and cached."""
    with _probe_lock:
        if not _probe_cache:
            _probe_cache.append(_diagnose())
        return _probe_cache[0]


_tool_cache: dict[str, str] = {}


def _tools() -> dict[str, str]:
    """Absolute paths of bwrap, prlimit and (as root) setpriv; raises ``FileNotFoundError`` naming the missing."""
    if _tool_cache:
        return _tool_cache
    path = os.pathsep.join([os.environ.get("PATH", ""), _SEARCH_PATH])
    found = {name: shutil.which(name, path=path) for name in ("bwrap", "prlimit", "setpriv")}
    missing = [name for name, exe in found.items() if exe is None and (name != "setpriv" or os.geteuid() == 0)]
    if missing:
        raise FileNotFoundError(", ".join(missing))
    _tool_cache.update({name: exe for name, exe in found.items() if exe is not None})
    return _tool_cache


def _diagnose() -> str | None:
    if not sys.platform.startswith("linux"):
        return f"the agent sandbox needs Linux namespaces (bubblewrap); this is {sys.platform}"
    try:
        _tools()
    except FileNotFoundError as exc:
        if "bwrap" in str(exc):
            return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap (or dnf install bubblewrap)"
        return f"util-linux tools missing ({exc}): apt-get install util-linux"
    # A uid of the probe's own: a shared one could be at its process limit because of another run.
    probe_uid = 0x1FFF_0000 + os.getpid() % 0x10000
    with tempfile.TemporaryDirectory(prefix="ifbench-probe-") as root:
        dirs = [os.path.join(root, name) for name in ("ws", "home", "tmp")]
        for d in dirs:
            os.mkdir(d)
            if os.geteuid() == 0:
                os.chown(d, probe_uid, probe_uid)
        jail = Jail(workspace=dirs[0], home=dirs[1], tmp=dirs[2], uid=probe_uid, gid=probe_uid)
        argv = command_line(jail, ["/bin/sh", "-c", "exit 0"], env={"PATH": "/usr/bin:/bin"},
                            rlimits=Rlimits(cpu_seconds=10, memory_mb=1024, processes=4096, file_size_mb=16))
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=LAUNCHER_ENV, cwd=root)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"the bubblewrap sandbox does not start: {exc}"
    if done.returncode == 0:
        return None
    line = next((ln.strip() for ln in done.stderr.splitlines() if ln.strip()), f"exit status {done.returncode}")
    if "Unknown option" in line:
        return f"bubblewrap is too old ({line}): install bubblewrap >= 0.8.0"
    if line.startswith("bwrap:") and re.search(r"namespace|uid map|Operation not permitted|No permission", line):
        return (f"user namespaces are disabled or restricted here ({line}): enable them "
                "(sysctl user.max_user_namespaces=15000, kernel.unprivileged_userns_clone=1, or "
                "kernel.apparmor_restrict_unprivileged_userns=0)")
    return f"the bubblewrap sandbox does not start: {line}"


# --- watching a running sandbox ---------------------------------------------------------------------

class Watch(threading.Thread):
    """Follows one running sandbox from the outside: kills it when the directories ``roots`` outgrow
    ``budget`` bytes (if ``armed``), and lets :meth:`finish` wait until every process of it is gone.

    bubblewrap's ``--info-fd`` status gives the host pid of the sandbox's pid 1; a pidfd then pins it (a
    recycled pid is never signalled).  Killing pid 1 takes the whole PID namespace down, and pid 1 only
    becomes a zombie -- its pidfd readable -- once the kernel has reaped every other process in it.  The
    walk repeats every 0.5 s, or 20x its own duration when that is longer."""

    def __init__(self, info_fd: int, roots: Sequence[str], *, budget: int, max_entries: int, armed: bool) -> None:
        super().__init__(name="ifbench-sandbox-watch", daemon=True)
        self.info_fd = info_fd
        self.roots = roots
        self.budget = budget
        self.max_entries = max_entries
        self.armed = armed  # kill when over budget
        self.pidfd: int | None = None
        self.done = threading.Event()
        self.killed = False

    def run(self) -> None:
        pid = self._child_pid()
        if pid is None:
            return
        try:
            self.pidfd = os.pidfd_open(pid)
            with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
                nspid = next((line.split()[1:] for line in fh if line.startswith("NSpid:")), [])
        except OSError:
            return
        if nspid[-1:] != ["1"] or len(nspid) < 2:  # not the init of a child PID namespace: not ours (any more)
            os.close(self.pidfd)
            self.pidfd = None
            return
        interval = 0.5
        while self.armed and not self.done.wait(interval):
            start = time.monotonic()
            usage = tree_usage(self.roots, max_entries=self.max_entries)
            if usage is None or usage > self.budget:
                if not self.done.is_set():
                    try:
                        signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
                        self.killed = True
                    except OSError:
                        pass
                return
            interval = max(0.5, 20 * (time.monotonic() - start))

    def _child_pid(self) -> int | None:
        data = b""
        while True:
            try:
                chunk = os.read(self.info_fd, 4096)
            except OSError:
                return None
            if not chunk:
                return None
            data += chunk
            try:
                return int(json.loads(data)["child-pid"])
            except ValueError:
                continue  # not complete yet
            except (KeyError, TypeError):
                return None

    def finish(self, grace: float = 5.0) -> None:
        """Call once the launcher has exited and our end of the info pipe is closed: stops watching,
        then waits (at most ``grace`` seconds) until the sandbox's last process is gone."""
        self.done.set()
        self.join(grace)
        os.close(self.info_fd)
        if self.pidfd is not None:
            try:
                select.select([self.pidfd], [], [], grace)
            finally:
                os.close(self.pidfd)


def tree_usage(roots: Iterable[str], *, max_entries: int) -> int | None:
    """Bytes allocated on disk below ``roots`` (``du``-like: blocks, symlinks not followed, hard links
    counted once), or None when the walk could not finish: more than ``max_entries`` entries, or a
    directory that cannot be listed for another reason than permissions (e.g. a path longer than
    ``PATH_MAX``).  Callers treat None as over budget.  Directories we may not read are skipped
    (only possible when not running as root)."""
    total = 0
    count = 0
    seen: set[tuple[int, int]] = set()
    stack = [str(r) for r in roots]
    while stack:
        directory = stack.pop()
        try:
            entries = os.scandir(directory)
        except (FileNotFoundError, PermissionError):
            continue
        except OSError:
            return None
        with entries:
            for entry in entries:
                count += 1
                if count > max_entries:
                    return None
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                except OSError:
                    return None
                if stat.S_ISDIR(st.st_mode):
                    stack.append(entry.path)
                elif st.st_nlink > 1:
                    key = (st.st_dev, st.st_ino)
                    if key in seen:
                        continue
                    seen.add(key)
                total += st.st_blocks * 512
    return total
