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

**Real CLIs** (``--clis``, default: every installed one): the same scripted
stub drives Claude Code, Kilo and Droid, each inside bubblewrap behind the
recording proxy, writing a file with its own write tool at every step until
``max_steps`` ends the run. Per CLI: **start-up** (run start to the CLI's first
model request), **step** (median / p90 of the time between two consecutive
model requests of the main conversation: proxy + model call + the CLI's own
handling + its tool), **model call** (the proxy's in-flight time per call,
stub at 0 ms) and **CLI + tool** (the rest of the step).

Usage (from the repository root)::

    python perf/bench_agent_steps.py                 # 20 steps x 3 runs per tool
    python perf/bench_agent_steps.py --steps 50 --repeat 5 --json steps.json
    python perf/bench_agent_steps.py --clis claude_code droid --cli-steps 10   # real CLIs only these
    python perf/bench_agent_steps.py --clis                                      # no real CLI
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


#: Each CLI's own file-writing tool (a distinct content per step keeps loop guards quiet).
CLI_WRITE = {
    "claude_code": ("Write", {"file_path": "/workspace/hello.txt"}),
    "kilo": ("write", {"filePath": "/workspace/hello.txt"}),
    "droid": ("Create", {"file_path": "/workspace/hello.txt"}),
}


def _installed_clis() -> list[str]:
    from pytest_ifbench.agents.cli import AGENT_CLIS, cli_problem

    return [name for name in AGENT_CLIS if cli_problem(name) is None]


def _cli_script(stub: StubServer, name: str) -> None:
    count = [0]

    def answer(body: dict[str, Any]) -> Reply:
        if not body.get("tools"):  # a CLI's side call (a title, a summary)
            return Reply(content="ok")
        count[0] += 1
        tool, arguments = CLI_WRITE[name]
        return Reply(tool_calls=[{"function": {"name": tool, "arguments": {
            **arguments, "content": f"step {count[0]}\n"}}}])

    stub.default = answer


def measure_cli(name: str, steps: int, repeat: int) -> dict[str, Any]:
    """One real CLI's start-up and per-step cost (see the module doc)."""
    import time

    from pytest_ifbench.agents.cli import run_cli

    rows: dict[str, list[float]] = {"startup": [], "step": [], "model": [], "cli_tool": []}
    with StubServer() as stub, tempfile.TemporaryDirectory() as tmp:
        _cli_script(stub, name)
        os.environ["OPENAI_API_KEY"] = FAKE_API_KEY
        for index in range(repeat):
            client = ModelClient(model="openai/stub", api_base=stub.url)
            log = Path(tmp) / f"{name}-{index}.jsonl"
            with Workspace.create(None) as workspace:
                began = time.time()
                result = asyncio.run(run_cli(name, workspace=workspace, queries=["Write hello.txt, again and again."],
                                             system=None, model_name="claude-sonnet-4-5", client=client,
                                             submit=None, options=AgentOptions(max_steps=steps, max_seconds=600),
                                             log_path=log))
            if result.harness_error:
                raise SystemExit(f"{name}: {result.harness_error}")
            records = [json.loads(line) for line in log.read_text().splitlines()]
            main = [r["request_time"] / 1000 for r in records
                    if "refused" not in r and (r.get("request_body") or {}).get("tools")]
            rows["startup"].append(main[0] - began)
            deltas = [b - a for a, b in zip(main, main[1:], strict=False)]
            rows["step"] += deltas
            usage = result.usage
            per_call = usage.model_seconds / max(usage.steps, 1)
            rows["model"] += [per_call] * len(deltas)
            rows["cli_tool"] += [max(0.0, d - per_call) for d in deltas]
    return {key: _stats(values) for key, values in rows.items() if values}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--clis", nargs="*", default=None, metavar="NAME",
                        help="real CLIs to measure (default: every installed one; none after --clis alone)")
    parser.add_argument("--cli-steps", type=int, default=10)
    parser.add_argument("--cli-repeat", type=int, default=2)
    parser.add_argument("--no-loop", action="store_true", help="measure the real CLIs only")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # pydantic's import-time noise from litellm
    problem = sandbox_problem()
    if problem:
        print(f"sandbox unavailable: {problem}", file=sys.stderr)
        return 2
    results = {} if args.no_loop else {tool: measure(tool, args.steps, args.repeat) for tool in TOOLS}
    if results:
        print(f"agent step cost, {args.steps} steps x {args.repeat} runs, stub at 0 ms "
              f"({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})")
        print(f"{'tool':<10} {'phase':<7} {'step':>14} {'model call':>14} {'tool':>14} {'loop':>14}"
              "   (median / p90 ms)")
    for tool, phases in results.items():
        for phase, rows in phases.items():
            cells = [f"{rows[k]['median_ms']:>6.1f} / {rows[k]['p90_ms']:<5.1f}"
                     for k in ("step", "model", "tool", "loop")]
            print(f"{tool:<10} {phase:<7} " + " ".join(f"{c:>14}" for c in cells))
    clis = _installed_clis() if args.clis is None else args.clis
    cli_results = {name: measure_cli(name, args.cli_steps, args.cli_repeat) for name in clis}
    if cli_results:
        print(f"real CLI step cost (proxy + CLI), {args.cli_steps} steps x {args.cli_repeat} runs, stub at 0 ms")
        print(f"{'cli':<12} {'start-up':>16} {'step':>16} {'model call':>16} {'CLI + tool':>16}   (median / p90 ms)")
        for name, rows in cli_results.items():
            cells = [f"{rows[k]['median_ms']:>7.1f} / {rows[k]['p90_ms']:<6.1f}"
                     for k in ("startup", "step", "model", "cli_tool")]
            print(f"{name:<12} " + " ".join(f"{c:>16}" for c in cells))
    if args.json:
        args.json.write_text(json.dumps({
            "date": datetime.date.today().isoformat(), "machine": platform.platform(), "cores": os.cpu_count(),
            "steps": args.steps, "repeat": args.repeat, "results": results, "cli_steps": args.cli_steps,
            "cli_repeat": args.cli_repeat, "cli_results": cli_results, **source_revision(),
        }, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
