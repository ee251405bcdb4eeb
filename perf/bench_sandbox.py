#!/usr/bin/env python
"""Benchmark: start-up cost of a contained command, agent workspace vs the Python sandbox.

* **workspace `true`**: ``Workspace.run(["true"])`` -- the whole chain for one
  command (root bubblewrap staging the run's directories, ``prlimit``,
  ``setpriv``, the sandbox's bubblewrap with its namespaces, ``true``, the
  teardown wait and the disk-budget walk), in an empty workspace.
* **workspace `bash -c true`**: the same through a string command (bash start-up added).
* **create + first command + close**: a workspace's start-up cost on the backend (docker: the
  container is created and started at the first command and removed at close).
* **10-command sequence**: ten small commands of an agent-like session in one
  workspace (write, read, list, ``git init``/``add``/``commit``...), timed as a
  whole; reported per sequence and per command.
* **`run_python`**: ``pytest_ifbench.sandbox.run_python("pass")`` -- a code run
  on the chosen backend: bubblewrap started directly (tmpfs work dir and
  ``/tmp``, no host directory), or a job in one of the backend's pooled runs
  (docker: a ``docker exec`` in a container kept for the next job, directories
  emptied in between) -- around interpreter + bootstrap + harness.
* **first code run**: the same after closing the pools (``_code_runs.close_all``):
  on docker the pooled run's container is created and started first; on
  bubblewrap there is no pool and it equals the line above.
* **`run_assert_tests`, 10 asserts**: one sandbox loading a small function and
  running ten ``assert f(x) == literal`` tests, each decided by the parent --
  the per-reply cost of a VeriCode/ManyIH unit-test check.
* **bare interpreter**: ``python -s -P -B -c pass`` unconfined -- what the
  sandbox adds is the difference.
* **`unshare --net true` floor** and **plain `true`**: what a bare process
  start costs here.

Each figure is the median and the 90th percentile of ``--repeat`` runs (20 by
default; the sequence runs ``--repeat // 4`` times) after one warm-up run.
Exits with status 2 when the sandbox is unavailable (printing the reason).
Runs sequentially in this process; about 10-20 s on 2 cores.

Usage (from the repository root)::

    python perf/bench_sandbox.py
    python perf/bench_sandbox.py --repeat 50 --json sandbox.json
    DOCKER_HOST=unix:///path/docker.sock python perf/bench_sandbox.py --backend docker

``--backend`` chooses the sandbox backend (default bubblewrap) of both the agent workspaces and
the code runs (``run_python``/``run_assert_tests``), as ``--ifbench-sandbox`` does under pytest.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))

from _common import measure, sandbox_backend, source_revision, succeeded

from pytest_ifbench.agents.workspace import Limits, Workspace
from pytest_ifbench.sandbox import run_assert_tests, run_python, use_backend
from pytest_ifbench.sandbox._code_runs import close_all

SEQUENCE = (
    "echo 'print(1)' > main.py",
    "cat main.py",
    "ls -la",
    "git init -q .",
    "git add main.py",
    "git -c user.name=a -c user.email=a@b commit -qm init",
    "grep -n print main.py",
    "sed -i 's/1/2/' main.py",
    "git diff --stat",
    "wc -l main.py",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="runs per figure (default 20)")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--backend", default="bubblewrap", help="agent sandbox backend (default bubblewrap)")
    args = parser.parse_args(argv)
    use_backend(sandbox_backend(args.backend))
    limits = Limits(timeout=60)
    figures: dict[str, dict[str, float]] = {}

    with Workspace.create(None) as ws:
        figures["workspace true"] = measure(lambda: succeeded(ws.run(["true"], limits=limits)), args.repeat)
        figures["workspace bash -c true"] = measure(lambda: succeeded(ws.run("true", limits=limits)), args.repeat)

    def first() -> None:
        with Workspace.create(None) as ws:
            succeeded(ws.run(["true"], limits=limits))

    figures["create + first command + close"] = measure(first, max(3, args.repeat // 4))

    def sequence() -> None:
        with Workspace.create(None) as ws:
            for command in SEQUENCE:
                succeeded(ws.run(command, limits=limits))

    figures["10-command sequence (incl. create/close)"] = measure(sequence, max(3, args.repeat // 4))
    def python_ok() -> None:
        result = run_python("pass")
        if not result.ok:
            raise SystemExit(f"run_python failed: {result}")

    figures["run_python('pass')"] = measure(python_ok, args.repeat)

    def first_code_run() -> None:
        close_all()
        python_ok()

    figures["first code run (pool opened)"] = measure(first_code_run, max(3, args.repeat // 4))
    tests = [f"assert f({i}) == {i + 1}" for i in range(10)]
    figures["run_assert_tests (10 asserts)"] = measure(
        lambda: run_assert_tests("def f(x):\n    return x + 1\n", tests).passed or sys.exit("asserts failed"),
        args.repeat)
    figures["bare interpreter (-c pass)"] = measure(
        lambda: subprocess.run([sys.executable, "-s", "-P", "-B", "-c", "pass"], check=True), args.repeat)
    figures["unshare --net true"] = measure(lambda: subprocess.run(["unshare", "--net", "true"], check=True),
                                            args.repeat)
    figures["plain true"] = measure(lambda: subprocess.run(["true"], check=True), args.repeat)

    seq = figures["10-command sequence (incl. create/close)"]
    print(f"Sandbox start-up ({args.backend}), {args.repeat} runs each "
          f"(load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs)")
    print(f"  {'':<42}{'median ms':>11}{'p90 ms':>9}")
    for name, fig in figures.items():
        print(f"  {name:<42}{fig['median_ms']:>11.2f}{fig['p90_ms']:>9.2f}")
    print(f"  per command in the sequence: {seq['median_ms'] / len(SEQUENCE):.2f} ms (median / {len(SEQUENCE)})")
    if args.json:
        result = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                  "python": platform.python_version(), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
                  "loadavg": os.getloadavg(), "euid": os.geteuid(), "backend": args.backend, **source_revision(),
                  "figures": figures}
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    close_all()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
