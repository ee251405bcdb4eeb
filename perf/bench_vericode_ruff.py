#!/usr/bin/env python
"""Benchmark: VeriCode ruff checks per check, per reply and all at once, in ``ifbench verify`` and a suite.

Builds a seeded corpus of model-like replies (the bundled tasks' reference
solutions with rule-violating snippets mixed in,
``pytest_ifbench/benchmarks/vericode/corpus.py``) and gives each reply a
random set of K ruff-backed VeriCode instructions, parameters drawn as the
suite generator draws them. Three ways to run ruff:

* **per check**: one ruff process per check. In the library this is the
  paper's helper (appendix B.1: ``ruff check - --select ... [--config ...]
  --no-fix``, pass = exit status 0, plus ``--isolated``); in ``ifbench
  verify`` and the suite it is the plugin with every check in its own group
  and batching off.
* **per reply**: one ruff process per reply for all its checks
  (``ruff.check.check_code``), batching off. In ``ifbench verify`` every line is
  one check, so this equals per check and is not run.
* **all at once**: one ruff process for every reply (``ruff.batch.check_many``
  through a ``RuffBatcher``): what ``ifbench verify`` and suite runs do.

Measured three times over:

1. **library**: the ruff work alone, in this process (rule expansions cached
   after a warm-up, as in a long run); every verdict of every mode must equal
   the paper-style verdict (exit status 1 otherwise);
2. **ifbench verify** on R x K JSONL lines (one check per line), end to end
   in a subprocess (all at once and the floor: the command exactly as its
   console script runs it; per check: this script as the child, which
   patches the plugin first); the outputs of the modes must be identical;
3. **suite**: ``pytest`` on a suite of R instances (each reply recorded in
   the suite, K checks each), end to end in a subprocess; the check verdicts
   in ``ifbench-results.json`` must be identical.

The **floor** (column "no ruff") runs the same lines / suite with every
check replaced by ``ifbench.word_count`` set up to give the same verdict
(so failure reports cost the same): what the run costs without ruff.
Prints a table; ``--json`` writes the numbers.

Usage (from the repository root)::

    python perf/bench_vericode_ruff.py                     # 200 replies x 5 instructions
    python perf/bench_vericode_ruff.py --responses 500 --repeat 3 --json ruff.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))

from pytest_ifbench._text import extract_code  # noqa: E402
from pytest_ifbench._types import CheckSpec  # noqa: E402
from pytest_ifbench._verify import VerifyContext, evaluate  # noqa: E402
from pytest_ifbench.benchmarks.vericode.corpus import build_corpus, instruction_sets  # noqa: E402
from pytest_ifbench.benchmarks.vericode.instructions import BY_ID  # noqa: E402
from pytest_ifbench.ruff import check as _ruff  # noqa: E402
from pytest_ifbench.ruff.batch import RuffBatcher  # noqa: E402

MODES = ("per-check", "per-reply", "all-at-once")
#: Plugins of the development environment that are not the project's (see perf/README.md).
BLOCKED = ["-p", "no:hypothesispytest", "-p", "no:benchmark", "-p", "no:cacheprovider"]


# --------------------------------------------------------------------------- child processes


def apply_mode(mode: str) -> None:
    """Switch the plugin to ``mode`` in this process (children only)."""
    if mode in ("per-check", "per-reply"):
        RuffBatcher.results = lambda self, code, checks: None  # type: ignore[method-assign]
    if mode == "per-check":
        _ruff.plan_runs = lambda checks: [[check] for check in checks]


def child(mode: str, tool: str, args: list[str]) -> int:
    apply_mode(mode)
    if tool == "verify":
        from pytest_ifbench.cli.main import main as cli_main

        return cli_main(["verify", *args])
    import pytest

    return int(pytest.main(args))


# --------------------------------------------------------------------------- inputs


def write_inputs(folder: Path, responses: list[str], sets: list[list[tuple[str, dict]]],
                 verdicts: list[dict[str, bool]]) -> dict[str, Path]:
    """The cases and the suite, and their floors: each check replaced by ``ifbench.word_count`` with
    the same verdict (min 1 word passes, max 0 words fails), so reporting costs the same."""
    import yaml

    def floor_params(n: int, iid: str) -> dict[str, int]:
        return {"min": 1} if verdicts[n][iid] else {"max": 0}

    paths = {name: folder / name for name in ("cases.jsonl", "floor.jsonl", "suite.yaml", "floor.yaml")}
    with paths["cases.jsonl"].open("w", encoding="utf-8") as cases, paths["floor.jsonl"].open("w") as floor:
        for n, (reply, chosen) in enumerate(zip(responses, sets)):
            for iid, params in chosen:
                cases.write(json.dumps({"id": f"{n}-{iid}", "verifier": f"vericode.{iid}", "params": params,
                                        "response": reply}) + "\n")
                floor.write(json.dumps({"id": f"{n}-{iid}", "verifier": "ifbench.word_count",
                                        "params": floor_params(n, iid), "response": reply}) + "\n")
    for name, floor_suite in (("suite.yaml", False), ("floor.yaml", True)):
        instances = []
        for n, (reply, chosen) in enumerate(zip(responses, sets)):
            checks = [{"id": iid, "verifier": "ifbench.word_count", "params": floor_params(n, iid)} if floor_suite else
                      {"id": iid, "verifier": f"vericode.{iid}", "params": params} for iid, params in chosen]
            instances.append({"id": f"r{n:04d}", "prompt": "write it", "response": reply, "checks": checks})
        paths[name].write_text(yaml.safe_dump({"ifbench": 1, "benchmark": "ruffbench", "instances": instances},
                                               sort_keys=False), encoding="utf-8")
    return paths


#: ``ifbench`` exactly as its console script runs it (the unpatched ``ifbench verify`` rows).
CONSOLE_SCRIPT = "import sys; from pytest_ifbench.cli.main import main; sys.exit(main(sys.argv[1:]))"


def run_child(mode: str, tool: str, args: list[str], cwd: Path) -> tuple[float, int]:
    if tool == "verify" and mode in ("all-at-once", "floor"):  # nothing to patch: the real command
        command = [sys.executable, "-c", CONSOLE_SCRIPT, "verify", *args]
    else:  # this script as the child, to switch the plugin to ``mode`` first
        command = [sys.executable, str(Path(__file__).resolve()), "--child", mode, tool, "--", *args]
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(command)} exited {proc.returncode}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return seconds, proc.returncode


def verification_seconds(path: Path) -> float:
    """The suite's verification time as the results file records it (summed over instances)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    return sum((r.get("durations") or {}).get("verification", 0.0) for r in doc["instances"])


