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
