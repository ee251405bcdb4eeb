#!/usr/bin/env python
"""Benchmark: VeriCode ruff checks, one ruff process per instruction (paper) vs one per response (ours).

Builds a seeded corpus of model-like replies (the bundled tasks' reference
solutions with rule-violating snippets mixed in,
``pytest_ifbench/benchmarks/vericode/corpus.py``) and gives each reply a
random set of K ruff-backed VeriCode instructions with parameters drawn, as the
suite generator does, from their recommended values.

* **paper**: the helper of the paper's appendix B.1, run once per instruction
  per reply: ``ruff check - --select ... [--config ...] --no-fix
  --force-exclude`` with the code on stdin; the instruction passes when ruff
  exits 0. ``--isolated`` is added so that no configuration file around the
  working directory changes the result.
* **ours**: what a suite run does for a reply, ``_verify.evaluate`` on all its
  checks: the rule selectors are expanded to exact codes (``ruff
  --show-settings``, cached per process, so the first replies pay for it and
  that cost is included), then one ``ruff check`` process for the reply, and
  violations are mapped back to each instruction by exact rule code. It is
  timed twice: cold, and again with the expansions cached (a long suite run
  meets few distinct parameter values, so that is the steady state).

Both run sequentially in this process. Every verdict of "ours" must equal the
paper-style verdict (exit status 1 otherwise). Prints a table; ``--json``
writes the numbers.

Usage (from the repository root)::

    python perf/bench_vericode_ruff.py                 # 500 replies x 5 instructions
    python perf/bench_vericode_ruff.py --responses 1000 --k 5 --json ruff.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))

from pytest_ifbench import _ruff
from pytest_ifbench._model_types import CheckSpec
from pytest_ifbench._plugins import default_registry
from pytest_ifbench._text import extract_code
from pytest_ifbench._verify import VerifyContext, evaluate
from pytest_ifbench.benchmarks.vericode.corpus import build_corpus, instruction_sets
from pytest_ifbench.benchmarks.vericode.instructions import BY_ID


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--responses", type=int, default=500, help="replies in the corpus (default 500)")
    parser.add_argument("--k", type=int, default=5, help="ruff-backed instructions per reply (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--full-range", action="store_true",
                        help="draw 30%% of integer parameters from their whole allowed range (more distinct rule "
                             "expansions) instead of the recommended values the generator uses")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)

    responses = build_corpus(args.responses, seed=args.seed)
    sets = instruction_sets(args.responses, args.k, seed=args.seed, ruff_only=True, full_range=args.full_range)
    registry = default_registry()
    ctx = VerifyContext(registry=registry)
    _ruff.enabled_codes.cache_clear()

    runs = {"groups": 0}
    real_run_group = _ruff.run_group

    def counting_run_group(code, checks, **kwargs):
        runs["groups"] += 1
        return real_run_group(code, checks, **kwargs)

    def run_ours() -> tuple[list[dict[str, bool]], float]:
        start = time.perf_counter()
        verdicts = []
        for response, chosen in zip(responses, sets):
            checks = [CheckSpec(id=i, verifier=f"vericode.{i}", params=BY_ID[i].validate(p)) for i, p in chosen]
            verdicts.append({o.check.id: o.passed for o in evaluate(checks, response, ctx)})
        return verdicts, time.perf_counter() - start

    _ruff.run_group = counting_run_group
    ours, ours_seconds = run_ours()  # cold: pays for every rule expansion
    _ruff.run_group = real_run_group
    expansions = _ruff.enabled_codes.cache_info().misses
    ours_warm, warm_seconds = run_ours()  # warm: expansions cached, as in a long suite run
    assert ours_warm == ours

    start = time.perf_counter()
    paper = [{i: paper_style(extract_code(response), i, p) for i, p in chosen} for response, chosen in
             zip(responses, sets)]
    paper_seconds = time.perf_counter() - start

    checks_total = sum(len(chosen) for chosen in sets)
    mismatches = [(n, i) for n, (a, b) in enumerate(zip(ours, paper)) for i in a if a[i] != b[i]]
    passed = sum(v for verdicts in paper for v in verdicts.values())
    result = {
        "date": datetime.date.today().isoformat(), "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs", "ruff": _ruff_version(),
        "responses": args.responses, "instructions_per_response": args.k, "full_range": args.full_range,
        "checks": checks_total,
        "checks_passed": passed, "mismatches": len(mismatches),
        "paper": {"seconds": round(paper_seconds, 3), "ruff_processes": checks_total,
                  "ms_per_response": round(1000 * paper_seconds / args.responses, 2)},
        "ours": {"seconds": round(ours_seconds, 3), "ruff_processes": runs["groups"] + expansions,
                 "check_processes": runs["groups"], "expansion_processes": expansions,
                 "ms_per_response": round(1000 * ours_seconds / args.responses, 2)},
        "ours_warm": {"seconds": round(warm_seconds, 3), "ruff_processes": runs["groups"],
                      "ms_per_response": round(1000 * warm_seconds / args.responses, 2)},
        "speedup": round(paper_seconds / ours_seconds, 2) if ours_seconds else None,
        "speedup_warm": round(paper_seconds / warm_seconds, 2) if warm_seconds else None,
    }
    print(f"VeriCode ruff checks: {args.responses} replies x {args.k} instructions = {checks_total} checks "
          f"({passed} pass), ruff {result['ruff']}")
    print(f"  {'':<32}{'seconds':>9}{'ms/reply':>10}{'ruff processes':>16}")
    print(f"  {'paper (1 process/instruction)':<32}{paper_seconds:>9.2f}{result['paper']['ms_per_response']:>10.2f}"
          f"{checks_total:>16}")
    print(f"  {'ours (1 process/reply)':<32}{ours_seconds:>9.2f}{result['ours']['ms_per_response']:>10.2f}"
          f"{runs['groups'] + expansions:>16}  ({runs['groups']} checks + {expansions} rule expansions)")
    print(f"  {'ours, rule expansions cached':<32}{warm_seconds:>9.2f}{result['ours_warm']['ms_per_response']:>10.2f}"
          f"{runs['groups']:>16}")
    print(f"  speedup: {result['speedup']}x (cold), {result['speedup_warm']}x (expansions cached)    "
          f"verdict mismatches: {len(mismatches)}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if mismatches:
        print(f"MISMATCH: {mismatches[:10]}", file=sys.stderr)
        return 1
    return 0


def _ruff_version() -> str:
    proc = subprocess.run([_ruff.ruff_binary(), "--version"], capture_output=True, text=True)
    return proc.stdout.strip().split()[-1] if proc.returncode == 0 else "?"


if __name__ == "__main__":
    raise SystemExit(main())
