#!/usr/bin/env python
"""Benchmark: what an agent run's prompts cost at Anthropic's prices, with and without cache marks.

An agent step resends the whole conversation; Anthropic bills a prompt prefix it has cached at 0.1x
the input price (and the part written to its cache at 1.25x) -- but only where the request marks
blocks with ``cache_control``. Each step of the built-in loop and of a relayed real CLI now asks for
that (``ModelClient.complete(..., prompt_cache=True)``: the system text and the last message).

Each agent here runs ``--steps`` scripted steps against the local stub server as
``anthropic/claude-sonnet-4-5`` (the ``anthropic`` SDK route, a fake key), and the stub keeps every
``/v1/messages`` body the run sent. Those bodies are billed twice by :func:`bill`, an emulation of
Anthropic's documented prompt caching: once as sent (with the marks) and once with the marks taken out
(what every run paid before). The stub itself does not cache; the emulation:

* the prompt is tools, then system blocks, then each message's blocks, in order; a mark ends a prefix;
* a marked prefix of at least ``--min-tokens`` (1,024: Claude Sonnet's minimum) is written to the cache;
* a request reads the longest cached prefix ending at a mark or up to 20 blocks before one;
* tokens are estimated as characters / 4 of each block's JSON (the same estimate for both bills);
* entries never expire (a step comes seconds after the last, well within the 5-minute lifetime).

Only the prompt side is billed: the replies are the same either way.

Usage (from the repository root)::

    python perf/bench_prompt_cache.py                       # built-in loop + every installed CLI, 10 steps
    python perf/bench_prompt_cache.py --steps 20 --clis claude_code --json cache.json
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import hashlib
import json
import os
import platform
import sys
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import source_revision
from bench_agent_steps import _cli_script, _installed_clis, _run, _script

from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.workspace import Workspace, sandbox_problem
from pytest_ifbench.models.openai_compat import close_sessions
from pytest_ifbench.models.prices import entry_for
from pytest_ifbench.models.providers import make_client
from pytest_ifbench.testing import StubServer
from pytest_ifbench.testing.anthropic_wire import cache_order

MODEL = "anthropic/claude-sonnet-4-5"
#: How far back from a mark Anthropic looks for a cached prefix, in blocks.
LOOKBACK = 20


def bill(bodies: Sequence[dict[str, Any]], *, marked: bool, min_tokens: int) -> dict[str, float]:
    """Prompt tokens plain / read from the cache / written to it over ``bodies`` in order, and their cost
    at the model's input, cache-read and cache-write prices (see the module docstring)."""
    prices = entry_for(MODEL) or {}
    cached: set[str] = set()
    totals = {"plain": 0, "read": 0, "written": 0}
    for body in bodies:
        digest, hashes, sizes, marks = hashlib.sha256(), [], [], []
        for index, (text, mark) in enumerate(cache_order(body)):
            digest.update(text.encode())
            hashes.append(digest.hexdigest())
            sizes.append((sizes[-1] if sizes else 0) + max(1, len(text) // 4))
            if mark and marked:
                marks.append(index)
        hit = max((j for m in marks for j in range(m, max(-1, m - LOOKBACK), -1) if hashes[j] in cached),
                  default=-1)
        read = sizes[hit] if hit >= 0 else 0
        last = max((m for m in marks if sizes[m] >= min_tokens), default=-1)
        written = sizes[last] - read if last > hit else 0
        cached.update(hashes[m] for m in marks if sizes[m] >= min_tokens)
        totals["read"] += read
        totals["written"] += written
        totals["plain"] += sizes[-1] - read - written
    cost = (totals["plain"] * prices["input_cost_per_token"] + totals["read"] * prices["cache_read_input_token_cost"]
            + totals["written"] * prices["cache_creation_input_token_cost"])
    return {**totals, "usd": round(cost, 6)}


def _bodies(stub: StubServer) -> list[dict[str, Any]]:
    return [r.body for r in stub.requests if isinstance(r.body, dict) and "messages" in r.body
            and "max_tokens" in r.body]


async def _closing(call: Any) -> Any:
    try:
        return await call
    finally:
        await close_sessions()  # the SDK route's aiohttp sessions belong to this event loop


def run_agent(name: str, steps: int) -> list[dict[str, Any]]:
    """The ``/v1/messages`` bodies of one ``steps``-step run of ``name`` (``loop``: the built-in loop)."""
    with StubServer() as stub, tempfile.TemporaryDirectory() as tmp, Workspace.create(None) as workspace:
        client = make_client(MODEL, api_base=stub.url.removesuffix("/v1"))
        if name == "loop":
            _script(stub, "bash", {"command": "true"}, steps)
            asyncio.run(_closing(_run(client, workspace, steps, Path(tmp) / "trajectory.json")))
        else:
            from pytest_ifbench.agents.cli import run_cli

            _cli_script(stub, name)
            result = asyncio.run(_closing(run_cli(
                name, workspace=workspace, queries=["Write hello.txt, again and again."], system=None,
                model_name=MODEL.split("/")[1], client=client, submit=None,
                options=AgentOptions(max_steps=steps, max_seconds=600), log_path=Path(tmp) / "raw.jsonl")))
            if result.harness_error:
                raise SystemExit(f"{name}: {result.harness_error}")
        return _bodies(stub)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--clis", nargs="*", default=None, metavar="NAME",
                        help="real CLIs to run (default: every installed one; none after --clis alone)")
    parser.add_argument("--min-tokens", type=int, default=1024, help="the smallest prefix cached (default: 1024)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    problem = sandbox_problem()
    if problem:
        print(f"sandbox unavailable: {problem}", file=sys.stderr)
        return 2
    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-ifbench-bench-0123456789"
    rows = {}
    for name in ["loop", *(_installed_clis() if args.clis is None else args.clis)]:
        bodies = run_agent(name, args.steps)
        rows[name] = {"requests": len(bodies),
                      "without_marks": bill(bodies, marked=False, min_tokens=args.min_tokens),
                      "with_marks": bill(bodies, marked=True, min_tokens=args.min_tokens)}
    print(f"prompt cost of a {args.steps}-step agent run as {MODEL} (Anthropic's prompt caching emulated, "
          f"tokens ~ chars/4)")
    print(f"{'agent':<12} {'requests':>8} {'prompt tokens':>14} {'before':>10} {'now':>10} {'ratio':>6}"
          f"   now: read / written / plain tokens")
    for name, row in rows.items():
        before, now = row["without_marks"], row["with_marks"]
        print(f"{name:<12} {row['requests']:>8} {before['plain']:>14,} {before['usd']:>9.4f}$ {now['usd']:>9.4f}$ "
              f"{now['usd'] / before['usd']:>6.2f}   {now['read']:,} / {now['written']:,} / {now['plain']:,}")
    if args.json:
        args.json.write_text(json.dumps({
            "date": datetime.date.today().isoformat(), "machine": platform.platform(), "model": MODEL,
            "steps": args.steps, "min_tokens": args.min_tokens, "rows": rows, **source_revision()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
