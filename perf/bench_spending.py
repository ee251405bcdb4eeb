#!/usr/bin/env python
"""Benchmark: what ``--ifbench-max-cost`` costs a run's calls.

1. **The ledger alone.** ``--pairs`` start/end pairs (one call's bookkeeping: lock, read, write, twice)
   in one process, then the same split over ``--processes`` processes hammering the one file at once:
   microseconds per pair.
2. **Calls.** ``--calls`` calls of ``openai/gpt-4o-mini`` (a priced model, on the OpenAI SDK route) to
   the project's stub answering after ``--latency`` seconds, at concurrency 16 and 64, each in a fresh
   subprocess, without and with a limit no call reaches: wall time and CPU per call. With a limit the
   run's first call goes alone (no price is known before it), so the wall time grows by about one
   call's latency; the rest is the ledger's bookkeeping.

Usage (from the repository root)::

    python perf/bench_spending.py
    python perf/bench_spending.py --calls 400 --latency 0.2 --repeat 3 --json spending.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))

from _common import source_revision

from pytest_ifbench.models.spending import SpendingLimit
from pytest_ifbench.testing import FAKE_API_KEY, StubServer

#: One run of calls, in a fresh interpreter: argv = url, calls, concurrency, limit ("" for none).
_CALLS = """
import asyncio, json, resource, sys, tempfile, time
from pathlib import Path
from pytest_ifbench._types import GenerationParams
from pytest_ifbench.models.client import RetryPolicy
from pytest_ifbench.models.openai_compat import close_sessions
from pytest_ifbench.models.providers import make_client
from pytest_ifbench.models.spending import SpendingLimit

url, calls, concurrency, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ledger = SpendingLimit.create(Path(tempfile.mkdtemp()) / "ledger", float(limit)) if limit else None
client = make_client("openai/gpt-4o-mini", api_base=url, retry=RetryPolicy(max_attempts=1), spending=ledger)

async def main():
    global ledger
    gate = asyncio.Semaphore(concurrency)
    async def one(i):
        async with gate:
            await client.complete([{"role": "user", "content": f"question {i}"}], GenerationParams(max_tokens=16))
    await one(-1)  # the connection pool warmed up, outside the timing (the ledger then knows a price)
    if ledger is not None:
        ledger = SpendingLimit.create(ledger.path, float(limit))  # ... but not the run's first call: a new ledger
        client.spending = ledger
    before, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(calls)))
    wall, after = time.perf_counter() - wall, resource.getrusage(resource.RUSAGE_SELF)
    await close_sessions()
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "paid": None if ledger is None else ledger.status().calls}

print(json.dumps(asyncio.run(main())))
"""


def _pairs(path: str, count: int, ready, go) -> None:
    ledger = SpendingLimit(Path(path))
    ready.wait()
    go.wait()
    for _ in range(count):
        ledger.end(ledger.start(wait=False), 1e-9)


def ledger_pairs(pairs: int, processes: int) -> tuple[float, float]:
    """Microseconds per start/end pair: in this process, and over ``processes`` processes at once."""
    with tempfile.TemporaryDirectory() as directory:
        ledger = SpendingLimit.create(Path(directory) / "ledger", 1e9)
        start = time.perf_counter()
        for _ in range(pairs):
            ledger.end(ledger.start(wait=False), 1e-9)
        alone = (time.perf_counter() - start) / pairs * 1e6
        context = multiprocessing.get_context("spawn")
        ready, go = context.Barrier(processes + 1), context.Event()
        workers = [context.Process(target=_pairs, args=(str(ledger.path), pairs // processes, ready, go))
                   for _ in range(processes)]
        for worker in workers:
            worker.start()
        ready.wait()
        start = time.perf_counter()
        go.set()
        for worker in workers:
            worker.join()
        shared = (time.perf_counter() - start) / (pairs // processes * processes) * 1e6
        assert ledger.status().calls == pairs + pairs // processes * processes
        return alone, shared


def calls(url: str, count: int, concurrency: int, limit: str) -> dict:
    env = dict(os.environ, OPENAI_API_KEY=FAKE_API_KEY, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", _CALLS, url, str(count), str(concurrency), limit],
                          capture_output=True, text=True, env=env, timeout=600)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=3, help="runs per row; the lowest CPU is kept")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    alone, shared = ledger_pairs(args.pairs, args.processes)
    print(f"ledger: {alone:.1f} us per start/end pair in one process; {shared:.1f} us per pair with "
          f"{args.processes} processes at once")
    rows = []
    with StubServer(latency=args.latency) as stub:
        print("| concurrency | limit | wall s | CPU ms per call |")
        print("|---:|---|---:|---:|")
        for concurrency in (16, 64):
            for limit in ("", "1000"):
                runs = [calls(stub.url, args.calls, concurrency, limit) for _ in range(args.repeat)]
                best = min(runs, key=lambda r: r["cpu_s"])
                rows.append({"concurrency": concurrency, "limit": limit or None, **best,
                             "walls": [round(r["wall_s"], 3) for r in runs]})
                print(f"| {concurrency} | {'$' + limit if limit else 'none'} | {best['wall_s']:.2f} "
                      f"| {best['cpu_s'] / args.calls * 1000:.2f} |")
    if args.json is not None:
        args.json.write_text(json.dumps({
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()},
            "revision": source_revision(), "settings": vars(args) | {"json": str(args.json)},
            "ledger_us_per_pair": {"one_process": alone, "processes": shared}, "calls": rows,
        }, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
