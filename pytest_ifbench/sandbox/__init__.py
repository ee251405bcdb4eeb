"""Run model-written code contained by the operating system, and decide its tests outside it.

Nothing here ever executes candidate code inside the calling (pytest) process,
and nothing runs unconfined: when the OS sandbox is unavailable every entry
point raises :class:`SandboxUnavailable` with :func:`sandbox_problem`'s one-line
reason (a unit-test check then reports exactly that line as its error).

The boundary is the kernel's, built by :mod:`._namespaces` (bubblewrap):

* a fresh unprivileged host uid per run (never root, so ``RLIMIT_NPROC``
  holds and root-owned files stay unreadable), no capabilities,
  no-new-privileges, further user namespaces disabled (``unshare``, ``mount``,
  ``setns`` fail);
* new user, mount, PID, network, IPC, UTS and cgroup namespaces: the child sees
  only its own processes (the parent and pytest cannot be signalled, their
  ``/proc`` entries -- environment included -- do not exist), has only a
  loopback interface, and a ``/`` holding the system directories read-only plus
  the interpreter's installation and the three child-side modules;
* its working directory (``/workspace``) and ``/tmp`` are tmpfs mounts of
  ``SandboxLimits.disk_mb`` each -- a kernel quota -- and vanish with it;
* rlimits (CPU, address space, processes, file size, core = 0) set by
  ``prlimit`` before the first instruction; the wall clock and output caps are
  enforced by the parent, and the whole PID namespace dies with the run.

Inside, the child harness adds a second, *non-security* layer (rlimits again,
a seccomp filter against fork/exec, an audit hook turning common accidents into
clear ``PermissionError`` messages).

Verdicts.  Candidate code and test snippets share one interpreter, so what that
process says can be forged (frame walking or ``gc`` to the harness, patched
builtins, objects whose ``__eq__`` is always true, an early exit).  The parent
therefore decides (:mod:`._checks`): top-level ``assert`` statements whose
expected side it can evaluate itself are replaced, before the job is sent, by a
request to report the *computed* side as plain data; the parent compares it
with the expected value, which never enters the sandbox.  A test passes only if
the child reports it finished *and* every such check holds; an early exit is
never a pass.  ``TestOutcome.trusted`` marks verdicts that rest on such checks;
the rest (asserts inside functions or loops, comparisons of two computed
values, ``unittest`` classes) are still the child's word -- forgeable by a
determined adversary, though nothing it does escapes the sandbox.  stdio cases
are always compared by the parent.

Layout
------

Parent side (imported by callers; standard library only):

* :mod:`._types` -- :class:`SandboxLimits`, :class:`SandboxResult`,
  :class:`TestOutcome`, :class:`TestRun`.
* :mod:`._namespaces` -- the bubblewrap command line (:func:`~._namespaces.command_line`),
  :func:`sandbox_problem`, :class:`SandboxUnavailable`, the teardown watch.
* :mod:`._process` -- supervision: :func:`~._process.run_process` starts one
  launcher, feeds stdin, caps and collects stdout/stderr and the result pipe,
  enforces the wall-clock timeout and kills the whole group.
* :mod:`._python` -- the Python front end: job description, result pipe, the
  contained ``python -s -P -B _bootstrap.py``; :func:`run_python`.
* :mod:`._checks` -- the parent-side assert checks and the value decoding.
* :mod:`._tests` -- :func:`run_assert_tests` and :func:`run_stdio_tests`:
  turning harness records and checks into ordered :class:`TestOutcome` values.
* :mod:`._workspace` -- host working directories (agent workspaces' helpers).

Child side (run *inside* the sandbox by file path, never imported there as
part of this package; standard library only, never ``pytest_ifbench``):

* :mod:`._bootstrap` -- the entry script; loads the two below with a private
  copy of the builtins.
* :mod:`._confine` -- rlimits, seccomp filter, audit hook (second layer).
* :mod:`._harness` -- writes the job's files, runs the script or the tests,
  reports over the pipe (values of parent-side checks as plain data).
* :mod:`._forward` -- for agent CLIs: a relay from ``127.0.0.1:<port>`` inside
  the sandbox to a host Unix socket (the recording proxy).

Agent workspaces run on a *backend* chosen by name (``--ifbench-sandbox``):
:mod:`.backend` is the seam (the :class:`~.backend.SandboxBackend` interface,
the registry, :func:`~.backend.current_backend`), :mod:`.backends` holds the
built-ins -- ``bubblewrap`` (the default, the layer above with persistent host
directories instead of tmpfs) and ``docker`` (one container per run, cgroup
limits).  ``pytest_ifbench.agents.workspace.Workspace`` uses only the seam.
The model-written-code front ends above (:func:`run_python` and the test
runners) follow the same choice: on the built-in bubblewrap they start it
directly as described above; on any other backend :mod:`._code_runs` runs the
same harness job through the seam (pooled runs, the job and the report as
files), with the same verdicts.
"""

from __future__ import annotations

from ._namespaces import sandbox_problem
from ._process import network_namespace_available
from ._python import run_python
from ._tests import run_assert_tests, run_stdio_tests
from ._types import SandboxLimits, SandboxResult, TestOutcome, TestRun
from .backend import SandboxBackend, SandboxUnavailable
from .backends import current_backend, make_backend, use_backend

__all__ = [
    "SandboxBackend",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "TestOutcome",
    "TestRun",
    "current_backend",
    "make_backend",
    "network_namespace_available",
    "run_assert_tests",
    "run_python",
    "run_stdio_tests",
    "sandbox_problem",
    "use_backend",
]
