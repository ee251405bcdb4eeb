"""``reference`` mode of the checks that execute code: the authors' unit-test run and their
instruction-following code checker, each reproduced in one sandboxed child.

* unit tests (their ``check_correctness_per_assertion``): every line of the tests that starts
  with ``assert`` runs as ``code + "\\n\\n" + line`` in a fresh, empty globals dict (so
  module state never carries from one assert to the next), under their
  process guard (``os.kill``, ``os.remove``… and ``exit``/``quit`` set to None), with standard
  input unreadable, output swallowed and a per-assert alarm of 5 s (their evaluator's default);
* IF code checks (their ``execute_function``): an empty reply is excluded; every line the
  pattern ``^\\s*(import\\s+\\S+|from\\s+\\S+\\s+import\\s+\\S+)`` finds runs in the evaluator
  module's globals, then the checker source runs with those globals and a separate locals dict
  (so top-level helpers and constants are invisible to ``check_following``); an exception, or
  no ``check_following``, excludes the constraint. The globals hold the evaluator's imported
  names (``re``, ``json``, ``os``, ``time``, ``logging``, ``argparse``, ``importlib``, ``Path``,
  ``datetime``, ``defaultdict``, the executors; ``tqdm`` is a pass-through stand-in), not its
  own functions.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

#: Their evaluator's ``--timeout`` default, seconds per assert.
ASSERT_SECONDS = 5.0

_GUARD = """
import builtins as _b, os as _os
for _name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork",
              "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown",
              "chmod", "chown", "chroot", "lchflags", "lchmod", "lchown"):
    setattr(_os, _name, None)
_b.exit = None
_b.quit = None
"""

_ASSERTS = """
import contextlib, io, json, signal, sys
_payload = json.loads(sys.stdin.read())
_real_out = sys.stdout

class _Timeout(Exception):
    pass

class _WriteOnly(io.StringIO):
    def read(self, *a, **k): raise OSError("Cannot read from WriteOnlyStringIO")
    def readline(self, *a, **k): raise OSError("Cannot read from WriteOnlyStringIO")
    def readlines(self, *a, **k): raise OSError("Cannot read from WriteOnlyStringIO")
    def readable(self, *a, **k): return False

def _alarm(signum, frame):
    raise _Timeout("Timed out!")

_results = []
for _line in _payload["asserts"]:
    _sink = _WriteOnly()
    _saved_in = sys.stdin
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, _payload["seconds"])
    try:
        with contextlib.redirect_stdout(_sink), contextlib.redirect_stderr(_sink):
            sys.stdin = _sink
            try:
                exec(_payload["code"] + "\\n\\n" + _line, {})
            finally:
                sys.stdin = _saved_in
        _results.append([True, "passed"])
    except _Timeout:
        _results.append([False, "timed out"])
    except AssertionError as _exc:
        _results.append([False, f"assertion error: {_exc}"])
    except BaseException as _exc:
        _results.append([False, f"error: {type(_exc).__name__}: {_exc}"])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
print(_payload["marker"] + json.dumps(_results), file=_real_out)
"""

_IF_CODE = """
import builtins, json, re as _re, sys
_payload = json.loads(sys.stdin.read())
import argparse, importlib, importlib.resources, logging, os, re, time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from datetime import datetime
from pathlib import Path
def tqdm(iterable=None, *args, **kwargs):  # a stand-in: importing tqdm would double the start-up time
    return iterable
_globals = {
    "__name__": "manyih.instruction_following.evaluator", "__package__": "manyih.instruction_following",
    "__doc__": None, "__builtins__": builtins.__dict__,
    "argparse": argparse, "importlib": importlib, "json": json, "logging": logging, "os": os, "re": re,
    "time": time, "defaultdict": defaultdict, "ProcessPoolExecutor": ProcessPoolExecutor,
    "ThreadPoolExecutor": ThreadPoolExecutor, "as_completed": as_completed, "datetime": datetime, "Path": Path,
    "tqdm": tqdm,
}
_code, _response = _payload["code"], _payload["response"]
_value, _error = None, None
try:
    if not _response:
        _error = "Empty response"
    else:
        _locals = {"response": _response}
        for _stmt in _re.findall(r"^\\s*(import\\s+\\S+|from\\s+\\S+\\s+import\\s+\\S+)", _code, _re.MULTILINE):
            exec(_stmt, _globals)
        exec(_code, _globals, _locals)
        if "check_following" in _locals:
            _value = _locals["check_following"](_locals["response"])
        else:
            _error = "check_following not defined"
