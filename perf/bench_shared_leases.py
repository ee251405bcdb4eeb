#!/usr/bin/env python
"""Benchmark: what leasing each request in the shared cache costs a run's model calls.

Starts the project's stub server (``--latency``, 200 ms by default), a ``redis-server`` and a
moto S3 server on random 127.0.0.1 ports, and sends ``--calls`` distinct requests at
``--concurrency`` through a :class:`~pytest_ifbench.ModelClient` whose response cache has
each store as its shared tier -- with leases, and with the tier told the store has none (then
a request is not leased, but still looked for once in the store before it is sent). A row
without a shared tier is the floor. Every request is a miss, the case leases add requests to.

The stores run on the same machine as the client (moto is a Python server: its requests cost
more than a real S3's CPU, less than its network round trips). Usage::

    python perf/bench_shared_leases.py [--calls 200] [--concurrency 16] [--repeat 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))

from _common import free_port, source_revision

from pytest_ifbench import GenerationParams, ModelClient, ResponseCache
from pytest_ifbench.models.openai_compat import close_sessions
from pytest_ifbench.scale.stores import open_store
from pytest_ifbench.scale.tier import StoreTier
from pytest_ifbench.testing import FAKE_API_KEY, StubServer


def _wait(ready, what: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            ready()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"{what} did not start") from None
            time.sleep(0.1)


def _one_run(url: str | None, leases: bool, args: argparse.Namespace, tag: str) -> tuple[float, int]:
    with StubServer(latency=args.latency) as stub, tempfile.TemporaryDirectory() as scratch:
        tier = None
        if url is not None:
            tier = StoreTier(open_store(url), warn=lambda message: print(message, file=sys.stderr))
            tier.leases = tier.leases and leases
            tier.start()
            tier.wait_ready()
        client = ModelClient(model="openai/stub", api_base=stub.url, cache=ResponseCache(Path(scratch), tier))
        gate = asyncio.Semaphore(args.concurrency)

        async def one(index: int) -> None:
            async with gate:
                await client.complete([{"role": "user", "content": f"{tag} request {index}"}],
                                      GenerationParams(max_tokens=8))

        async def main() -> None:
            try:
                await asyncio.gather(*(one(index) for index in range(args.calls)))
            finally:
                await close_sessions()

        started = time.perf_counter()
        asyncio.run(main())
        wall = time.perf_counter() - started
        if tier is not None:
            tier.close()
        return wall, stub.calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per request (default 0.2)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row; the median is shown")
    parser.add_argument("--json", default=None, metavar="FILE")
    args = parser.parse_args()
    for binary in ("redis-server", "moto_server"):
        if shutil.which(binary) is None:
            raise SystemExit(f"{binary} is not installed (the README's test install line has it)")
    os.environ["OPENAI_API_KEY"] = FAKE_API_KEY
    redis_port, moto_port = free_port(), free_port()
    servers = [subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                                 "--appendonly", "no"], stdout=subprocess.DEVNULL),
               subprocess.Popen(["moto_server", "-H", "127.0.0.1", "-p", str(moto_port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        _wait(lambda: socket.create_connection(("127.0.0.1", redis_port), timeout=0.2).close(), "redis-server")
        endpoint = f"http://127.0.0.1:{moto_port}"
        _wait(lambda: urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close(), "moto_server")
        os.environ.update(AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                          AWS_DEFAULT_REGION="us-east-1")
        import boto3

        boto3.session.Session().client("s3").create_bucket(Bucket="ifbench-leases")
        rows = [("no shared tier", None, False),
                ("Redis, no leases", f"redis://127.0.0.1:{redis_port}/0", False),
                ("Redis, leases", f"redis://127.0.0.1:{redis_port}/0", True),
                ("S3 (moto), no leases", "s3://ifbench-leases/bench", False),
                ("S3 (moto), leases", "s3://ifbench-leases/bench", True)]
        results = []
        for repeat in range(args.repeat):  # rows interleaved, so drift on the machine spreads over all of them
            for number, (name, url, leases) in enumerate(rows):
                wall, calls = _one_run(url, leases, args, f"{repeat}-{number}")
                if calls != args.calls:
                    raise SystemExit(f"{name}: the stub saw {calls} calls, expected {args.calls}")
                results.append({"row": name, "wall_s": wall})
                print(f"  {name}: {wall:.2f} s", file=sys.stderr)
    finally:
        for server in servers:
            server.terminate()
            server.wait()
    ideal = args.calls / args.concurrency * args.latency
    print(f"{args.calls} distinct requests at concurrency {args.concurrency}, stub {args.latency * 1000:.0f} ms "
          f"(ideal {ideal:.2f} s), median of {args.repeat}")
    print("| shared tier | wall (s) | extra per call (ms, wall x concurrency / calls) |")
    print("|---|---:|---:|")
    report = []
    floor = None
    for name, _, _ in rows:
        walls = sorted(r["wall_s"] for r in results if r["row"] == name)
        median = walls[len(walls) // 2]
        floor = median if floor is None else floor
        extra = (median - floor) * args.concurrency / args.calls * 1000
        print(f"| {name} | {median:.2f} | {extra:+.1f} |")
        report.append({"row": name, "walls_s": [round(w, 3) for w in walls], "median_s": round(median, 3)})
    if args.json:
        Path(args.json).write_text(json.dumps({**source_revision(), "calls": args.calls,
                                               "concurrency": args.concurrency, "latency_s": args.latency,
                                               "rows": report}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
