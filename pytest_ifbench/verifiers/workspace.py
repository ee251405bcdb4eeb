"""Deterministic checks on an agent run's final workspace, run inside the sandbox.

They use only ``ctx.workspace.run(command, *, limits=...)`` (``agents.workspace.Workspace``: the command runs
contained in the run's final working directory and returns ``returncode, stdout, stderr, duration, limit``).
Files are read with ``head -c`` inside the sandbox, never through the host filesystem, so a symlink the agent
left cannot make a check read the host's files. Paths are relative to the workspace and resolved in the
sandbox (``realpath -e``): ``file_contains`` reads only a regular file whose resolved path lies in the
workspace (a link to a system file, ``/dev/null`` or ``/proc/self/...`` is not the agent's file: the check
fails), while ``file_exists`` tests the name (a venv's ``bin/python -> /usr/bin/python3`` exists; the
evidence says where it leads). Only a missing file (no such file, or a parent that is not a directory)
satisfies a negation: one that cannot be reached or read (a directory the check may not search, a file
chmodded 000, a FIFO), or a negated ``file_contains`` not read to its end (``max_bytes``), fails. Each check
raises ("... needs an agent run") when the instance has no workspace, and a file check raises when its command
gave no answer of its own (the sandbox could not start it, ``realpath`` is missing): errors, never passes.
(``workspace_command`` cannot tell a sandbox that did not start from its command's exit 1: that is the
backend's to report.)
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


#: Resolves the path (``realpath -e``, links followed as the sandbox sees them) and tells a missing file
#: (exit 3, ``ifbench:missing``; "No such file or directory" or "Not a directory") from one that cannot be
#: reached (exit 4: a directory the check may not search, a loop of links): only the first may pass a negation.
#: An exit without the script's marker (bwrap's own 1 when the sandbox could not start, 127 without
#: ``realpath``) is no answer: the check errors.
_RESOLVE = """export LC_ALL=C
command -v realpath >/dev/null 2>&1 || {{ echo 'realpath: not found' >&2; exit 127; }}
if ! r=$(realpath -e -- {path} 2>&1); then
  case $r in *': No such file or directory'|*': Not a directory') echo ifbench:missing; exit 3;; esac
  printf '%s\\n' "$r" >&2; exit 4
fi
top=$(pwd -P)
case $r in "$top"|"$top"/*) inside=1;; *) inside=;; esac
"""
#: The verdicts' markers on stdout, beside the exit status: bwrap's own failure can print neither.
_MISSING = "ifbench:missing"
_OUTSIDE = "ifbench:outside "
_SIZE = "ifbench:size "


def _missing(result: Any) -> bool:
    return result.returncode == 3 and (result.stdout or "").strip() == _MISSING


def _reason(result: Any) -> str:
    return _tail(result.stderr, 200).strip() or f"exit {result.returncode}"


def file_exists(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """The path exists in the final workspace (with ``negate``: it does not). A path the check cannot reach
    (a directory it may not search) fails either way: only a missing one is missing."""
    path = params["path"]
    script = _RESOLVE.format(path=shlex.quote(path)) + (
        'if [ -n "$inside" ]; then echo ifbench:exists; else printf \'ifbench:exists-outside %s\\n\' "$r"; fi')
    result = _run(ctx, "ifbench.file_exists", script, FILE_TIMEOUT)
    out = result.stdout or ""
    if _missing(result):
        return Verdict(passed=params["negate"], evidence=f"{path} does not exist")
    if result.returncode == 4:
        return Verdict(passed=False, evidence=f"cannot tell whether {path} exists: {_reason(result)}")
    if result.returncode != 0 or not out.startswith("ifbench:exists"):
        raise _failure("ifbench.file_exists", f"test {path!r}", result)
    evidence = f"{path} exists"
    if out.startswith("ifbench:exists-outside "):  # e.g. a venv's bin/python -> /usr/bin/python3: still a name here
        evidence += f" (a link leading outside the workspace, to {out.split(' ', 1)[1].rstrip(chr(10))})"
    return Verdict(passed=not params["negate"], evidence=evidence)


def _check_contains(params: Mapping[str, Any]) -> None:
    if (params["text"] is None) == (params["pattern"] is None):
        raise ParamError("text", "give exactly one of text and pattern")
    if params["pattern"] is not None:
        compile_pattern(params["pattern"], MULTILINE)


def file_contains(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """The file contains the text or a match of the pattern (``negate``: it does not; a missing file does
    not contain anything). Only the first ``max_bytes`` bytes are searched; the pattern is multiline.

    Only a regular file of the workspace is read: a path that leads out of it (a link to a system file, to
    ``/dev/null``, to ``/proc/self/cmdline``), a FIFO, device or directory, or a file that cannot be read
    fails the check either way, and so does a negation when the file is longer than ``max_bytes`` and the
    part read does not hold it (the rest might)."""
    path, cap = params["path"], params["max_bytes"]
    script = _RESOLVE.format(path=shlex.quote(path)) + (  # a FIFO or device would block head or never end
        f'[ -n "$inside" ] || {{ printf \'{_OUTSIDE}%s\\n\' "$r"; exit 5; }}\n'
        "[ -f \"$r\" ] || { echo 'not a regular file' >&2; exit 6; }\n"
        'size=$(wc -c <"$r") || exit 7\n'
        f"printf '{_SIZE}%s\\n' $size\n"
        f'exec head -c {cap} -- "$r"')
    result = _run(ctx, "ifbench.file_contains", script, FILE_TIMEOUT)
    out = result.stdout or ""
    if _missing(result):
        return Verdict(passed=params["negate"], evidence=f"cannot read {path}: it does not exist")
    if result.returncode == 5 and out.startswith(_OUTSIDE):
        where = out[len(_OUTSIDE):].rstrip("\n")
        return Verdict(passed=False, evidence=f"cannot read {path}: it leads outside the workspace, to {where}")
    header, _, body = out.partition("\n")
    sized = header.startswith(_SIZE) and header[len(_SIZE):].isdigit()  # printed just before head started
    if result.returncode in (4, 6, 7) or (sized and result.returncode not in (0, None)):
        return Verdict(passed=False, evidence=f"cannot read {path}: {_reason(result)}")
    if not sized or (result.returncode is None and result.limit != "output"):
        raise _failure("ifbench.file_contains", f"read {path!r}", result)
    size = int(header[len(_SIZE):])
    cut = result.limit == "output" or size > cap
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
    passed = found != params["negate"]
    if cut:
        evidence += f"; only its first {cap} bytes (of {size}) were searched"
        if passed and not found:  # negated: the rest may hold it
            passed, evidence = False, evidence + ": the rest may hold it, so it cannot be said not to"
    return Verdict(passed=passed, evidence=evidence, details={"truncated": cut, "size": size})


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
