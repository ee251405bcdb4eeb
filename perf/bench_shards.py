#!/usr/bin/env python
"""Benchmark: the shipped quick set in N shards with a shared cache vs one run, against the stub.

Starts the project's stub server in this process (200 ms per request by default)
and a ``redis-server`` on a random 127.0.0.1 port (the shared cache), then runs,
each as its own ``pytest`` subprocess from the repository root:

1. **one run** of ``pytest suites/`` (``--full`` adds ``--ifbench-full``) with its own
   empty local cache;
2. **N shards** (``--ifbench-shard=K/N``), one after the other, or with ``--side-by-side``
   all at once (as N machines run them: requests the shards have in common are then in
   flight at the same moment), each with an empty local cache of its own and
   ``--ifbench-shared-cache redis://...``; then ``ifbench merge``;
3. **a second machine**: every shard again with new empty local caches and the model
   unreachable (``--api-base`` points at a closed port), served by the shared cache.

It reports the wall time of each run, the stub's calls (side by side: the shards'
total), whether the merged report equals the single run's (every metric table of the
summary file and every instance's verdicts) and the calls the second machine repaid
(must be 0).

Usage (from the repository root)::

    python perf/bench_shards.py                     # 3 shards, quick set, 200 ms
    python perf/bench_shards.py --shards 3 --full --json shards.json
    python perf/bench_shards.py --suites suites/manyih suites/vericode --full --side-by-side
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))

from _common import free_port, source_revision

from pytest_ifbench.scale.merge import verdicts
from pytest_ifbench.testing import FAKE_API_KEY, StubServer

_IFBENCH = "import sys; from pytest_ifbench.cli.main import main; sys.exit(main(sys.argv[1:]))"


def _start(work: Path, api_base: str, *args: str) -> tuple[subprocess.Popen, float]:
    command = [sys.executable, "-m", "pytest", "--model=openai/stub", f"--api-base={api_base}",
               "-p", "no:cacheprovider", "-q", "--ifbench-max-attempts=1", "--ifbench-timeout=10",
               "--ifbench-trajectories=", *args]
    env = {**os.environ, "OPENAI_API_KEY": FAKE_API_KEY}
    started = time.perf_counter()
    return subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env), started


def _finish(work: Path, run: tuple[subprocess.Popen, float]) -> tuple[float, int]:
    process, started = run
    stdout, stderr = process.communicate()
    wall = time.perf_counter() - started
    (work / f"log-{int(started * 1000)}-{process.pid}.txt").write_text(stdout + stderr)
    if process.returncode not in (0, 1):
        raise SystemExit(f"pytest exited {process.returncode}:\n{stdout[-3000:]}\n{stderr[-2000:]}")
    return wall, process.returncode


def _pytest(work: Path, api_base: str, *args: str) -> tuple[float, int]:
    return _finish(work, _start(work, api_base, *args))


def _tables(summary: Path) -> str:
    import re

    text = summary.read_text(encoding="utf-8")
    body = re.sub(r"## Totals\n\n(\|.*\n)+", "", text[text.index("## Totals"):])
    return re.sub(r"\]\([^)]*/([^/)]+)\)", r"](\1)", body)


def _tokens_masked(tables: str) -> str:
    """The tables with the paid-token cells masked (with a shared cache a shard may find a reply another
    shard paid for: an identical request of another instance, which a single run pays for once only when
    both are on their way at the same time) and the wall-clock ones (AgentIF's average latency)."""
    import re

    tables = re.sub(r"\| \d+/\d+ \|", "| - |", tables)
    return re.sub(r"(\| avg latency \(s\) \|) [\d.]+ \|", r"\1 - |", tables)


def _verdicts(path: Path) -> dict:
    return {r["nodeid"]: verdicts(r) for r in json.loads(path.read_text(encoding="utf-8"))["instances"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shards", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per request (default 0.2)")
    parser.add_argument("--full", action="store_true", help="every shipped instance (--ifbench-full)")
    parser.add_argument("--suites", nargs="+", default=["suites/"], metavar="PATH",
                        help="suite files or folders (default: suites/), e.g. suites/manyih suites/vericode")
    parser.add_argument("--side-by-side", action="store_true",
                        help="start the shards at once, as N machines would run them (default: one after the other)")
    parser.add_argument("--json", default=None, metavar="FILE")
    args = parser.parse_args()
    redis_binary = shutil.which("redis-server")
    if redis_binary is None:
        raise SystemExit("redis-server is not installed (apt-get install redis-server)")
    selection = [*args.suites, *(["--ifbench-full"] if args.full else [])]
    port = free_port()
    redis = subprocess.Popen([redis_binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no"], stdout=subprocess.DEVNULL)
    shared = f"redis://127.0.0.1:{port}/0"
    try:
        with tempfile.TemporaryDirectory(prefix="ifbench-shards-") as scratch, \
                StubServer(latency=args.latency) as stub:
            work = Path(scratch)
            time.sleep(0.3)
            single_wall, _ = _pytest(work, stub.url, *selection, f"--ifbench-cache={work}/single-cache",
                                     f"--ifbench-results={work}/single.json",
                                     f"--ifbench-summary={work}/single-summary.md")
            single_calls = stub.calls
            stub.reset()
            shard_walls, shard_calls, running = [], [], []
            for index in range(1, args.shards + 1):
                shard = (*selection, f"--ifbench-shard={index}/{args.shards}",
                         f"--ifbench-cache={work}/machine1-{index}", f"--ifbench-shared-cache={shared}",
                         f"--ifbench-results={work}/shard-{index}.json")
                if args.side_by_side:
                    running.append(_start(work, stub.url, *shard))
                    continue
                before = stub.calls
                shard_walls.append(_pytest(work, stub.url, *shard)[0])
                shard_calls.append(stub.calls - before)
            shard_walls += [_finish(work, run)[0] for run in running]
            paid = stub.calls  # side by side, the stub cannot tell whose call it was: the total only
            files = [str(work / f"shard-{i}.json") for i in range(1, args.shards + 1)]
            merge = subprocess.run([sys.executable, "-c", _IFBENCH, "merge", "--out",
                                    str(work / "merged.json"), *files, "--expect", str(args.shards)],
                                   cwd=work, capture_output=True, text=True)
            if merge.returncode != 0:
                raise SystemExit(f"ifbench merge exited {merge.returncode}: {merge.stderr[-2000:]}")
            same_tables = _tables(work / "merged-summary.md") == _tables(work / "single-summary.md")
            same_scores = _tokens_masked(_tables(work / "merged-summary.md")) == \
                _tokens_masked(_tables(work / "single-summary.md"))
            if not same_tables:
                import difflib

                print("".join(difflib.unified_diff(_tables(work / "single-summary.md").splitlines(True),
                                                   _tables(work / "merged-summary.md").splitlines(True),
                                                   "one run", "merged")))
            same_verdicts = _verdicts(work / "merged.json") == _verdicts(work / "single.json")
            instances = len(_verdicts(work / "merged.json"))
            before = stub.calls
            dead = f"http://127.0.0.1:{free_port()}"
            replay_walls, replay_same = [], True
            for index in range(1, args.shards + 1):
                wall, _ = _pytest(work, dead, *selection, f"--ifbench-shard={index}/{args.shards}",
                                  f"--ifbench-cache={work}/machine2-{index}", f"--ifbench-shared-cache={shared}",
                                  f"--ifbench-results={work}/replay-{index}.json")
                replay_walls.append(wall)
                replay_same &= _verdicts(work / f"replay-{index}.json") == _verdicts(work / f"shard-{index}.json")
            repaid = stub.calls - before
    finally:
        redis.terminate()
        redis.wait()
    report = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()}, **source_revision(),
        "selection": ("full" if args.full else "quick") + " (" + " ".join(args.suites) + ")", "instances": instances,
        "latency_s": args.latency,
        "single": {"wall_s": round(single_wall, 1), "calls": single_calls},
        "side_by_side": args.side_by_side, "shards_calls": paid,
        "shards": [{"shard": f"{i + 1}/{args.shards}", "wall_s": round(w, 1),
                    "calls": shard_calls[i] if shard_calls else None} for i, w in enumerate(shard_walls)],
        "merged_tables_identical": same_tables, "merged_tables_identical_but_paid_tokens": same_scores,
        "merged_verdicts_identical": same_verdicts,
        "second_machine": {"walls_s": [round(w, 1) for w in replay_walls], "repaid_calls": repaid,
                           "verdicts_identical": replay_same},
    }
    print(f"{instances} instances ({report['selection']} set), stub latency {args.latency * 1000:.0f} ms")
    print(f"  one run:         {single_wall:6.1f} s  {single_calls} calls")
    for row in report["shards"]:
        calls = "" if row["calls"] is None else f"  {row['calls']} calls"
        print(f"  shard {row['shard']}:     {row['wall_s']:6.1f} s{calls}")
    print(f"  the {args.shards} shards ({'side by side' if args.side_by_side else 'one after the other'}): "
          f"{paid} calls")
    print(f"  merged report identical to the one run: tables {same_tables} (all but paid tokens and latency "
          f"{same_scores}), "
          f"verdicts {same_verdicts}")
    print(f"  second machine (shared cache only): {', '.join(f'{w:.1f} s' for w in replay_walls)}; "
          f"{repaid} calls repaid; verdicts identical {replay_same}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0 if same_scores and same_verdicts and replay_same and repaid == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