def suite_verdicts(path: Path) -> list:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return sorted((r["instance"], c["id"], c["passed"], c.get("error")) for r in doc["instances"] for c in r["checks"])


# --------------------------------------------------------------------------- library level


def paper_style(code: str, instruction_id: str, params) -> bool:
    instruction = BY_ID[instruction_id]
    args = ["--select", ",".join(instruction.select(params))]
    for setting in instruction.settings(params) if instruction.settings else ():
        args += ["--config", f"{setting.key} = {_ruff._toml(setting.value)}"]
    proc = subprocess.run([_ruff.ruff_binary(), "check", "--isolated", "-", *args, "--no-fix", "--force-exclude"],
                          input=code, capture_output=True, text=True, encoding="utf-8")
    if proc.returncode not in (0, 1):
        raise RuntimeError(proc.stderr)
    return proc.returncode == 0


def library(responses: list[str], sets: list, repeat: int) -> dict:
    from pytest_ifbench._composition import default_registry

    registry = default_registry()
    ctx = VerifyContext(registry=registry)
    specs = [[CheckSpec(id=i, verifier=f"vericode.{i}", params=BY_ID[i].validate(p)) for i, p in chosen]
             for chosen in sets]

    def per_check() -> list[dict[str, bool]]:
        return [{i: paper_style(extract_code(r), i, p) for i, p in chosen} for r, chosen in zip(responses, sets)]

    def per_reply() -> list[dict[str, bool]]:
        return [{o.check.id: o.passed for o in evaluate(s, r, ctx)} for r, s in zip(responses, specs)]

    def at_once() -> list[dict[str, bool]]:
        batcher = RuffBatcher(registry, max_replies=len(responses))
        for reply, checks in zip(responses, specs):
            batcher.queue(checks, reply)
        out = [{o.check.id: o.passed for o in evaluate(s, r, ctx, ruff=batcher)} for r, s in zip(responses, specs)]
        assert batcher.batches == 1
        return out

    per_reply()  # warm-up: every rule expansion cached, as in a long run
    figures, verdicts = {}, {}
    for mode, func in zip(MODES, (per_check, per_reply, at_once)):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            verdicts[mode] = func()
            times.append(time.perf_counter() - start)
        figures[mode] = statistics.median(times)
    mismatches = sum(verdicts[mode] != verdicts["per-check"] for mode in MODES)
    passed = sum(v for reply in verdicts["per-check"] for v in reply.values())
    return {"seconds": figures, "mismatches": mismatches, "checks_passed": passed, "verdicts": verdicts["per-check"]}


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        return child(argv[1], argv[2], argv[4:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--responses", type=int, default=200, help="replies in the corpus (default 200)")
    parser.add_argument("--k", type=int, default=5, help="ruff-backed instructions per reply (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1, help="runs per figure; the median is kept (default 1)")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)

    responses = build_corpus(args.responses, seed=args.seed)
    sets = instruction_sets(args.responses, args.k, seed=args.seed, ruff_only=True)
    checks = sum(len(chosen) for chosen in sets)
    lib = library(responses, sets, args.repeat)

    rows: dict[str, dict[str, float]] = {"verify": {}, "suite": {}, "suite-verification": {}}
    same = True
    with tempfile.TemporaryDirectory(prefix="bench-vericode-ruff-") as tmp:
        folder = Path(tmp)
        paths = write_inputs(folder, responses, sets, lib.pop("verdicts"))
        outputs = {}
        for tool, modes in (("verify", ("per-check", "all-at-once", "floor")), ("suite", (*MODES, "floor"))):
            for mode in modes:
                times, verifying = [], []
                for _ in range(args.repeat):
                    out = folder / f"{tool}-{mode}.out"
                    if tool == "verify":
                        source = paths["floor.jsonl" if mode == "floor" else "cases.jsonl"]
                        cmd = ["--in", str(source), "--out", str(out)]
                    else:
                        suite = paths["floor.yaml" if mode == "floor" else "suite.yaml"]
                        cmd = [str(suite), "-q", *BLOCKED, "--ifbench-summary=", "--ifbench-results", str(out)]
                    seconds, _ = run_child("all-at-once" if mode == "floor" else mode, tool, cmd, folder)
                    times.append(seconds)
                    if tool == "suite":
                        verifying.append(verification_seconds(out))
                rows[tool][mode] = statistics.median(times)
                if verifying:
                    rows["suite-verification"][mode] = statistics.median(verifying)
                if mode != "floor":
                    text = (out.read_text(encoding="utf-8") if tool == "verify" else suite_verdicts(out))
                    outputs.setdefault(tool, text)
                    same = same and outputs[tool] == text

    result = {
        "date": datetime.date.today().isoformat(), "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs", "ruff": _ruff_version(),
        "responses": args.responses, "instructions_per_response": args.k, "checks": checks, "repeat": args.repeat,
        "library": lib, "verify": rows["verify"], "suite": rows["suite"],
        "suite_verification": rows["suite-verification"],
        "identical_outputs": same and lib["mismatches"] == 0,
    }
    print(f"VeriCode ruff checks: {args.responses} replies x {args.k} instructions = {checks} checks "
          f"({lib['checks_passed']} pass), ruff {result['ruff']}, median of {args.repeat}")
    print(f"  {'':<34}{'per check':>11}{'per reply':>11}{'all at once':>13}{'no ruff':>9}{'speedup':>9}"
          f"{'net of floor':>14}")
    table = (("library (ruff work only)", lib["seconds"]), ("ifbench verify (end to end)", rows["verify"]),
             ("suite run (end to end)", rows["suite"]),
             ("suite, verification (results file)", rows["suite-verification"]))
    for label, row in table:
        cells = [f"{row[m]:>9.2f} s" if m in row else f"{'-':>11}" for m in MODES]
        floor = f"{row['floor']:>7.2f} s" if "floor" in row else f"{'-':>9}"
        speedup = row["per-check"] / row["all-at-once"] if row["all-at-once"] else float("nan")
        net = ((row["per-check"] - row["floor"]) / (row["all-at-once"] - row["floor"])
               if "floor" in row and row["all-at-once"] > row["floor"] else None)
        shown = f"{net:>12.1f}x" if net is not None else f"{'-':>13}"
        print(f"  {label:<34}{cells[0]}{cells[1]}{cells[2]:>13}{floor}{speedup:>8.1f}x{shown}")
    print(f"  identical verdicts and outputs in every mode: {result['identical_outputs']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0 if result["identical_outputs"] else 1


def _ruff_version() -> str:
    proc = subprocess.run([_ruff.ruff_binary(), "--version"], capture_output=True, text=True)
    return proc.stdout.strip().split()[-1] if proc.returncode == 0 else "?"


if __name__ == "__main__":
    raise SystemExit(main())
