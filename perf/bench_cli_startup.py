#!/usr/bin/env python
"""Benchmark: how long each ``ifbench`` subcommand takes to start and exit, and what it imports.

Every row is the command run end to end in a fresh interpreter, exactly as the
console script runs it (``from pytest_ifbench.cli.main import main; sys.exit(main())``),
from a scratch directory so the working directory adds nothing to ``sys.path``:

* ``python -c pass``: the interpreter alone (the floor no command can beat);
* ``ifbench --help`` and each subcommand's ``--help``: argument parsing only;
* ``ifbench verify`` on one core case (``ifbench.word_count``), on one
  VeriCode ruff case (one ruff process), and on one case of each of two
  benchmarks;
* ``ifbench verifiers --json``: every installed verifier.

For each row: the median wall time and CPU time (user + system, from
``os.wait4``) over ``--repeat`` runs, the number of modules the command
imported, and whether pytest was among them. ``--source DIR`` runs the
commands against another checkout's ``pytest_ifbench`` (put first on the
module path), e.g. the commit before a change, to get before/after figures
from one script on one machine::

    git archive <commit> | tar -x -C /tmp/before
    python perf/bench_cli_startup.py --source /tmp/before --json before.json
    python perf/bench_cli_startup.py --json after.json

Every command must exit 0 (the verify rows: and pass); the exit status is 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))

#: Runs one ``ifbench`` command as the console script does, then writes the imported modules' names.
_RUNNER = """\
import sys
from pytest_ifbench.cli.main import main
status = main(sys.argv[2:])
with open(sys.argv[1], "w", encoding="utf-8") as out:
    out.write("\\n".join(sorted(sys.modules)))
sys.exit(status)
"""

_CORE_CASE = {"verifier": "ifbench.word_count", "params": {"min": 1}, "response": "hello world"}
_RUFF_CASE = {"verifier": "vericode.style_1", "params": {}, "response": "```python\ndef f(x):\n    return x\n```"}
_OTHER_CASE = {"verifier": "evolif.existence", "params": {"hello": 1}, "response": "hello world"}


def commands(folder: Path) -> dict[str, list[str] | None]:
    """Each measured row: the ``ifbench`` arguments (None: the bare interpreter)."""
    inputs = {"core": [_CORE_CASE], "ruff": [_RUFF_CASE], "two": [_CORE_CASE, _OTHER_CASE]}
    paths = {}
    for name, cases in inputs.items():
        paths[name] = folder / f"{name}.jsonl"
        paths[name].write_text("".join(json.dumps(case) + "\n" for case in cases), encoding="utf-8")
    return {
        "python -c pass": None,
        "ifbench --help": ["--help"],
        "ifbench verify --help": ["verify", "--help"],
        "ifbench score --help": ["score", "--help"],
        "ifbench generate --help": ["generate", "--help"],
        "ifbench agents status --help": ["agents", "status", "--help"],
        "ifbench merge --help": ["merge", "--help"],
        "ifbench compare --help": ["compare", "--help"],
        "ifbench verify (1 core case)": ["verify", "--in", str(paths["core"])],
        "ifbench verify (1 ruff case)": ["verify", "--in", str(paths["ruff"])],
        "ifbench verify (core + another benchmark)": ["verify", "--in", str(paths["two"])],
        "ifbench verifiers --json": ["verifiers", "--json"],
    }


def run_once(argv: list[str] | None, folder: Path, env: dict[str, str]) -> tuple[float, float, int, list[str], str]:
    """Wall seconds, CPU seconds, exit status, imported modules and output of one run."""
    modules = folder / "modules.txt"
    modules.unlink(missing_ok=True)
    command = [sys.executable, "-c", "pass"] if argv is None else [sys.executable, "-c", _RUNNER, str(modules), *argv]
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    names = modules.read_text(encoding="utf-8").split("\n") if modules.exists() else []
    return seconds, usage.ru_utime + usage.ru_stime, proc.returncode, names, out.decode("utf-8", "replace")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="runs per row; medians are kept (default 15)")
    parser.add_argument("--source", type=Path, default=None, metavar="DIR",
                        help="a checkout whose pytest_ifbench to run instead of the installed one")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)

    env = dict(os.environ)
    if args.source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(args.source.resolve()), env.get("PYTHONPATH"))))
    rows: dict[str, dict] = {}
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-cli-startup-") as tmp:
        folder = Path(tmp)
        for label, command in commands(folder).items():
            walls, cpus = [], []
            for _ in range(args.repeat):
                wall, cpu, code, modules, out = run_once(command, folder, env)
                walls.append(wall)
                cpus.append(cpu)
            passed = code == 0 and (command is None or command[0] != "verify" or '"passed": false' not in out)
            if not passed:
                print(f"{label}: exit {code}\n{out[-2000:]}", file=sys.stderr)
                ok = False
            ours = [m for m in modules if m.startswith("pytest_ifbench")]
            rows[label] = {
                "wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus), "exit": code,
                "modules": len(modules), "project_modules": len(ours),
                "benchmarks": sorted({m.split(".")[2] for m in ours if m.startswith("pytest_ifbench.benchmarks.")
                                      and m.count(".") >= 2}),
                "pytest": "pytest" in modules, "walls": walls, "cpus": cpus,
            }
    load = os.getloadavg()[0]
    print(f"ifbench start-up ({'source ' + str(args.source) if args.source else 'installed checkout'}), "
          f"median of {args.repeat}, {os.cpu_count()} CPUs, load {load:.1f}")
    print(f"  {'command':<44}{'wall':>9}{'CPU':>9}{'modules':>9}  pytest  benchmarks imported")
    for label, row in rows.items():
        print(f"  {label:<44}{row['wall_s'] * 1e3:>6.0f} ms{row['cpu_s'] * 1e3:>6.0f} ms{row['modules']:>9}  "
              f"{'yes' if row['pytest'] else 'no':<6}  {', '.join(row['benchmarks']) or '-'}")
    if load > (os.cpu_count() or 1) / 2:
        print(f"  note: load average {load:.1f} on {os.cpu_count()} CPUs: wall times are noisy, CPU times less so")
    if args.json:
        args.json.write_text(json.dumps({"source": str(args.source) if args.source else None, "repeat": args.repeat,
                                         "load": load, "rows": rows}, indent=1) + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
