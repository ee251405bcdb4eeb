#!/usr/bin/env python
"""Benchmark: generation with and without xdist, under faults and with the endpoint down.

Four runs of ``pytest`` on a generated suite (single-turn instances, one cheap check each),
against the project's OpenAI-compatible stub on 127.0.0.1, each once without ``-n`` and once
with ``-n WORKERS``:

* **faults**: ``--instances`` (2,000) instances, ``--fault-rate`` (20%) of them get one injected
  fault on their first call, of a kind taken in turn from HTTP 429, 500, 503, a malformed body,
  a dropped connection and a hung request (longer than ``--ifbench-timeout``); the retry passes.
* **endpoint down**: ``--down-instances`` (200) instances with ``--api-base`` on a closed port
  of 127.0.0.1 (connection refused): every instance ends as an error.

Every run uses the stub's latency (``--latency``, 0.1 s), ``--ifbench-no-cache``, the default
``--ifbench-concurrency`` (16 per process for an API) and short retry budgets as the test suites
use them (``--ifbench-max-wait=5 --ifbench-timeout=5``). Each row reports the wall time of the
pytest subprocess, how many instances passed and errored, the stub's request count and peak of
requests in flight, and (endpoint down) how many errors name the circuit breaker.

Usage (from the repository root)::

    python perf/bench_xdist_generation.py
    python perf/bench_xdist_generation.py --only faults --instances 500
    python perf/bench_xdist_generation.py --json xdist.json --timeout 1200

Only the standard library and the project are used; everything lives in a temporary directory
that is removed at the end, and the stub is stopped. Exit status 1 if a run failed to finish or
ended with an outcome other than the expected one.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))

from _common import free_port, source_revision, tail

from pytest_ifbench.testing import Fault, StubServer

#: The kinds of fault, in turn, for the faulted instances (a hung request outlasts --ifbench-timeout=5).
FAULTS = (Fault(kind="status", status=429), Fault(kind="status", status=500), Fault(kind="status", status=503),
          Fault(kind="malformed"), Fault(kind="disconnect"), Fault(kind="timeout", hang=6.0))
#: Not project dependencies: blocked so the figures are about the project (as in bench_generation.py).
BLOCKED = ("hypothesispytest", "benchmark")
BREAKER_WORDS = "circuit breaker"


def write_suite(path: Path, count: int) -> None:
    lines = ["ifbench: 1", "benchmark: bench_xdist", "instances:"]
    for i in range(count):
        lines += [f"  - id: inst-{i:05d}", f"    prompt: Write one short sentence about item number {i}.",
                  "    checks: [{id: words, verifier: ifbench.word_count, params: {min: 1}}]"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["OPENAI_API_KEY"] = "sk-fake"
    for var in ("OPENAI_API_BASE", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                "http_proxy", "https_proxy", "all_proxy", "PYTEST_ADDOPTS"):
        env.pop(var, None)
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def run(work: Path, suite: Path, url: str, workers: int, timeout: float) -> dict:
    results = work / f"results-{time.monotonic_ns()}.json"
    cmd = [sys.executable, "-m", "pytest", str(suite), "-q", "-p", "no:cacheprovider",
           *(f"-pno:{name}" for name in BLOCKED), "--model=openai/stub", f"--api-base={url}",
           "--ifbench-no-cache", "--ifbench-max-wait=5", "--ifbench-timeout=5", "--ifbench-summary=",
           f"--ifbench-results={results}", *(["-n", str(workers)] if workers else [])]
    log = work / "pytest.log"
    start = time.perf_counter()
    with log.open("wb") as out:
        try:
            rc = subprocess.run(cmd, cwd=work, env=child_env(), stdout=out, stderr=subprocess.STDOUT,
                                timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            return {"cmd": cmd, "rc": None, "wall_s": None, "note": f"stopped after {timeout:.0f}s"}
    wall = time.perf_counter() - start
    row: dict = {"cmd": cmd, "rc": rc, "wall_s": round(wall, 1)}
    try:
        records = json.loads(results.read_text(encoding="utf-8"))["instances"]
    except (OSError, ValueError, KeyError):
        print(tail(log), file=sys.stderr)
        return row | {"note": "no results file"}
    statuses = [r.get("status") for r in records]
    row |= {"passed": statuses.count("passed"), "errors": statuses.count("error"),
            "breaker_errors": sum(BREAKER_WORDS in (r.get("error") or "") for r in records)}
    return row


def faults_scenario(server: StubServer, count: int, rate: float, seed: int) -> int:
    """Queue one fault for ``rate`` of the instances (matched by their prompt); how many."""
    server.reset()
    chosen = sorted(random.Random(seed).sample(range(count), round(count * rate)))
    for turn, i in enumerate(chosen):
        server.inject_faults(FAULTS[turn % len(FAULTS)], match=f"item number {i}\\.$")
    return len(chosen)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=2000, help="instances of the faults runs (2000)")
    parser.add_argument("--fault-rate", type=float, default=0.2, help="share of instances faulted once (0.2)")
    parser.add_argument("--down-instances", type=int, default=200, help="instances of the endpoint-down runs (200)")
    parser.add_argument("--workers", type=int, default=2, help="xdist workers of the -n runs (2)")
    parser.add_argument("--latency", type=float, default=0.1, help="stub latency per request, s (0.1)")
    parser.add_argument("--only", choices=("faults", "down"), default=None, help="run one scenario")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=1200.0, help="limit per pytest run, s (1200)")
    parser.add_argument("--json", dest="json_path", default=None, help="also write the rows as JSON here")
    args = parser.parse_args(argv)

    rows: list[dict] = []
    ok = True
    with tempfile.TemporaryDirectory(prefix="ifbench-xdist-") as tmp, StubServer(latency=args.latency) as server:
        work = Path(tmp)
        (work / "conftest.py").write_text("", encoding="utf-8")
        if args.only in (None, "faults"):
            suite = work / "faults.yaml"
            write_suite(suite, args.instances)
            for workers in (0, args.workers):
                faulted = faults_scenario(server, args.instances, args.fault_rate, args.seed)
                print(f"faults, -n {workers}: {args.instances} instances, {faulted} faulted ...", file=sys.stderr)
                row = run(work, suite, server.url, workers, args.timeout)
                row |= {"scenario": "faults", "instances": args.instances, "faulted": faulted, "workers": workers,
                        "stub_calls": server.calls, "stub_peak_in_flight": server.peak_concurrency}
                ok &= row.get("passed") == args.instances
                rows.append(row)
        if args.only in (None, "down"):
            suite = work / "down.yaml"
            write_suite(suite, args.down_instances)
            url = f"http://127.0.0.1:{free_port()}/v1"
            for workers in (0, args.workers):
                print(f"endpoint down, -n {workers}: {args.down_instances} instances ...", file=sys.stderr)
                row = run(work, suite, url, workers, args.timeout)
                row |= {"scenario": "endpoint down", "instances": args.down_instances, "workers": workers}
                ok &= row.get("errors") == args.down_instances
                rows.append(row)

    print(f"stub latency {args.latency}s, --ifbench-max-wait=5 --ifbench-timeout=5, default concurrency, "
          f"{os.cpu_count()} CPUs, commit {source_revision()['commit']}\n")
    print("| scenario | instances | -n | wall (s) | passed | errors | breaker errors | stub calls | stub peak |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        wall = r["wall_s"] if r.get("wall_s") is not None else r.get("note", "?")
        print(f"| {r['scenario']} | {r['instances']} | {r['workers'] or '-'} | {wall} | {r.get('passed', '?')} | "
              f"{r.get('errors', '?')} | {r.get('breaker_errors', '?')} | {r.get('stub_calls', '-')} | "
              f"{r.get('stub_peak_in_flight', '-')} |")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps({"rows": rows, "args": vars(args), **source_revision()},
                                                   indent=2), encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
