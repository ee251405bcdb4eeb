"""The sandbox-backend seam: what a backend must do for agent workspaces, and how one is chosen.

An agent run works in one host directory tree (:class:`RunDirs`: the workspace copy, its ``HOME``
and its ``/tmp``) that the caller creates and fills, and runs contained commands there, one at a
time or concurrently.  A backend contains those commands:

* :class:`SandboxBackend` -- a named factory: :meth:`~SandboxBackend.problem` says in one line why it
  cannot run here (callers refuse to run anything then; there is no fallback to another backend), and
  :meth:`~SandboxBackend.open` starts the backend's side of one run.  It is called on the empty run
  root, *before* the caller creates and fills the three directories (a backend may put a size-capped
  file system there first).
* :class:`SandboxRun` -- one run: :meth:`~SandboxRun.run` executes a command under :class:`Limits` with
  its timeout and ends its whole process tree, :meth:`~SandboxRun.disk_usage` measures the run's
  directories, :meth:`~SandboxRun.close` tears the backend's side down (the caller removes the files).
  A :class:`ProxyRoute` given to ``run`` opens the one way out: ``127.0.0.1:port`` inside is relayed to
  the host's Unix socket by the relay (:mod:`._forward`), whatever the backend.

Both sides see the same files: the run's directories are host directories, shown to the sandbox at
:data:`MOUNT`, :data:`HOME` and ``/tmp``.  So reading and writing the agent's files is the caller's,
done on the host without following links (``agents.workspace.Workspace.read_bytes``).

Backends are looked up by name (``--ifbench-sandbox=NAME``): the hook
``pytest_ifbench_sandbox_backend`` (first result wins; the built-ins answer last), and outside
pytest ``make_backend``.  The registry (``register_backend``, ``make_backend``, ``use_backend``,
``current_backend``, default: bubblewrap) lives in :mod:`pytest_ifbench.sandbox.backends`.
"""

from __future__ import annotations

import math
import os
import re
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "DEFAULT_BACKEND", "HOME", "MOUNT", "CommandResult", "ImageBackend", "Limits", "ProxyRoute", "RunDirs",
    "SandboxBackend",
    "SandboxRun", "SandboxUnavailable", "classify", "sandbox_python", "venv_python",
]