except BaseException as _exc:
    _error = f"{type(_exc).__name__}: {_exc}"
if _error is not None:
    _out = {"kind": "error", "text": _error[:300]}
elif isinstance(_value, (bool, str)) or _value is None:
    _out = {"kind": type(_value).__name__, "value": _value}
else:
    _out = {"kind": "other", "truthy": bool(_value), "text": repr(_value)[:200]}
print(_payload["marker"] + json.dumps(_out))
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class AssertRun:
    ran: bool
    results: list[tuple[bool, str]]
    problem: str = ""


def run_reference_asserts(code: str, asserts: Sequence[str], limits: Any) -> AssertRun:
    """Every assert line against ``code`` the authors' way, in one sandboxed child."""
    from pytest_ifbench.sandbox import run_python

    marker = f"@@manyih-{secrets.token_hex(8)}@@"
    budget = ASSERT_SECONDS * len(asserts) + 5
    limits = replace(limits, timeout=max(limits.timeout, budget), cpu_seconds=max(limits.cpu_seconds, int(budget)))
    payload = {"code": code, "asserts": list(asserts), "seconds": ASSERT_SECONDS, "marker": marker}
    result = run_python(_GUARD + _ASSERTS, stdin=json.dumps(payload), limits=limits)
    found = [line[len(marker):] for line in result.stdout.splitlines() if line.startswith(marker)]
    if not found:
        tail = "\n".join(result.stderr.strip().splitlines()[-3:]) or result.limit or f"exit code {result.returncode}"
        return AssertRun(ran=False, results=[], problem=tail)
    return AssertRun(ran=True, results=[(bool(ok), str(text)) for ok, text in json.loads(found[-1])])


def reference_if_response(reply: str) -> str:
    """The reply as the authors' IF evaluator hands it to a checker: stripped, and after a
    ``</think>`` the text between the first and the second one."""
    reply = reply.strip()
    if "</think>" in reply:
        reply = reply.split("</think>")[1].strip()
    return reply


def run_reference_if_code(code: str, reply: str, limits: Any) -> dict[str, Any]:
    """``{"kind": "bool"|"str"|"NoneType"|"other"|"error", ...}``: what ``check_following`` gave."""
    from pytest_ifbench.sandbox import run_python

    marker = f"@@manyih-{secrets.token_hex(8)}@@"
    payload = {"code": code, "response": reference_if_response(reply), "marker": marker}
    result = run_python(_IF_CODE, stdin=json.dumps(payload), limits=limits)
    found = [line[len(marker):] for line in result.stdout.splitlines() if line.startswith(marker)]
    if not found or result.limit is not None:
        tail = "\n".join(result.stderr.strip().splitlines()[-3:]) or result.limit or f"exit code {result.returncode}"
        return {"kind": "error", "text": f"the checker did not finish: {tail}"}
    return json.loads(found[-1])


def if_score(outcome: dict[str, Any]) -> tuple[bool | None, str]:
    """(score, evidence) as the authors' evaluator scores the constraint: None = excluded.

    A string is read for ``YES`` then ``NO``; ``True`` passes; any other value is kept as the score,
    which their ISR reads by truthiness (``all``) -- so a truthy non-bool passes here.
    """
    kind = outcome["kind"]
    if kind == "error":
        return None, f"excluded: the checker failed ({outcome['text']})"
    if kind == "NoneType":
        return None, "excluded: check_following returned None"
    if kind == "bool":
        return outcome["value"], f"check_following returned {outcome['value']}"
    if kind == "str":
        text = outcome["value"]
        if "YES" in text:
            return True, "check_following returned a string containing YES"
        if "NO" in text:
            return False, "check_following returned a string containing NO"
        return None, "excluded: check_following returned a string with neither YES nor NO"
    return outcome["truthy"], f"check_following returned {outcome['text']} (not a bool; read by truthiness)"
