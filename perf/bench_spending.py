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
3. **A ledger shared by shards** (``--ifbench-max-cost-ledger``), when ``redis-server`` is installed: the
   same, against a redis-server this script starts on 127.0.0.1 (one Lua script per start and per end:
   a round trip each).

Usage (from the repository root)::

    python perf/bench_spending.py
    python perf/bench_spending.py --calls 400 --latency 0.2 --repeat 3 --json spending.json
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import multiprocessing
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))

from _common import source_revision

from pytest_ifbench.models.spending import SpendingLimit
from pytest_ifbench.testing import FAKE_API_KEY, StubServer

#: One run of calls, in a fresh interpreter: argv = url, calls, concurrency, limit ("" for none), the Redis
#: URL of a shared ledger ("" for the run's own file).
_CALLS = """
import asyncio, json, resource, sys, tempfile, time, uuid
from pathlib import Path
from pytest_ifbench._types import GenerationParams
from pytest_ifbench.models.client import RetryPolicy
from pytest_ifbench.models.openai_compat import close_sessions
from pytest_ifbench.models.providers import make_client
from pytest_ifbench.models.spending import SpendingLimit

url, calls, concurrency, limit, shared = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]

def new_ledger():
    if shared:
        from pytest_ifbench.scale.shared_ledger import RedisLedger
        return RedisLedger(f"{shared}/bench-{uuid.uuid4().hex}", float(limit))
    return SpendingLimit.create(Path(tempfile.mkdtemp()) / "ledger", float(limit))

ledger = new_ledger() if limit else None
client = make_client("openai/gpt-4o-mini", api_base=url, retry=RetryPolicy(max_attempts=1), spending=ledger)

async def main():
    global ledger
    gate = asyncio.Semaphore(concurrency)
    async def one(i):
        async with gate:
            await client.complete([{"role": "user", "content": f"question {i}"}], GenerationParams(max_tokens=16))
    await one(-1)  # the connection pool warmed up, outside the timing (the ledger then knows a price)
    if ledger is not None:
        ledger = new_ledger()  # ... but not the run's first call: a new ledger
        client.spending = ledger
    before, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(calls)))
    wall, after = time.perf_counter() - wall, resource.getrusage(resource.RUSAGE_SELF)
    await close_sessions()
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "paid": None if ledger is None else ledger.status().calls}

print(json.dumps(asyncio.run(main())))
"""


def _open(where: str) -> Any:
    """The ledger at ``where``: a file's path, or a shared ledger's Redis URL."""
    if where.startswith("redis://"):
        from pytest_ifbench.scale.shared_ledger import RedisLedger

        return RedisLedger(where, 1e9)
    return SpendingLimit(Path(where))


def _pairs(where: str, count: int, ready, go) -> None:
    ledger = _open(where)
    ready.wait()
    go.wait()
    for _ in range(count):
        ledger.end("bench", ledger.start("bench", wait=False), 1e-9)
    _flushed(ledger)
    ledger.close()


def _flushed(ledger: Any) -> None:
    """Every settlement sent (a shared ledger's thread sends them)."""
    if hasattr(ledger, "flush"):
        assert ledger.flush()


