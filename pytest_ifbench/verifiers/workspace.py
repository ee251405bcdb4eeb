"""Deterministic checks on an agent run's final workspace, run inside the sandbox.

They use only ``ctx.workspace.run(command, *, limits=...)`` (``agents.workspace.Workspace``: the command runs
contained in the run's final working directory and returns ``returncode, stdout, stderr, duration, limit``).
Files are read with ``head -c`` inside the sandbox, never through the host filesystem, so a symlink the agent
left cannot point a check outside the workspace. Paths are relative to the workspace. Each check raises
("... needs an agent run") when the instance has no workspace: an error outcome, never a pass.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from .._params import Param, ParamError
from .._registry import Verifier
from .._types import Verdict
from ._patterns import MULTILINE, compile_pattern

#: Seconds a file test or read may take.
FILE_TIMEOUT = 30.0


def _workspace_of(ctx: Any, verifier_id: str) -> Any:
    workspace = getattr(ctx, "workspace", None)
    if workspace is None:
        raise RuntimeError(f"{verifier_id} needs an agent run: this instance has no final workspace")
    return workspace


def _limits(timeout: float) -> Any:
    from ..agents.workspace import Limits

    return Limits(timeout=timeout)


def _run(ctx: Any, verifier_id: str, command: str, timeout: float) -> Any:
    return _workspace_of(ctx, verifier_id).run(command, limits=_limits(timeout))


def _tail(text: str, limit: int = 1000) -> str:
    text = text or ""
    return text if len(text) <= limit else "..." + text[-limit:]


def _failure(verifier_id: str, what: str, result: Any) -> RuntimeError:
    detail = _tail(result.stderr or result.stdout, 300).strip()
    limit = f", limit {result.limit}" if result.limit else ""
    return RuntimeError(f"{verifier_id}: could not {what} (exit {result.returncode}{limit}): {detail}")


def file_exists(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """The path exists in the final workspace (with ``negate``: it does not)."""
    path = params["path"]
    result = _run(ctx, "ifbench.file_exists", f"test -e {shlex.quote(path)}", FILE_TIMEOUT)
    if result.returncode not in (0, 1):
        raise _failure("ifbench.file_exists", f"test {path!r}", result)
    exists = result.returncode == 0
    return Verdict(passed=exists != params["negate"], evidence=f"{path} {'exists' if exists else 'does not exist'}")


def _check_contains(params: Mapping[str, Any]) -> None:
    if (params["text"] is None) == (params["pattern"] is None):
        raise ParamError("text", "give exactly one of text and pattern")
    if params["pattern"] is not None:
        compile_pattern(params["pattern"], MULTILINE)


def file_contains(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """The file contains the text or a match of the pattern (``negate``: it does not; a missing file does
    not contain anything). Only the first ``max_bytes`` bytes are searched; the pattern is multiline."""
    path, cap = params["path"], params["max_bytes"]
    quoted = shlex.quote(path)  # a FIFO or device would block head or never end: not a file to read
    result = _run(ctx, "ifbench.file_contains", f"if [ -e {quoted} ] && [ ! -f {quoted} ]; then "
                  f"echo 'not a regular file' >&2; exit 2; fi; exec head -c {cap + 1} -- {quoted}", FILE_TIMEOUT)
    if result.returncode is None and result.limit != "output":
        raise _failure("ifbench.file_contains", f"read {path!r}", result)
    if result.returncode not in (0, None):
        reason = _tail(result.stderr, 200).strip() or f"exit {result.returncode}"
        return Verdict(passed=params["negate"], evidence=f"cannot read {path}: {reason}")
    body = result.stdout or ""
    cut = result.limit == "output" or len(body.encode("utf-8", "replace")) > cap
    if params["pattern"] is not None:
        match = compile_pattern(params["pattern"], MULTILINE).search(body)
        start, shown = (match.start(), match.group(0)) if match else (-1, "")
        what = f"/{params['pattern']}/"
    else:
        start, shown, what = body.find(params["text"]), params["text"], repr(params["text"])
    found = start >= 0
    evidence = f"{path} {'contains' if found else 'does not contain'} {what}"
    if found:
        evidence += f" (line {body.count(chr(10), 0, start) + 1}: {shown[:80]!r})"
    if cut:
        evidence += f"; only its first {cap} bytes were searched"
    return Verdict(passed=found != params["negate"], evidence=evidence, details={"truncated": cut})


def _check_command(params: Mapping[str, Any]) -> None:
    if params["stdout_pattern"] is not None:
        compile_pattern(params["stdout_pattern"], MULTILINE, param="stdout_pattern")


def workspace_command(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """The command, run in the final workspace through the sandbox, exits with ``exit_code`` (and its
    stdout matches ``stdout_pattern``); a command the sandbox stopped (timeout, output cap...) fails."""
    result = _run(ctx, "ifbench.workspace_command", params["command"], params["timeout"])
    problems = []
    if result.returncode is None:
        problems.append(f"stopped by the {result.limit or 'sandbox'} limit" + (
            f" after {params['timeout']:g}s" if result.limit == "timeout" else ""))
    elif result.returncode != params["exit_code"]:
        limit = f"; the sandbox reported the {result.limit} limit" if result.limit else ""
        problems.append(f"exit {result.returncode} (expected {params['exit_code']}){limit}")
    pattern = params["stdout_pattern"]
    if pattern is not None and not compile_pattern(pattern, MULTILINE).search(result.stdout or ""):
        problems.append(f"stdout does not match /{pattern}/")
    evidence = "; ".join(problems) or f"exit {result.returncode}" + (f", stdout matches /{pattern}/" if pattern else "")
    evidence += f"\nstdout: {_tail(result.stdout, 600)}" if result.stdout else ""
    evidence += f"\nstderr: {_tail(result.stderr, 600)}" if result.stderr and problems else ""
    return Verdict(passed=not problems, evidence=evidence, details={
        "returncode": result.returncode, "limit": result.limit, "duration": round(result.duration, 3)})


def register(registry) -> None:
    path = Param(str, description="relative to the workspace")
    negate = Param(bool, default=False, description="require the opposite")
    registry.add(Verifier(
        id="ifbench.file_exists", reads_workspace=True, func=file_exists, params={"path": path, "negate": negate},
        description="The path exists in the agent's final workspace (negate: it does not).",
    ))
    registry.add(Verifier(
        id="ifbench.file_contains", reads_workspace=True, func=file_contains, check_params=_check_contains,
        params={"path": path, "text": Param(str, default=None), "pattern": Param(str, default=None),
                "negate": negate, "max_bytes": Param(int, default=100_000, min=1, max=10_000_000)},
        description="A file of the final workspace contains the text or pattern (negate: it does not).",
    ))
    registry.add(Verifier(
        id="ifbench.workspace_command", reads_workspace=True, func=workspace_command, check_params=_check_command,
        params={"command": Param(str, description="a shell command, e.g. the project's tests"),
                "exit_code": Param(int, default=0), "stdout_pattern": Param(str, default=None),
                "timeout": Param(float, default=60.0, min=1, max=3600)},
        description="A command run in the final workspace (sandboxed) exits with exit_code.",
    ))
