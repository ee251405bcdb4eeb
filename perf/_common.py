"""Helpers shared by the performance scripts (run them as ``python perf/bench_X.py``)."""

from __future__ import annotations

import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

#: ``python -c`` program: ``python -m MODULE ARGS`` (for ``MODULE:FUNCTION``, ``sys.exit(FUNCTION(ARGS))``)
#: that writes, as it exits, a line ``ifbench-perf peak-rss-kb N`` to stderr: the larger of its own
#: VmHWM and what its reaped children (xdist workers) peaked at. Not ``wait4``'s figure: Linux starts
#: a child's maximum RSS at its parent's resident size when it forks and keeps it across exec, so a
#: child smaller than the script that starts it would report the script's size.
_PEAK_RSS_RUNNER = """import atexit, resource, runpy, sys
def _peak():
    own = max([int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM:')] or [0])
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    sys.stderr.write('\\nifbench-perf peak-rss-kb %d\\n' % max(own, children))
    sys.stderr.flush()
atexit.register(_peak)
target = sys.argv[1]
sys.argv = [target, *sys.argv[2:]]
if ':' in target:
    import importlib
    module, function = target.split(':')
    sys.exit(getattr(importlib.import_module(module), function)(sys.argv[1:]))
runpy.run_module(target, run_name='__main__', alter_sys=True)
"""
_PEAK_RSS_LINE = b"ifbench-perf peak-rss-kb "


def module_command(python: str, target: str, *args: str) -> list[str]:
    """``python -m target args`` (``target`` a module, or ``module:function`` for a command without a
    ``__main__``), reporting its peak RSS at exit (read it with :func:`peak_rss_mb`)."""
    return [python, "-c", _PEAK_RSS_RUNNER, target, *args]


def peak_rss_mb(output: bytes | str) -> float | None:
    """The peak RSS a :func:`module_command` reported in its output, in MB (None: it did not get to exit)."""
    data = output.encode() if isinstance(output, str) else output
    start = data.rfind(_PEAK_RSS_LINE)
    if start < 0:
        return None
    return int(data[start + len(_PEAK_RSS_LINE):].split(b"\n", 1)[0]) / 1024


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released): for a server a script starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tail(path: Path, lines: int = 25) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def source_revision() -> dict:
    """The checkout's commit and whether it has local changes (read-only git calls)."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD"), "modified_files": None if status is None else len(status.splitlines())}


def measure(fn: Callable[[], object], repeat: int) -> dict[str, float]:
    """Median and p90 wall time of ``fn`` over ``repeat`` calls, after one warm-up call."""
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    return {"median_ms": round(1000 * statistics.median(times), 2),
            "p90_ms": round(1000 * times[min(len(times) - 1, int(0.9 * len(times)))], 2), "runs": repeat}


def sandbox_backend(name: str) -> Any:
    """The sandbox backend ``name``; exits with status 2 and the reason when it cannot run here."""
    from pytest_ifbench.sandbox import make_backend

    backend = make_backend(name)
    problem = backend.problem()
    if problem is not None:
        print(f"sandbox unavailable: {problem}", file=sys.stderr)
        raise SystemExit(2)
    return backend


def succeeded(result: Any) -> None:
    """Stop the benchmark at a sandboxed command that failed: its figure would time the failure."""
    if not result.ok:
        raise SystemExit(f"command failed: {result}")
