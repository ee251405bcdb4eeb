"""Parent side: run Python code in the OS-level sandbox through the child harness.

Turns one job (a script, or code plus assert tests) into one contained child:

1. a job description (JSON: mode, sources, the caller's ``files``, limits, the
   absolute monotonic deadline and a fresh random token) in an unlinked
   temporary file the child inherits -- nothing of the host is bound in, the
   harness writes the files itself;
2. a dedicated :class:`._process.ResultPipe`, so the harness's records never
   travel through stdout/stderr;
3. :func:`._namespaces.command_line` around ``python -s -P -B _bootstrap.py
   PAYLOAD_FD REPORT_FD``: bubblewrap as a fresh unprivileged uid, new
   user/PID/network/IPC/UTS/mount namespaces, no capabilities, the system
   read-only, only the interpreter's installation and the three child-side
   modules bound in, and the working directory :data:`._namespaces.MOUNT` and
   ``/tmp`` as tmpfs mounts of ``limits.disk_mb`` each -- a kernel quota;
4. :func:`._process.run_process` supervises it (wall clock, output caps) and
   :class:`._namespaces.Watch` waits until the sandbox's PID namespace is gone;
5. the records carrying this run's token are kept, and a limit the harness
   reported (``"memory"``, a per-test ``"timeout"``, ``"cpu"``) is folded into
   the result unless the supervisor itself killed the child.

That is the path when the process's backend (``--ifbench-sandbox``,
:func:`.backends.current_backend`) is the built-in bubblewrap.  Any other backend
(``docker``) gets the same job through its public interface instead
(:mod:`._code_runs`: pooled runs, the job and the report as files in the run's
``HOME``); the records and their folding into the result are the same.

There is no unconfined fallback: when the chosen backend's ``problem()``
(bubblewrap's: :func:`._namespaces.sandbox_problem`) gives a reason, every entry
point raises :class:`.backend.SandboxUnavailable` with it, never running the code
on another backend.  :func:`run_python` is the script front end; the test front ends live
in :mod:`._tests`.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import signal
import tempfile
import time
from collections.abc import Mapping
from dataclasses import replace

from . import _namespaces as ns
from ._process import ResultPipe, minimal_env, run_process
from ._types import SandboxLimits, SandboxResult
from .backend import SandboxBackend, SandboxUnavailable, venv_python
from .backends import current_backend

#: The child-side modules (started / loaded by file path from this directory, bound read-only).
CHILD_DIR = os.path.dirname(os.path.abspath(__file__))
#: The child's entry point (see its docstring).
BOOTSTRAP = os.path.join(CHILD_DIR, "_bootstrap.py")

# == ``-I`` without ``-E`` (see the package docstring): keeps PYTHONHASHSEED=0
# effective.  ``-P`` needs Python 3.11, the project's minimum.
_PYTHON_FLAGS: tuple[str, ...] = ("-s", "-P", "-B")

_REPORT_CAP = 8 << 20  # bytes accepted on the report channel

_LIMIT_NAMES = ("timeout", "cpu", "memory", "output")

_UIDS = itertools.count()


def _fresh_uid() -> int:
    """A host uid of its own for each run (``RLIMIT_NPROC`` counts per uid host-wide), from a range
    neither distributions nor agent workspaces use."""
    return 0x3000_0000 + (os.getpid() % 0x10000) * 0x100 + next(_UIDS) % 0x100


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
    return run_script(source, stdin=stdin, files=files, limits=limits)[0]


def run_script(
    source: str,
    *,
    stdin: str | None,
    files: Mapping[str, str | bytes] | None,
    limits: SandboxLimits,
) -> tuple[SandboxResult, list[dict]]:
    """:func:`run_python` plus the harness's records (for the stdio front end)."""
    name = "main.py"
    if files and any(os.path.normpath(str(k)) == name for k in files):
        name = "_ifbench_main.py"
    return execute({"mode": "script", "source": source}, stdin=stdin, files=files,
                   limits=limits, script_name=name)


