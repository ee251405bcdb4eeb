"""Parent side: run Python code in the sandbox through the child harness.

Turns one job (a script, or code plus assert tests) into one supervised child:

1. a throwaway working directory (:func:`._workspace.throwaway_workdir`) with
   the caller's ``files`` and, in script mode, the script itself;
2. a job description (JSON: mode, sources, limits, the working directory, the
   absolute monotonic deadline and a fresh random token) in an unlinked
   temporary file the child inherits;
3. a dedicated :class:`._process.ResultPipe`, so the harness's records never
   travel through stdout/stderr, where candidate code could print or close
   them;
4. :func:`._process.run_process` on ``python -s -P -B .../_bootstrap.py
   PAYLOAD_FD REPORT_FD`` with a minimal environment and ``cwd`` = the
   working directory;
5. the records carrying this run's token are kept, and a limit the harness
   reported (``"memory"``, a per-test ``"timeout"``, ``"cpu"``) is folded into
   the result unless the supervisor itself killed the child.

:func:`run_python` is the script front end; the test front ends live in
:mod:`._tests`.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import replace

from ._process import ResultPipe, minimal_env, run_process
from ._types import SandboxLimits, SandboxResult
from ._workspace import throwaway_workdir, write_files

#: The child's entry point, started by file path (see its docstring).
BOOTSTRAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bootstrap.py")

# == ``-I`` without ``-E`` (see the package docstring): keeps PYTHONHASHSEED=0
# effective.  ``-P`` needs Python 3.11, the project's minimum.
_PYTHON_FLAGS: tuple[str, ...] = ("-s", "-P", "-B")

_REPORT_CAP = 8 << 20  # bytes accepted on the report channel

_LIMIT_NAMES = ("timeout", "cpu", "memory", "output")


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
    """Start one harness child for ``payload``, supervise it, return (result, report records)."""
    token = os.urandom(16).hex()
    with throwaway_workdir() as workdir:
        write_files(workdir, files)
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
        # The child inherits the payload file's descriptor and reads it from offset 0.
        with tempfile.TemporaryFile() as payload_file, ResultPipe(_REPORT_CAP) as pipe:
            payload_file.write(json.dumps(payload).encode("utf-8", "surrogatepass"))
            payload_file.flush()
            payload_file.seek(0)
            argv = [sys.executable, *_PYTHON_FLAGS, BOOTSTRAP, str(payload_file.fileno()), str(pipe.write_fd)]
            completed = run_process(
                argv, cwd=workdir, env=minimal_env(workdir), limits=limits, stdin=stdin,
                pass_fds=(payload_file.fileno(),), result_pipe=pipe, started=start)
    records = parse_records(completed.channel, token)
    result = completed.result
    if result.returncode is not None:  # not killed by the supervisor: the harness's word comes first
        reported = next((r["limit"] for r in records
                         if r.get("kind") == "limit" and r.get("limit") in _LIMIT_NAMES), None)
        if reported is not None:
            result = replace(result, limit=reported)
    return result, records


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
