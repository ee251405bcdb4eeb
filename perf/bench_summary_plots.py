#!/usr/bin/env python
"""Benchmark: what the summary's plots cost a run, with the default summary, with plots, without a summary.

A suite of ``--instances`` single-turn instances in two benchmarks (three
categories each, two core checks per instance) is scored from recorded
responses (``--ifbench-responses``: no model, no network), so the run is all
harness: collection, verification, the results file, the summary. Each
variant runs ``python -m pytest`` in a subprocess, with the plots folder
removed first (every run draws from scratch, as an uncached run does):

* ``default``: no summary option (the summary beside the results file);
* ``plots``: ``--ifbench-plots=yes`` (the plots drawn: what every run did
  before plots were made opt-in);
* ``no-summary``: ``--ifbench-summary=`` (the floor).

For each: the median wall time and CPU time (user + system, from ``os.wait4``)
and whether the run imported matplotlib. ``--source DIR`` runs another
checkout's ``pytest_ifbench`` (e.g. ``git archive <commit> | tar -x -C DIR``)
with ``--variants default,no-summary`` for the before figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

VARIANTS = {"default": [], "plots": ["--ifbench-plots=yes"], "no-summary": ["--ifbench-summary="]}
#: Plugins of the development environment that are not the project's (see perf/README.md).
BLOCKED = ["-p", "no:hypothesispytest", "-p", "no:benchmark", "-p", "no:cacheprovider"]

#: Written as the folder's conftest: records whether the run imported matplotlib.
_CONFTEST = """\
import json, sys

import pytest


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    with open("imported.json", "w") as out:
        json.dump({"matplotlib": "matplotlib" in sys.modules}, out)
"""


def write_suite(folder: Path, instances: int) -> None:
    replies = []
    for benchmark in ("alpha", "beta"):
        items = []
        for n in range(instances // 2):
            iid = f"{benchmark}-{n:05d}"
            items.append({"id": iid, "prompt": "say hello", "category": f"c{n % 3}",
                          "checks": [{"id": "words", "verifier": "ifbench.word_count", "params": {"min": 2}},
                                     {"id": "hello", "verifier": "ifbench.keywords",
                                      "params": {"include": ["hello"]}}]})
            replies.append({"id": iid, "response": "hello there" if n % 4 else "hi"})
        (folder / f"{benchmark}.yaml").write_text(
            yaml.safe_dump({"ifbench": 1, "benchmark": benchmark, "instances": items}, sort_keys=False),
            encoding="utf-8")
    (folder / "replies.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies), encoding="utf-8")
    (folder / "conftest.py").write_text(_CONFTEST, encoding="utf-8")


def run_once(folder: Path, extra: list[str], env: dict[str, str]) -> tuple[float, float, bool]:
    shutil.rmtree(folder / "ifbench-summary", ignore_errors=True)
    (folder / "imported.json").unlink(missing_ok=True)
    command = [sys.executable, "-m", "pytest", "alpha.yaml", "beta.yaml", "-q", *BLOCKED,
               "--ifbench-responses=replies.jsonl", *extra]
    start = time.perf_counter()
    with (folder / "pytest.log").open("wb") as log:
        proc = subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise RuntimeError(f"{' '.join(command)} exited {code}:\n{(folder / 'pytest.log').read_text()[-3000:]}")
    imported = json.loads((folder / "imported.json").read_text())["matplotlib"]
    return seconds, usage.ru_utime + usage.ru_stime, imported


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=200, help="instances in all (default 200)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per variant; medians kept (default 5)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--source", type=Path, default=None, metavar="DIR",
                        help="a checkout whose pytest_ifbench to run instead of the installed one")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants: {', '.join(unknown)}")

    env = dict(os.environ)
    if args.source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(args.source.resolve()), env.get("PYTHONPATH"))))
    rows = {}
    with tempfile.TemporaryDirectory(prefix="bench-summary-plots-") as tmp:
        folder = Path(tmp)
        write_suite(folder, args.instances)
        for variant in variants:
            runs = [run_once(folder, VARIANTS[variant], env) for _ in range(args.repeat)]
            rows[variant] = {"wall_s": statistics.median(r[0] for r in runs),
                             "cpu_s": statistics.median(r[1] for r in runs),
                             "matplotlib": any(r[2] for r in runs), "walls": [r[0] for r in runs]}
    load = os.getloadavg()[0]
    print(f"summary plots: {args.instances} instances from recorded responses, "
          f"{'source ' + str(args.source) if args.source else 'installed checkout'}, median of {args.repeat}, "
          f"{os.cpu_count()} CPUs, load {load:.1f}")
    print(f"  {'variant':<12}{'wall':>9}{'CPU':>9}  matplotlib")
    for variant, row in rows.items():
        print(f"  {variant:<12}{row['wall_s']:>7.2f} s{row['cpu_s']:>7.2f} s  {'yes' if row['matplotlib'] else 'no'}")
    if load > (os.cpu_count() or 1) / 2:
        print(f"  note: load average {load:.1f} on {os.cpu_count()} CPUs: wall times are noisy, CPU times less so")
    if args.json:
        args.json.write_text(json.dumps({"source": str(args.source) if args.source else None,
                                         "instances": args.instances, "repeat": args.repeat, "load": load,
                                         "rows": rows}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
