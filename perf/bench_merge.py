#!/usr/bin/env python
"""Benchmark: ``ifbench merge`` and ``ifbench compare`` as the run grows (wall, peak RSS per instance).

1. **Records.** Runs a suite of ``--base`` single-turn instances with five checks each (the overhead
   benchmark's shape, four pass and one fails) against the project's stub in this process, as shard
   1/1, so the records and the shard entry are a real run's.
2. **Shards.** For each size in ``--sizes``, writes ``--shards`` results files that together hold that
   many instances: copies of the run's records under new node ids, each file with its shard entry
   (index, count, the split of the whole run), as a sharded run's files are.
3. **Timing.** ``ifbench merge --expect N`` of the files, then ``ifbench compare`` of the merged file
   with itself, each a subprocess: its wall time and peak RSS (its VmHWM); the RSS slope per instance
   between consecutive sizes. With ``--other-checkout DIR`` the same commands also run from another
   checkout of the project (a worktree of an earlier commit) on the same files, and its merged file
   must be byte for byte the same.

Usage (from the repository root)::

    python perf/bench_merge.py                              # 1k, 10k, 50k instances in 3 shards
    git worktree add /tmp/before <rev> && python perf/bench_merge.py --other-checkout /tmp/before --json m.json
"""

from __future__ import annotations

import argparse
import datetime
import json
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

from _common import module_command, peak_rss_mb, source_revision, tail

from pytest_ifbench.testing import FAKE_API_KEY, StubServer

#: ``ifbench``, reporting its own peak RSS (not ``wait4``'s: see ``_common.module_command``).
_IFBENCH = "pytest_ifbench.cli.main:main"


def _suite(n: int) -> str:
    lines = ["ifbench: 1", "benchmark: bulk", "instances:"]
    for i in range(n):
        lines += [f"  - id: q{i:05d}", f"    prompt: question {i}, answered in a few words", f"    category: c{i % 7}",
                  "    checks:", "      - {id: any, verifier: ifbench.word_count, params: {min: 1}}",
                  "      - {id: short, verifier: ifbench.word_count, params: {max: 200}}",
                  "      - {id: two, verifier: ifbench.word_count, params: {min: 2}}",
                  "      - {id: mid, verifier: ifbench.word_count, params: {min: 1, max: 500}}",
                  "      - {id: long, verifier: ifbench.word_count, params: {min: 50}}"]
    return "\n".join(lines) + "\n"


def _records(work: Path, n: int) -> dict:
    """A real run's results file (shard 1/1) of ``n`` instances against the stub."""
    (work / "suites").mkdir(parents=True)
    (work / "suites" / "bulk.yaml").write_text(_suite(n), encoding="utf-8")
    with StubServer() as stub:
        command = [sys.executable, "-m", "pytest", "suites", "--model=openai/stub", f"--api-base={stub.url}",
                   "-p", "no:cacheprovider", "-q", "-o", "verbosity_subtests=0", "--ifbench-concurrency=32",
                   "--ifbench-shard=1/1", "--ifbench-results=base.json", "--ifbench-summary=",
                   f"--ifbench-cache={work / 'cache'}"]
        log = work / "base.log"
        with log.open("w") as out:
            code = subprocess.run(command, cwd=work, stdout=out, stderr=subprocess.STDOUT,
                                  env={**os.environ, "OPENAI_API_KEY": FAKE_API_KEY}).returncode
    if code not in (0, 1):
        raise SystemExit(f"the base run failed ({code}):\n{tail(log)}")
    return json.loads((work / "base.json").read_text(encoding="utf-8"))


