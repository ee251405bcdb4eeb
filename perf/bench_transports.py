#!/usr/bin/env python
"""Benchmark: the client's CPU per call on each route, without pytest.

For the decision whether the hand-written OpenAI-compatible path (``models/openai_compat.py``,
one aiohttp ``POST``) should become the ``openai`` SDK on aiohttp (``models/openai_sdk.py``): the
same N calls through ``ModelClient.complete`` (retries, reply checks, accounting; no cache) at one
concurrency, against the project's stub server started in a separate process (``python -m
pytest_ifbench.testing``) so that its work is not counted. Reported per route: CPU seconds of the
calling thread per call (``time.thread_time``: the event loop's own work, import excluded), the
import of what the route needs (CPU and wall, in a fresh interpreter) and the wall time of the N
calls. Routes: ``direct`` (``openai/stub`` with ``--api-base``), ``openai-sdk``
(``openai/gpt-4o-mini``, the same server), ``anthropic-sdk`` (``anthropic/claude-sonnet-4-5``, the
stub's Anthropic Messages endpoint) and ``litellm`` (``openai/stub`` with
``PYTEST_IFBENCH_LITELLM_ONLY=1``).

Usage (from the repository root)::

    python perf/bench_transports.py                       # 400 calls at concurrency 64, every route
    python perf/bench_transports.py --calls 2000 --concurrency 16 --routes direct,openai-sdk
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: route -> (model, whether the endpoint is the stub's root, environment, the modules its import costs)
ROUTES = {
    "direct": ("openai/stub", False, {}, "aiohttp"),
    "openai-sdk": ("openai/gpt-4o-mini", False, {}, "openai, httpx_aiohttp"),
    "anthropic-sdk": ("anthropic/claude-sonnet-4-5", True, {}, "anthropic"),
    "litellm": ("openai/stub", False, {"PYTEST_IFBENCH_LITELLM_ONLY": "1"}, "litellm"),
}

#: One route's calls, in a fresh interpreter: argv = model, base URL, calls, concurrency.
CALLER = r"""
import asyncio, json, sys, time
model, base, calls, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
from pytest_ifbench import make_client
from pytest_ifbench._types import GenerationParams
from pytest_ifbench.models.client import RetryPolicy, import_litellm
from pytest_ifbench.models.openai_compat import close_sessions

client = make_client(model, api_base=base, retry=RetryPolicy(max_attempts=1, timeout=60))
if client.direct is None:
    import_litellm()

async def main():
    limiter = asyncio.Semaphore(concurrency)

    async def one(i):
        async with limiter:
            done = await client.complete([{"role": "user", "content": f"item {i}"}], GenerationParams(max_tokens=16))
            assert done.text

    await one(-1)  # the first call: imports and the connection pool, not counted
    cpu, wall = time.thread_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(calls)))
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    await close_sessions()
    return cpu, wall

cpu, wall = asyncio.run(main())
print(json.dumps({"transport": type(client.direct).__name__, "cpu_s": cpu, "wall_s": wall}))
"""

IMPORT = r"""
import json, resource, sys, time
start = time.perf_counter()
for name in sys.argv[1].split(", "):
    __import__(name)
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall_s": time.perf_counter() - start, "cpu_s": usage.ru_utime + usage.ru_stime}))
"""


def env_for(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_API_BASE", "OPENAI_BASE_URL",
                                                                      "ANTHROPIC_BASE", "ANTHROPIC_API_BASE"))}
    env.pop("PYTEST_IFBENCH_LITELLM_ONLY", None)
    env |= {"OPENAI_API_KEY": "sk-fake", "ANTHROPIC_API_KEY": "sk-ant-fake", "NO_PROXY": "127.0.0.1,localhost",
            "PYTHONPATH": str(REPO), **extra}
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05, help="stub latency per reply, s (default 0.05)")
    parser.add_argument("--routes", default=",".join(ROUTES), help="comma-separated: " + ", ".join(ROUTES))
    parser.add_argument("--repeat", type=int, default=3, help="runs per route; the least CPU is kept (default 3)")
    args = parser.parse_args(argv)
    routes = [r.strip() for r in args.routes.split(",") if r.strip()]
    if set(routes) - set(ROUTES) or args.calls < 1 or args.concurrency < 1 or args.repeat < 1:
        parser.error(f"routes: {', '.join(ROUTES)}; --calls, --concurrency and --repeat >= 1")
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="ifbench-bench-transports-") as tmp:
        url_file = Path(tmp) / "url"
        stub = subprocess.Popen([sys.executable, "-m", "pytest_ifbench.testing", "--latency", str(args.latency),
                                 "--url-file", str(url_file)], env=env_for({}), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while not (url_file.exists() and url_file.read_text().strip()):
                if time.monotonic() > deadline or stub.poll() is not None:
                    print("the stub server did not start", file=sys.stderr)
                    return 1
                time.sleep(0.05)
            url = url_file.read_text().strip()
            rows = []
            for route in routes:
                model, root, extra, modules = ROUTES[route]
                base = url.removesuffix("/v1") if root else url
                runs = [json.loads(subprocess.run(
                    [sys.executable, "-c", CALLER, model, base, str(args.calls), str(args.concurrency)],
                    env=env_for(extra), capture_output=True, text=True, check=True).stdout.splitlines()[-1])
                    for _ in range(args.repeat)]
                best = min(runs, key=lambda r: r["cpu_s"])
                imports = min((json.loads(subprocess.run([sys.executable, "-c", IMPORT, modules], env=env_for({}),
                                                         capture_output=True, text=True, check=True).stdout)
                               for _ in range(args.repeat)), key=lambda r: r["cpu_s"])
                rows.append((route, best, imports))
                print(f"{route}: {best}", file=sys.stderr)
        finally:
            stub.terminate()
            stub.wait(10)
    print(f"### Client CPU per call: {args.calls} calls at concurrency {args.concurrency}, stub latency "
          f"{args.latency * 1000:.0f} ms (least CPU of {args.repeat} runs; load average {load:.1f} at the start)\n")
    print("| route | transport | CPU per call (ms) | wall of the calls (s) | import CPU (s) | import wall (s) |")
    print("|---|---|---:|---:|---:|---:|")
    for route, best, imports in rows:
        print(f"| {route} | {best['transport']} | {best['cpu_s'] / args.calls * 1000:.2f} | {best['wall_s']:.2f} "
              f"| {imports['cpu_s']:.2f} | {imports['wall_s']:.2f} |")
    print("\nimport CPU includes the interpreter's own start-up; import wall is the imports alone.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