def execute(
    payload: dict,
    *,
    stdin: str | None,
    files: Mapping[str, str | bytes] | None,
    limits: SandboxLimits,
    script_name: str | None = None,
) -> tuple[SandboxResult, list[dict]]:
    """Start one harness child for ``payload``, supervise it, return (result, report records).
    Raises :class:`._namespaces.SandboxUnavailable` when the OS sandbox cannot run here."""
    backend = current_backend()
    if not runs_direct(backend):
        problem = backend.problem()
        if problem is not None:
            raise SandboxUnavailable(problem)
    else:
        ns.require_sandbox()
    token = os.urandom(16).hex()
    start = time.monotonic()
    payload = {
        **payload,
        "files": _encode_files(files),
        "script_name": script_name,
        "token": token,
        "workdir": ns.MOUNT,
        "writable": [ns.MOUNT, "/tmp", "/dev/shm"],
        "timeout": limits.timeout,
        "deadline": start + limits.timeout,
        "limits": {
            "cpu_seconds": limits.cpu_seconds,
            "memory_mb": limits.memory_mb,
            "file_size_mb": limits.file_size_mb,
            "allow_subprocess": limits.allow_subprocess,
        },
    }
    job = json.dumps(payload).encode("utf-8", "surrogatepass")
    if runs_direct(backend):
        result, channel = _execute_direct(job, stdin=stdin, limits=limits, start=start)
    else:
        from ._code_runs import run_job

        result, channel = run_job(backend, job, stdin=stdin, limits=limits, started=start, report_cap=_REPORT_CAP,
                                  flags=_PYTHON_FLAGS)
    records = parse_records(channel, token)
    if result.returncode is not None:
        result = _signal_status(result)
        reported = next((r["limit"] for r in records
                         if r.get("kind") == "limit" and r.get("limit") in _LIMIT_NAMES), None)
        if reported is not None:  # not killed by the supervisor: the harness's word comes first
            result = replace(result, limit=reported)
    return result, records


def runs_direct(backend: SandboxBackend) -> bool:
    """Whether ``backend`` is the built-in bubblewrap, which code runs use directly (a fresh tmpfs and uid
    per run); any other goes through the backend interface (:mod:`._code_runs`)."""
    from .backends._bubblewrap import BubblewrapBackend

    return type(backend) is BubblewrapBackend


def _execute_direct(job: bytes, *, stdin: str | None, limits: SandboxLimits,
                    start: float) -> tuple[SandboxResult, bytes]:
    """The job under bubblewrap started here: the payload and the report travel over inherited descriptors."""
    python, needed = venv_python()  # this interpreter, so the environment's packages import
    jail = ns.Jail(workspace="", home="", tmp="", uid=_fresh_uid(), gid=ns.SANDBOX_UID,
                   extra_ro=(*needed, CHILD_DIR), scratch_bytes=limits.disk_mb << 20)
    rlimits = ns.Rlimits(cpu_seconds=limits.cpu_seconds, memory_mb=limits.memory_mb, processes=limits.processes,
                         file_size_mb=limits.file_size_mb)
    env = {**minimal_env(ns.MOUNT), "TMPDIR": "/tmp"}
    # The child inherits the payload file's descriptor and reads it from offset 0.
    with tempfile.TemporaryFile() as payload_file, ResultPipe(_REPORT_CAP) as pipe:
        payload_file.write(job)
        payload_file.flush()
        payload_file.seek(0)
        info_r, info_w = os.pipe()
        try:
            argv = ns.command_line(
                jail, [python, *_PYTHON_FLAGS, BOOTSTRAP, str(payload_file.fileno()), str(pipe.write_fd)],
                env=env, rlimits=rlimits, info_fd=info_w)
        except BaseException:
            os.close(info_r)
            os.close(info_w)
            raise
        watch = ns.Watch(info_r, (), budget=0, max_entries=0, armed=False)
        watch.start()
        try:
            completed = run_process(
                argv, cwd="/", env=ns.LAUNCHER_ENV, limits=limits, stdin=stdin,
                pass_fds=(payload_file.fileno(), info_w), result_pipe=pipe, isolate_network=False, started=start)
        finally:
            os.close(info_w)
            watch.finish()
    return completed.result, completed.channel


def _encode_files(files: Mapping[str, str | bytes] | None) -> dict[str, str]:
    """``files`` as relative path -> base64; raises ``ValueError`` for paths escaping the work dir."""
    out: dict[str, str] = {}
    for name, content in (files or {}).items():
        rel = os.path.normpath(str(name))
        if os.path.isabs(rel) or rel == "." or rel.split(os.sep)[0] == "..":
            raise ValueError(f"sandbox file name must be a relative path inside the work dir: {name!r}")
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        out[rel] = base64.b64encode(data).decode("ascii")
    return out


def _signal_status(result: SandboxResult) -> SandboxResult:
    """bubblewrap reports a child killed by signal N as exit status 128 + N: turn it back into -N (a
    program exiting with such a status itself is indistinguishable), and a SIGXCPU death into ``"cpu"``."""
    rc = result.returncode
    if rc is None or not 128 < rc < 128 + signal.NSIG:
        return result
    rc = -(rc - 128)
    limit = result.limit or ("cpu" if -rc == signal.SIGXCPU else None)
    return replace(result, returncode=rc, limit=limit)


def parse_records(data: bytes, token: str) -> list[dict]:
    """The JSON-lines records in ``data`` that carry ``token``; anything else is ignored."""
    records: list[dict] = []
    for line in data.split(b"\n"):
        if not line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("t") == token:
            records.append(rec)
    return records