def _write_shards(base: dict, size: int, shards: int, directory: Path) -> list[Path]:
    """``shards`` files holding ``size`` instances in all: the base run's records under new node ids."""
    directory.mkdir(parents=True)
    template = base["instances"]
    nodeids = [f"suites/bulk.yaml::c{i // len(template)}-{template[i % len(template)]['instance']}"
               for i in range(size)]
    assignment = {nodeid: 1 + i * shards // size for i, nodeid in enumerate(nodeids)}
    paths = []
    for index in range(1, shards + 1):
        head = {**base, "shard": {**base["shard"], "index": index, "count": shards,
                                  "assignment": dict(sorted(assignment.items()))}, "instances": []}
        text = json.dumps(head, separators=(",", ":"), ensure_ascii=False)[:-2]
        body = ",".join(json.dumps({**template[i % len(template)], "nodeid": nodeid}, separators=(",", ":"),
                                   ensure_ascii=False)
                        for i, nodeid in enumerate(nodeids) if assignment[nodeid] == index)
        path = directory / f"shard-{index}.json"
        path.write_text(text + body + "]}", encoding="utf-8")
        paths.append(path)
    return paths


def _timed(command: list[str], cwd: Path, pythonpath: Path) -> dict:
    """Wall time and peak RSS (the command's VmHWM) of one subprocess."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[4:])} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return {"wall_s": round(wall, 2), "peak_rss_mb": round(peak_rss_mb(done.stderr), 1)}


def _measure(checkout: Path, paths: list[Path], out: Path) -> dict:
    merge = _timed([*module_command(sys.executable, _IFBENCH), "merge", "--out", str(out),
                    "--expect", str(len(paths)), *map(str, paths)], out.parent, checkout)
    compare = _timed([*module_command(sys.executable, _IFBENCH), "compare", str(out), str(out)], out.parent, checkout)
    return {"merge": merge, "compare": compare}


def _slopes(rows: list[dict], key: str) -> None:
    for before, row in zip(rows, rows[1:]):
        for tool in ("merge", "compare"):
            added = row["instances"] - before["instances"]
            grown = row[key][tool]["peak_rss_mb"] - before[key][tool]["peak_rss_mb"]
            row[key][tool]["kb_per_added_instance"] = round(grown * 1024 / added, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,50000", help="instances in all, comma-separated")
    parser.add_argument("--shards", type=int, default=3)
    parser.add_argument("--base", type=int, default=2000, help="instances of the real run the records come from")
    parser.add_argument("--other-checkout", type=Path, default=None, metavar="DIR",
                        help="also time another checkout of the project (e.g. a worktree of an earlier commit)")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="ifbench-merge-bench-") as tmp:
        work = Path(tmp)
        base = _records(work / "base", args.base)
        rows = []
        for size in sizes:
            paths = _write_shards(base, size, args.shards, work / f"n{size}")
            row = {"instances": size, "files_mb": round(sum(p.stat().st_size for p in paths) / 2**20, 1),
                   "this": _measure(REPO, paths, work / f"n{size}" / "merged.json")}
            if args.other_checkout:
                row["other"] = _measure(args.other_checkout.resolve(), paths, work / f"n{size}" / "other.json")
                if (work / f"n{size}" / "merged.json").read_bytes() != (work / f"n{size}" / "other.json").read_bytes():
                    raise SystemExit(f"{size}: the merged files differ between the checkouts")
            rows.append(row)
            print(json.dumps(row), flush=True)
        for key in ("this", "other") if args.other_checkout else ("this",):
            _slopes(rows, key)
    print(f"\n{'instances':>9} {'files':>8}  {'checkout':<8} {'merge':>8} {'peak':>9} {'KB/inst':>8}"
          f"  {'compare':>8} {'peak':>9} {'KB/inst':>8}")
    for row in rows:
        for key in ("this", "other") if args.other_checkout else ("this",):
            m, c = row[key]["merge"], row[key]["compare"]
            print(f"{row['instances']:>9} {row['files_mb']:>6} MB  {key:<8} {m['wall_s']:>6} s {m['peak_rss_mb']:>6} MB"
                  f" {m.get('kb_per_added_instance', ''):>8}  {c['wall_s']:>6} s {c['peak_rss_mb']:>6} MB"
                  f" {c.get('kb_per_added_instance', ''):>8}")
    if args.json:
        args.json.write_text(json.dumps({
            "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "source": source_revision(), "other_checkout": str(args.other_checkout or ""),
            "shards": args.shards, "base": args.base, "rows": rows}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