def ledger_pairs(pairs: int, processes: int, redis: str = "") -> tuple[float, float]:
    """Microseconds per start/end pair: in this process, and over ``processes`` processes at once (on a
    file, or on a shared ledger in the Redis at ``redis``)."""
    with tempfile.TemporaryDirectory() as directory:
        where = f"{redis}/bench-pairs-{os.getpid()}" if redis else str(Path(directory) / "ledger")
        if not redis:
            SpendingLimit.create(Path(where), 1e9)
        ledger = _open(where)
        start = time.perf_counter()
        for _ in range(pairs):
            ledger.end("bench", ledger.start("bench", wait=False), 1e-9)
        _flushed(ledger)
        alone = (time.perf_counter() - start) / pairs * 1e6
        context = multiprocessing.get_context("spawn")
        ready, go = context.Barrier(processes + 1), context.Event()
        workers = [context.Process(target=_pairs, args=(where, pairs // processes, ready, go))
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
        ledger.close()
        return alone, shared


@contextlib.contextmanager
def farther(url: str, delay: float) -> Iterator[tuple[str, float]]:
    """``url``'s Redis behind a relay that holds every chunk ``delay`` seconds each way (a store on another
    host): the relay's URL and the round trip measured through it (a PING, median of 50)."""
    import asyncio
    import statistics
    import threading

    import redis as redis_py

    target = int(url.rsplit(":", 1)[1].split("/")[0])
    loop = asyncio.new_event_loop()
    bound: list[int] = []

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):  # (a client that closes its connection at the end)
            while chunk := await reader.read(65536):
                await asyncio.sleep(delay)
                writer.write(chunk)
        writer.close()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", target)
        await asyncio.gather(pump(reader, upstream_writer), pump(upstream_reader, writer), return_exceptions=True)

    async def serve() -> None:
        server = await asyncio.start_server(relay, "127.0.0.1", 0)
        bound.append(server.sockets[0].getsockname()[1])
        await asyncio.Event().wait()

    thread = threading.Thread(target=lambda: loop.run_until_complete(serve()), daemon=True)
    thread.start()
    while not bound:
        time.sleep(0.01)
    relayed = f"redis://127.0.0.1:{bound[0]}/0"
    client = redis_py.Redis.from_url(relayed)
    client.ping()
    trips = []
    for _ in range(50):
        start = time.perf_counter()
        client.ping()
        trips.append(time.perf_counter() - start)
    client.close()
    yield relayed, statistics.median(trips)


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A redis-server on 127.0.0.1 (no persistence) for the shared ledger's rows: its URL, or "" when
    none is installed."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield ""
        return
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(10)


def calls(url: str, count: int, concurrency: int, limit: str, shared: str = "") -> dict:
    env = dict(os.environ, OPENAI_API_KEY=FAKE_API_KEY, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", _CALLS, url, str(count), str(concurrency), limit, shared],
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
    parser.add_argument("--redis-delay-ms", type=float, default=0.5,
                        help="the shared ledger's far row: its Redis this many ms away each way (0: no such row)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    with redis_server() as redis, contextlib.ExitStack() as far:
        alone, shared = ledger_pairs(args.pairs, args.processes)
        print(f"ledger: {alone:.1f} us per start/end pair in one process; {shared:.1f} us per pair with "
              f"{args.processes} processes at once")
        pairs = {"one_process": alone, "processes": shared}
        if redis:
            alone, shared = ledger_pairs(args.pairs // 4, args.processes, redis)
            print(f"shared ledger (Redis on 127.0.0.1): {alone:.1f} us per start/end pair in one process; "
                  f"{shared:.1f} us per pair with {args.processes} processes at once")
            pairs |= {"redis_one_process": alone, "redis_processes": shared}
        rows = []
        kinds = [("", ""), ("1000", ""), *([("1000", redis)] if redis else [])]
        if redis and args.redis_delay_ms:
            relayed, trip = far.enter_context(farther(redis, args.redis_delay_ms / 1000))
            print(f"shared ledger {args.redis_delay_ms:g} ms away each way: a round trip takes {trip * 1000:.2f} ms")
            pairs["far_round_trip_ms"] = trip * 1000
            kinds.append(("1000", relayed))
        with StubServer(latency=args.latency) as stub:
            print("| concurrency | limit | wall s | CPU ms per call |")
            print("|---:|---|---:|---:|")
            for concurrency in (16, 64):
                for limit, ledger in kinds:
                    runs = [calls(stub.url, args.calls, concurrency, limit, ledger) for _ in range(args.repeat)]
                    best = min(runs, key=lambda r: r["cpu_s"])
                    label = f"${limit}" if limit else "none"
                    if ledger:
                        label += ", shared in Redis" + (" (far)" if ledger != redis else "")
                    rows.append({"concurrency": concurrency, "limit": limit or None, "shared": bool(ledger),
                                 "far": bool(ledger) and ledger != redis, **best,
                                 "walls": [round(r["wall_s"], 3) for r in runs]})
                    per_call = best["cpu_s"] / args.calls * 1000
                    print(f"| {concurrency} | {label} | {best['wall_s']:.2f} | {per_call:.2f} |")
    if args.json is not None:
        args.json.write_text(json.dumps({
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()},
            "revision": source_revision(), "settings": vars(args) | {"json": str(args.json)},
            "ledger_us_per_pair": pairs, "calls": rows,
        }, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