#: Where the workspace appears inside the sandbox (also the working directory).
MOUNT = "/workspace"
#: The run's home directory inside the sandbox.
HOME = "/home/agent"
#: The host's system directories every backend shows read-only at their own paths.
SYSTEM_DIRS = ("usr", "etc", "opt", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: The backend used when none is named.
DEFAULT_BACKEND = "bubblewrap"


class SandboxUnavailable(RuntimeError):
    """The OS-level sandbox cannot run here; the message is the backend's one-line reason.
    Raised instead of ever running anything unconfined."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Limits of one command.  ``memory_mb`` is ``RLIMIT_AS`` per process, ``max_processes`` is
    ``RLIMIT_NPROC`` (processes and threads of the sandbox uid), ``max_file_mb`` is ``RLIMIT_FSIZE``,
    ``max_output_bytes`` caps stdout and stderr each (then the command is killed, ``limit="output"``),
    ``max_workspace_mb``/``max_workspace_entries`` bound the run's directories together.
    ``cpu_seconds`` (``RLIMIT_CPU`` per process) defaults to what one process could use in ``timeout``
    on every core, i.e. it is only a backstop unless set.

    Backends with cgroups (docker) also cap the whole run: ``run_memory_mb`` (all its processes'
    memory, shared memory and page cache included), ``max_processes`` (as the pids limit) and ``cpus``
    (None: all cores); bubblewrap has no cgroup and ignores ``run_memory_mb``/``cpus``."""

    timeout: float = 60.0
    memory_mb: int = 2048
    max_processes: int = 256
    max_file_mb: int = 512
    max_output_bytes: int = 1_000_000
    max_workspace_mb: int = 1024
    max_workspace_entries: int = 200_000
    cpu_seconds: int | None = None
    run_memory_mb: int = 4096
    cpus: float | None = None

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise ValueError("Limits.timeout must be > 0")
        for name in ("memory_mb", "max_processes", "max_file_mb", "max_output_bytes", "max_workspace_mb",
                     "max_workspace_entries", "run_memory_mb"):
            if getattr(self, name) <= 0:
                raise ValueError(f"Limits.{name} must be > 0")
        if self.cpu_seconds is not None and self.cpu_seconds <= 0:
            raise ValueError("Limits.cpu_seconds must be > 0")
        if self.cpus is not None and not self.cpus > 0:
            raise ValueError("Limits.cpus must be > 0")

    def cpu_limit(self) -> int:
        """``RLIMIT_CPU`` seconds: ``cpu_seconds``, or the backstop described above."""
        return self.cpu_seconds or math.ceil(self.timeout) * max(1, os.cpu_count() or 1) + 1


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandResult:
    """What one command did.  ``returncode`` is ``None`` when the sandbox killed it (timeout, output
    cap, disk watchdog); a command killed by signal ``N`` otherwise reports ``128 + N``.  ``stdout`` and
    ``stderr`` are decoded as UTF-8 (invalid bytes replaced) and each cut at ``max_output_bytes``."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    duration: float
    limit: str | None = None  # "timeout" | "memory" | "cpu" | "output" | "disk" | "processes" | None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.limit is None

    def to_json(self) -> dict[str, Any]:
        return {"argv": list(self.argv), "returncode": self.returncode, "stdout": self.stdout,
                "stderr": self.stderr, "duration": self.duration, "limit": self.limit}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CommandResult:
        return cls(argv=tuple(data["argv"]), returncode=data["returncode"], stdout=data["stdout"],
                   stderr=data["stderr"], duration=float(data["duration"]), limit=data.get("limit"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyRoute:
    """The only way out of the sandbox, for real agent CLIs: inside, ``127.0.0.1:port`` is relayed to
    the host's Unix ``socket`` (the recording proxy).  Set e.g. ``ANTHROPIC_BASE_URL`` to :attr:`url`.
    When we are root the socket is handed to the sandbox uid (``chown``) so that it may connect.

    Only the command's own connections pass (the relay traces each one to the processes holding it):
    the command's process, and with ``launcher`` also its children running a program of the command's
    installation, for a command that only starts the real program (Kilo's node script).  Anything the
    command runs below that -- its tool commands -- is refused and reported to the proxy.  A backend
    runs the command behind ``sandbox/_forward.py`` (the relay: it traces connections and keeps the
    command's processes out of each other) with ``/proc`` read-only."""

    socket: Path
    port: int
    launcher: bool = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunDirs:
    """One run's host directories (``root`` holds the three, and may hold the caller's own files, never
    shown inside) and the unprivileged host uid/gid its commands run as."""

    root: Path
    workspace: Path
    home: Path
    tmp: Path
    uid: int
    gid: int

    def roots(self) -> tuple[str, ...]:
        return str(self.workspace), str(self.home), str(self.tmp)


@runtime_checkable
class SandboxRun(Protocol):
    """The backend's side of one run (see the module doc)."""

    def run(self, argv: tuple[str, ...], *, limits: Limits, env: Mapping[str, str], stdin: str | None,
            route: ProxyRoute | None, extra_ro: Sequence[str], disk_budget: int | None) -> CommandResult:
        """Run ``argv`` (non-empty) in :data:`MOUNT` with exactly ``env`` and wait for it and everything it
        started to end.  ``extra_ro`` host paths appear read-only at their own paths.  ``disk_budget``:
        bytes the run's directories may hold while it runs (over it: killed, ``limit="disk"``; None: not
        watched).  Never raises for what the command does; raises :class:`SandboxUnavailable`,
        ``ValueError`` for bad arguments, ``OSError`` when it cannot start."""

    def disk_usage(self, max_entries: int) -> int | None:
        """Bytes the run's directories hold; None past ``max_entries`` entries (counts as over budget)."""

    def close(self, *, keep: bool = False) -> None:
        """Tear the backend's side down (idempotent); the caller then removes the directories, unless
        ``keep``: they must then stay on the host as the sandbox left them."""


@runtime_checkable
class SandboxBackend(Protocol):
    """A named way to contain agent commands (see the module doc)."""

    name: str

    def problem(self) -> str | None:
        """None when a contained command starts here, else ONE line saying what is missing and how to fix it."""

    def open(self, dirs: RunDirs) -> SandboxRun:
        """Start one run on ``dirs`` (only ``dirs.root`` exists yet)."""


@runtime_checkable
class ImageBackend(Protocol):
    """A backend that can start its runs from a named local image (a suite's ``sandbox: {backend: NAME,
    image: IMAGE}``): the instance then runs on ``backend.with_image(IMAGE)``.  Optional; a backend without
    ``with_image`` refuses an image at collection (docker has one)."""

    def with_image(self, image: str) -> SandboxBackend:
        """The same backend starting every run from ``image`` as it is (it must exist where the backend
        runs: its :meth:`~SandboxBackend.problem` says so in one line otherwise)."""


# --- shared by the backends -------------------------------------------------------------------------

_EVIDENCE = (
    ("processes", re.compile(r"fork: (?:retry: )?Resource temporarily unavailable|[Cc]an(?:no|')t fork|"
                             r"can't start new thread|BlockingIOError: \[Errno 11\]|pthread_create")),
    ("memory", re.compile(r"MemoryError|Cannot allocate memory|[Oo]ut of memory|memory exhausted|std::bad_alloc|"
                          r"xmalloc: cannot allocate|Failed to reserve virtual memory")),
    ("disk", re.compile(r"File size limit exceeded|File too large|No space left on device|Disk quota exceeded")),
)


def classify(returncode: int | None, killed_for: str | None, stderr: str, *, disk: bool) -> str | None:
    """The limit a command hit: certain facts first (disk budget, the supervisor's kills, a limit
    signal), then the command's own account of a failed fork/allocation, then the timeout."""
    if disk or returncode == 128 + signal.SIGXFSZ:
        return "disk"
    if killed_for in ("output", "memory"):
        return killed_for
    if returncode == 128 + signal.SIGXCPU:
        return "cpu"
    if killed_for is not None or returncode != 0:
        for name, pattern in _EVIDENCE:
            if pattern.search(stderr):
                return name
    return killed_for


def visible(path: str) -> bool:
    """Whether ``path`` is already visible read-only inside the sandbox (below a shown system directory)."""
    top = path.split("/")[1] if path.count("/") >= 1 else ""
    return top in SYSTEM_DIRS and os.path.isdir(f"/{top}") and not os.path.islink(f"/{top}")


def _installation(prefix: str) -> list[str]:
    """What an interpreter reads of the installation at ``prefix``: its library directories (the standard
    library, ``site-packages``, a shared ``libpython``) and a virtual environment's ``pyvenv.cfg``, at the
    path given and at the real one. Never the rest: ``bin/activate`` and the ``.env`` a project keeps
    beside it, or a conda environment's ``etc/conda/activate.d``, are where API keys are exported."""
    out: list[str] = []
    for root in dict.fromkeys((prefix, os.path.realpath(prefix))):
        if visible(root):
            continue
        for name in dict.fromkeys(("lib", sys.platlibdir, "pyvenv.cfg")):
            path = os.path.join(root, name)
            if os.path.exists(path) and not os.path.islink(path):
                out.append(path)
    return out


def sandbox_python() -> tuple[str, tuple[str, ...]]:
    """An interpreter for child-side scripts in the sandbox: (its path, the ``extra_ro`` it needs).

    The running interpreter's own installation (``sys.base_prefix``): its binary and library directories,
    bound read-only unless they already lie below a system directory (:func:`_installation`)."""
    prefix = os.path.realpath(sys.base_prefix)
    exe = os.path.join(prefix, "bin", f"python{sys.version_info[0]}.{sys.version_info[1]}")
    if not os.path.exists(exe):
        exe = os.path.realpath(sys.executable)
    return exe, tuple(dict.fromkeys(p for p in (exe, *_installation(prefix)) if not visible(p)))


def venv_python() -> tuple[str, tuple[str, ...]]:
    """This interpreter with the packages it imports (a virtual environment's): (``sys.executable``, the
    ``extra_ro`` it needs): the executable at its own path and at its real one, and the library
    directories of its environment and of the installation it was made from (:func:`_installation`)."""
    paths = [sys.executable, os.path.realpath(sys.executable)]
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix)):
        paths += _installation(prefix)
    return sys.executable, tuple(dict.fromkeys(p for p in paths if not visible(p)))
