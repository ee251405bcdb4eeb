#!/usr/bin/env python
"""Benchmark: what one agent step costs the harness, model latency excluded.

A scripted run of the built-in loop against the local stub server at 0 ms
latency: every step is one model call answered with one tool call, executed
in a real bubblewrap workspace, then a final ``finish``. Per step it reports
(medians over the steps of ``--repeat`` runs):

* **step total** -- the loop's wall time for the step;
* **model call** -- ``ModelClient.complete`` round trip to a stub that answers
  at once: litellm's own cost plus ours (cache lookup and write, retries
  bookkeeping), the part of "harness overhead" spent on the call path;
* **tool** -- executing the tool in the sandbox (bubblewrap start-up dominates);
* **loop** -- the rest: argument validation, history, truncation, the
  trajectory write (once per step);

for two tools: ``bash`` running ``true`` and ``read_file`` (the file tools run
a small Python runner inside the sandbox). A second pass re-runs the same
script from the cache (zero model calls) to show the replay cost.

Usage (from the repository root)::

    python perf/bench_agent_steps.py                 # 20 steps x 3 runs per tool
    python perf/bench_agent_steps.py --steps 50 --repeat 5 --json steps.json
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))

from _common import source_revision

from pytest_ifbench._types import GenerationParams
from pytest_ifbench.agents.loop import run_loop
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.profiles import ToolRegistry
from pytest_ifbench.agents.workspace import Workspace, sandbox_problem
from pytest_ifbench.models.cache import ResponseCache
from pytest_ifbench.models.client import ModelClient
from pytest_ifbench.testing import FAKE_API_KEY, Reply, StubServer

TOOLS = {
    "bash": ("bash", {"command": "true"}),
    "read_file": ("read_file", {"path": "notes.txt"}),
}


def _script(stub: StubServer, name: str, arguments: dict[str, Any], steps: int) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if done >= steps:
            call = {"id": f"call_{done}", "type": "function",
                    "function": {"name": "finish", "arguments": json.dumps({"answer": "done"})}}
        else:  # a distinct argument per step so the repeated-action guard never fires
            args = dict(arguments, **({"command": f"true {done}"} if name == "bash" else {"offset": done % 3 + 1}))
            call = {"id": f"call_{done}", "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)}}
        return Reply(tool_calls=[call])

    stub.default = answer


async def _run(client: ModelClient, workspace: Workspace, steps: int, trajectory: Path) -> Any:
    options = AgentOptions(max_steps=steps + 2, max_repeats=steps + 2)
    return await run_loop(client=client, messages=[{"role": "user", "content": "go"}],
                          profile=ToolRegistry().profile("generic"), workspace=workspace, options=options,
                          params=GenerationParams(max_tokens=64), trajectory_path=trajectory)


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median_ms": round(1000 * statistics.median(ordered), 2),
            "p90_ms": round(1000 * ordered[int(0.9 * (len(ordered) - 1))], 2)}


def measure(tool: str, steps: int, repeat: int) -> dict[str, Any]:
    name, arguments = TOOLS[tool]
    out: dict[str, Any] = {}
    with StubServer() as stub, tempfile.TemporaryDirectory() as tmp:
        _script(stub, name, arguments, steps)
        os.environ["OPENAI_API_KEY"] = FAKE_API_KEY
        cache = ResponseCache(Path(tmp) / "cache")
        for phase in ("fresh", "cached"):
            rows: dict[str, list[float]] = {"step": [], "model": [], "tool": [], "loop": []}
            for index in range(repeat):
                client = ModelClient(model="openai/stub", api_base=stub.url,
                                     cache=cache if phase == "cached" or index == 0 else None)
                with Workspace.create(None) as workspace:
                    (workspace.path / "notes.txt").write_text("one\ntwo\nthree\n")
                    calls = stub.calls
                    result = asyncio.run(_run(client, workspace, steps, Path(tmp) / f"t{index}.json"))
                    if phase == "cached" and stub.calls != calls:
                        raise SystemExit("the cached replay made model calls")
                for timing in result.timings[:-1]:  # the last step is `finish`
                    rows["step"].append(timing.total)
                    rows["model"].append(timing.model)
                    rows["tool"].append(timing.tools)
                    rows["loop"].append(max(0.0, timing.total - timing.model - timing.tools))
            out[phase] = {key: _stats(values) for key, values in rows.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # pydantic's import-time noise from litellm
    problem = sandbox_problem()
    if problem:
        print(f"sandbox unavailable: {problem}", file=sys.stderr)
        return 2
    results = {tool: measure(tool, args.steps, args.repeat) for tool in TOOLS}
    print(f"agent step cost, {args.steps} steps x {args.repeat} runs, stub at 0 ms "
          f"({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})")
    print(f"{'tool':<10} {'phase':<7} {'step':>14} {'model call':>14} {'tool':>14} {'loop':>14}   (median / p90 ms)")
    for tool, phases in results.items():
        for phase, rows in phases.items():
            cells = [f"{rows[k]['median_ms']:>6.1f} / {rows[k]['p90_ms']:<5.1f}"
                     for k in ("step", "model", "tool", "loop")]
            print(f"{tool:<10} {phase:<7} " + " ".join(f"{c:>14}" for c in cells))
    if args.json:
        args.json.write_text(json.dumps({
            "date": datetime.date.today().isoformat(), "machine": platform.platform(), "cores": os.cpu_count(),
            "steps": args.steps, "repeat": args.repeat, "results": results, **source_revision(),
        }, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
