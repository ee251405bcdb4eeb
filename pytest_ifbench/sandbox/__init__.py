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

Layout
------

Parent side (imported by callers; standard library only):

* :mod:`._types` -- :class:`SandboxLimits`, :class:`SandboxResult`,
  :class:`TestOutcome`, :class:`TestRun`.
* :mod:`._process` -- supervision: :func:`~._process.run_process` starts one
  child from an explicit ``argv``/``cwd``/``env`` in its own process group
  (under ``unshare --net`` when available), feeds stdin, caps and collects
  stdout/stderr and an optional result pipe, enforces the wall-clock timeout
  and kills the whole group.  It knows nothing about Python or tests.
* :mod:`._workspace` -- creating, populating and removing working directories.
* :mod:`._python` -- the Python front end: throwaway directory, job
  description, result pipe, ``python -s -P -B _bootstrap.py``;
  :func:`run_python`.
* :mod:`._tests` -- :func:`run_assert_tests` and :func:`run_stdio_tests`:
  turning harness records into ordered :class:`TestOutcome` values.

Child side (run *inside* the sandbox by file path, never imported there as
part of this package; standard library only, never ``pytest_ifbench``):

* :mod:`._bootstrap` -- the entry script; loads the two below with a private
  copy of the builtins.
* :mod:`._confine` -- rlimits, seccomp filter, audit hook.
* :mod:`._harness` -- runs the script or the tests, reports over the pipe.

OS-level containment for agent commands
---------------------------------------

* :mod:`._namespaces` -- the bubblewrap command line for a contained command:
  a read-only system view, the workspace at ``/workspace``, a private ``HOME``
  and ``/tmp``, new user/PID/network/IPC/UTS namespaces, no capabilities, an
  unprivileged host uid (so ``RLIMIT_NPROC`` holds), rlimits through
  ``prlimit``, a disk watchdog; :func:`sandbox_problem` says in one line what
  is missing when it cannot run.
* :mod:`._forward` -- (child side) the only way out for real agent programs:
  a relay from ``127.0.0.1:<port>`` inside the sandbox to a host Unix socket
  (the recording proxy).

``pytest_ifbench.agents.workspace.Workspace`` uses both: a persistent copy of
an environment directory, every command run through :func:`~._process.run_process`
under bubblewrap.
"""

from __future__ import annotations

from ._namespaces import sandbox_problem
from ._process import network_namespace_available
from ._python import run_python
from ._tests import run_assert_tests, run_stdio_tests
from ._types import SandboxLimits, SandboxResult, TestOutcome, TestRun

__all__ = [
    "SandboxLimits",
    "SandboxResult",
    "TestOutcome",
    "TestRun",
    "network_namespace_available",
    "run_assert_tests",
    "run_python",
    "run_stdio_tests",
    "sandbox_problem",
]
