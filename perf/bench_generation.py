#!/usr/bin/env python
"""Benchmark: concurrent generation against a local stub at fixed latency.

Generates (in a temporary directory) a suite of N single-turn instances with
two cheap checks each, starts the project's OpenAI-compatible stub server in
this process on 127.0.0.1 with a fixed per-request latency (200 ms by
default), and runs ``pytest`` on the suite in a subprocess with
``--ifbench-no-cache`` once per concurrency level.

For every level it reports

* ``wall``: wall time of the whole ``pytest`` subprocess;
* ``wall - start-up``: wall minus the fixed start-up measured by a run of a
  one-instance suite (interpreter, pytest and plugin import, litellm import on
  the first call, ...; the one model call's latency is subtracted);
* ``gen span``: generation time measured at the stub, from the first request
  received to the last request received plus its latency;
* ``ideal``: ``N * latency / concurrency``;
* ``ratio``: ``gen span / ideal`` (1.0 is perfect; the end-to-end ratio
  ``(wall - start-up) / ideal`` is in the JSON as ``ratio_end_to_end``);
* ``peak``: the stub's ``peak_concurrency`` (requests in flight at once);
* ``CPU``: user + system CPU seconds of the pytest process.

Usage (from the repository root)::

    python perf/bench_generation.py                 # concurrency 16 and 64
    python perf/bench_generation.py --full          # 1, 8, 16, 32, 64
    python perf/bench_generation.py --concurrency 4,128 --json out.json

Only the standard library and the project are used; everything lives in a
temporary directory that is removed at the end, and the stub is stopped.
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
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))

from _common import module_command, peak_rss_mb, source_revision, tail
from _generation_references import ANTHROPIC_BASELINE, INSPECT_TASK, LITELLM_BASELINE, OPENAI_BASELINE

from pytest_ifbench.testing import StubServer

#: pytest plugins that are installed in the development environment but are not
#: dependencies of pytest-ifbench; they are blocked (``-p no:NAME``) so that the
#: figures measure the project. ``--all-plugins`` keeps them (hypothesis alone
#: adds ~0.6 s to every run in its terminal-summary hook).
NON_DEPENDENCY_PLUGINS = ("hypothesispytest", "benchmark")

DEFAULT_LEVELS = (16, 64)
FULL_LEVELS = (1, 8, 16, 32, 64)

#: name -> the reference client's script (see perf/_generation_references.py)
REFERENCES = {"raw OpenAI SDK": OPENAI_BASELINE, "raw litellm": LITELLM_BASELINE,
              "raw Anthropic SDK": ANTHROPIC_BASELINE}


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One way a user names a model and its endpoint: the plugin's run, and the references it is held to."""

    title: str
    model: str
    #: ``--api-base`` given; else the endpoint is named by ``env`` (``{url}``: the stub's ``/v1`` URL).
    flag: bool = True
    env: tuple[tuple[str, str], ...] = ()
    #: The endpoint is the stub's root (the Anthropic SDK and litellm's anthropic/ add ``/v1`` themselves).
    root: bool = False
    references: tuple[str, ...] = ()
    #: The reference the goals compare with, and the goals (wall ratio by concurrency).
    goal_reference: str | None = None
    goals: tuple[tuple[int, float], ...] = ()


ROWS = {
    "openai-compatible": Row(title="OpenAI-compatible server (--api-base, direct path)", model="openai/stub",
                             references=("raw OpenAI SDK", "raw litellm"), goal_reference="raw OpenAI SDK",
                             goals=((16, 1.25), (64, 1.5))),
    "env-var": Row(title="the same server named by OPENAI_API_BASE", model="openai/stub", flag=False,
                   env=(("OPENAI_API_BASE", "{url}"),)),
    "openai-hosted": Row(title="OpenAI priced model (openai/gpt-4o-mini, openai SDK)", model="openai/gpt-4o-mini",
                         references=("raw OpenAI SDK",), goal_reference="raw OpenAI SDK",
                         goals=((16, 1.15), (64, 1.5))),
    "anthropic-hosted": Row(title="Anthropic (anthropic/claude-sonnet-4-5, anthropic SDK)",
                            model="anthropic/claude-sonnet-4-5", root=True,
                            env=(("ANTHROPIC_API_KEY", "sk-ant-fake"),), references=("raw Anthropic SDK",),
                            goal_reference="raw Anthropic SDK", goals=((16, 1.15), (64, 1.5))),
}
DEFAULT_ROWS = tuple(ROWS)


def write_suite(path: Path, count: int, *, start: int = 0) -> None:
    """A suite of ``count`` single-turn instances with two cheap checks each.

    The stub answers ``stub reply to: <prompt>``, so both checks pass.
    """
    lines = [
        "ifbench: 1",
        "benchmark: bench_generation",
        "defaults:",
        "  generation: {temperature: 0.0, max_tokens: 32}",
        "instances:",
    ]
    for i in range(start, start + count):
        lines += [
            f"  - id: inst-{i:05d}",
            f"    prompt: Write one short sentence about item number {i}.",
            "    checks:",
            "      - {id: words, verifier: ifbench.word_count, params: {min: 1, max: 100}}",
            "      - {id: says-reply, verifier: ifbench.keywords, params: {include: [reply]}}",
        ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def child_env() -> dict[str, str]:
    """Environment for the children: a fake key, no proxies, no stray pytest/OpenAI settings."""
    env = dict(os.environ)
    env["OPENAI_API_KEY"] = "sk-fake"  # any value; the stub ignores it
    for var in ("OPENAI_API_BASE", "OPENAI_BASE_URL", "ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL",
                "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                "http_proxy", "https_proxy", "all_proxy", "PYTEST_ADDOPTS"):
        env.pop(var, None)
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def run_pytest(args: list[str], *, cwd: Path, log: Path, timeout: float, env: dict[str, str] | None = None) -> dict:
    """Run ``python -m pytest ARGS`` (``env`` added to :func:`child_env`); wall time, CPU time and peak RSS."""
    env = child_env() | (env or {})
    cmd = module_command(sys.executable, "pytest", *args)
    with log.open("wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            rc, usage = _wait(proc, timeout)
        finally:
            if proc.returncode is None:
                proc.kill()
                proc.wait()
        wall = time.perf_counter() - start
    return {
        "cmd": cmd, "rc": rc, "wall_s": wall,
        "cpu_s": (usage.ru_utime + usage.ru_stime) if usage else None,
        "max_rss_mb": peak_rss_mb(log.read_bytes()),
    }


def _wait(proc: subprocess.Popen, timeout: float):
    """Reap ``proc`` with ``os.wait4`` (for its rusage), killing it after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage
        if time.monotonic() > deadline:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            raise TimeoutError(f"pytest ran past {timeout:.0f}s: {' '.join(proc.args)}")
        time.sleep(0.01)


def stub_span(server: StubServer, latency: float) -> tuple[float, int]:
    """(first request received -> last request received + latency, chat requests)."""
    stamps = [r.received_at for r in server.requests if r.path.endswith(("/chat/completions", "/v1/messages"))]
    if not stamps:
        return 0.0, 0
    return max(stamps) - min(stamps) + latency, len(stamps)


def run_reference(name: str, server: StubServer, work: Path, url: str, count: int, concurrency: int,
                  latency: float, timeout: float, *, model: str = "stub", env: dict[str, str] | None = None
                  ) -> dict | None:
    """One reference client (see ``REFERENCES``) at one level: its wall time and stub-side span."""
    script = work / f"reference_{name.replace(' ', '_').lower()}.py"
    script.write_text(REFERENCES[name], encoding="utf-8")
    server.reset()
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, str(script), url, str(count), str(concurrency), model], cwd=work,
                              env=child_env() | (env or {}), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"{name} at concurrency {concurrency} ran past {timeout:.0f}s", file=sys.stderr)
        return None
    wall = time.perf_counter() - start
    if proc.returncode != 0 or server.calls != count:
        print(f"{name} at concurrency {concurrency} failed (rc={proc.returncode}, "
              f"stub calls={server.calls}):\n{proc.stderr[-3000:]}", file=sys.stderr)
        return None
    measured = json.loads(proc.stdout.strip().splitlines()[-1])
    span, _ = stub_span(server, latency)
    ideal = count * latency / concurrency
    return {"wall_s": round(wall, 3), "generation_span_s": round(span, 3), "ratio": round(span / ideal, 3),
            "client_elapsed_s": round(measured["elapsed_s"], 3), "cpu_s": round(measured["cpu_s"], 3),
            "peak_concurrency": server.peak_concurrency}


def run_inspect(python: str, server: StubServer, work: Path, url: str, count: int, concurrency: int,
                latency: float, timeout: float) -> dict | None:
    """inspect_ai's ``inspect eval`` of the same prompts (see ``INSPECT_TASK``): wall time and span."""
    task = work / "inspect_bench.py"
    task.write_text(INSPECT_TASK.format(count=count), encoding="utf-8")
    # inspect_ai's generic OpenAI-compatible provider: openai-api/<name>/<model>, configured by <NAME>_BASE_URL
    env = child_env() | {"STUB_BASE_URL": url, "STUB_API_KEY": "sk-fake",
                         "INSPECT_LOG_DIR": str(work / "inspect-logs"), "INSPECT_DISPLAY": "none"}
    server.reset()
    cmd = [python, "-m", "inspect_ai", "eval", task.name, "--model", "openai-api/stub/stub",
           "--max-connections", str(concurrency), "--max-retries", "0", "--temperature", "0",
           "--max-tokens", "32", "--no-log-samples", "--display", "none"]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"inspect_ai at concurrency {concurrency} ran past {timeout:.0f}s", file=sys.stderr)
        return None
    wall = time.perf_counter() - start
    if proc.returncode != 0 or server.calls != count:
        print(f"inspect_ai at concurrency {concurrency} failed (rc={proc.returncode}, stub calls={server.calls}):"
              f"\n{(proc.stderr or proc.stdout)[-3000:]}", file=sys.stderr)
        return None
    span, _ = stub_span(server, latency)
    return {"wall_s": round(wall, 3), "generation_span_s": round(span, 3),
            "ratio": round(span / (count * latency / concurrency), 3), "peak_concurrency": server.peak_concurrency}


def inspect_python(option: str | None) -> tuple[str | None, str | None]:
    """(interpreter with inspect_ai, None) or (None, why the inspect_ai column is left out)."""
    if not option:
        return None, "inspect_ai column skipped: no --inspect-python given"
    probe = subprocess.run([option, "-c", "import inspect_ai, openai"], capture_output=True, text=True)
    if probe.returncode != 0:
        return None, f"inspect_ai column skipped: {option} cannot import inspect_ai and openai"
    return option, None


def pytest_args(suite: Path, url: str, concurrency: int, blocked: tuple[str, ...] = (),
                row: Row = ROWS["openai-compatible"]) -> list[str]:
    return [
        str(suite), "-q", "-p", "no:cacheprovider", *(f"-pno:{name}" for name in blocked),
        f"--model={row.model}", *([f"--api-base={url}"] if row.flag else []),
        "--ifbench-no-cache", f"--ifbench-concurrency={concurrency}",
        "--ifbench-results=ifbench-results.json",
        "--ifbench-timeout=60", "--ifbench-max-wait=10",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=400, help="instances in the suite (default: 400)")
    parser.add_argument("--latency", type=float, default=0.2, help="stub latency per request, s (default: 0.2)")
    parser.add_argument("--concurrency", default=None,
                        help="comma-separated levels (default: 16,64; --full: 1,8,16,32,64)")
    parser.add_argument("--full", action="store_true", help="run every level 1, 8, 16, 32, 64")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per level and reference; the fastest of each is reported (default: 1)")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the raw OpenAI SDK and raw litellm reference runs at each level")
    parser.add_argument("--inspect-python", default=None, metavar="PYTHON",
                        help="interpreter of a venv with inspect_ai and openai (not project dependencies), "
                             "e.g. /tmp/inspect-venv/bin/python; without it the inspect_ai column is skipped")
    parser.add_argument("--all-plugins", action="store_true",
                        help="do not block the non-dependency pytest plugins " + ", ".join(NON_DEPENDENCY_PLUGINS))
    parser.add_argument("--rows", default=",".join(DEFAULT_ROWS),
                        help="comma-separated rows (default: all): " + ", ".join(ROWS))
    parser.add_argument("--json", dest="json_path", default=None, help="write the results as JSON here")
    parser.add_argument("--timeout", type=float, default=600.0, help="limit per pytest run, s (default: 600)")
    args = parser.parse_args(argv)

    if args.concurrency:
        levels = [int(x) for x in args.concurrency.split(",") if x.strip()]
    else:
        levels = list(FULL_LEVELS if args.full else DEFAULT_LEVELS)
    if args.instances < 1 or args.repeat < 1 or not levels or min(levels) < 1:
        parser.error("--instances, --repeat and every concurrency level must be >= 1")
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = sorted(set(rows) - set(ROWS))
    if unknown or not rows:
        parser.error(f"--rows: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(ROWS)}")

    blocked = () if args.all_plugins else NON_DEPENDENCY_PLUGINS
    inspect, inspect_note = inspect_python(args.inspect_python)
    if inspect_note:
        print(inspect_note, file=sys.stderr)
    load_before = os.getloadavg()
    if load_before[0] > (os.cpu_count() or 1) * 0.5:
        print(f"warning: load average is {load_before[0]:.2f} on {os.cpu_count()} CPUs; "
              "timings will be noisy", file=sys.stderr)

    results: dict = {
        "benchmark": "generation",
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "revision": source_revision(),
        "host": {"python": platform.python_version(), "platform": platform.platform(),
                 "cpus": os.cpu_count(), "loadavg_before": load_before},
        "instances": args.instances, "latency_s": args.latency, "repeat": args.repeat,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "rows": list(rows), "startup": {}, "runs": [], "notes": [inspect_note] if inspect_note else [],
    }
    failures = 0
    with tempfile.TemporaryDirectory(prefix="ifbench-bench-gen-") as tmp:
        work = Path(tmp)
        suite = work / "suite.yaml"
        one = work / "one.yaml"
        write_suite(suite, args.instances)
        write_suite(one, 1, start=10**5 - 1)  # a prompt no other run sends
        server = StubServer(latency=args.latency, host="127.0.0.1").start()
        #: (reference, level) -> its run: a reference shared by two rows (the raw OpenAI SDK) runs once
        measured: dict[tuple[str, int], dict | None] = {}
        try:
            for key in rows:
                row = ROWS[key]
                url = server.url.removesuffix("/v1") if row.root else server.url
                env = {name: value.format(url=server.url) for name, value in row.env}
                startup = measure_startup(row, server, work, one, url, env, blocked, args)
                if startup is None:
                    return 1
                results["startup"].setdefault(key, startup)
                for level in levels:
                    run, fails = run_level(row, server, work, suite, url, env, level, blocked, args)
                    failures += fails
                    references: dict[str, dict | None] = {}
                    names = [] if args.no_baseline else list(row.references)
                    if key == "openai-compatible" and inspect:
                        names.append("inspect_ai")
                    for name in names:
                        if (name, level) not in measured:
                            measured[name, level] = best_reference(name, server, work, url, level, inspect, env,
                                                                   row, args)
                            failures += measured[name, level] is None
                        references[name] = measured[name, level]
                    results["runs"].append(summarise(key, row, run, startup["fixed_startup_s"], level, references,
                                                     args, server.url))
        finally:
            server.stop()
    results["host"]["loadavg_after"] = os.getloadavg()

    print(render_table(results))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"\nJSON written to {args.json_path}", file=sys.stderr)
    return 1 if failures else 0


def measure_startup(row: Row, server: StubServer, work: Path, one: Path, url: str, env: dict[str, str],
                    blocked: tuple[str, ...], args: argparse.Namespace) -> dict | None:
    """The row's fixed start-up: its command on a one-instance suite (fastest of at least two runs: the
    first also warms the file cache), minus the one call's latency."""
    run = None
    for rep in range(max(2, args.repeat)):
        server.reset()
        log = work / f"startup-{rep}.log"
        attempt = run_pytest(pytest_args(one, url, 1, blocked, row), cwd=work, log=log, timeout=args.timeout,
                             env=env)
        if attempt["rc"] != 0 or server.calls != 1:
            print(f"{row.title}: start-up run failed (rc={attempt['rc']}, stub calls={server.calls}):\n{tail(log)}",
                  file=sys.stderr)
            return None
        if run is None or attempt["wall_s"] < run["wall_s"]:
            run = attempt
    assert run is not None
    startup = max(0.0, run["wall_s"] - args.latency)
    print(f"{row.title}: fixed start-up (1-instance run, wall {run['wall_s']:.2f}s minus one "
          f"{args.latency:g}s call): {startup:.2f}s", file=sys.stderr)
    return {"wall_s": round(run["wall_s"], 3), "fixed_startup_s": round(startup, 3),
            "cpu_s": round(run["cpu_s"], 3), "max_rss_mb": round(run["max_rss_mb"], 1)}


def run_level(row: Row, server: StubServer, work: Path, suite: Path, url: str, env: dict[str, str], level: int,
              blocked: tuple[str, ...], args: argparse.Namespace) -> tuple[dict, int]:
    """The row's runs at one level (``--repeat``): the fastest, with every attempt; and the failures."""
    best = None
    failures = 0
    attempts: list[dict] = []
    for rep in range(args.repeat):
        server.reset()
        log = work / f"run-c{level}-{rep}.log"
        run = run_pytest(pytest_args(suite, url, level, blocked, row), cwd=work, log=log, timeout=args.timeout,
                         env=env)
        span, requests = stub_span(server, args.latency)
        run.update(span_s=span, requests=requests, calls=server.calls, peak=server.peak_concurrency)
        ok = run["rc"] == 0 and run["calls"] == args.instances
        if not ok:
            failures += 1
            print(f"{row.title}, concurrency {level}: run failed (rc={run['rc']}, stub calls={run['calls']}, "
                  f"expected {args.instances}):\n{tail(log)}", file=sys.stderr)
        run["ok"] = ok
        print(f"{row.title}, concurrency {level:>3} run {rep + 1}: wall {run['wall_s']:.2f}s, span {span:.2f}s, "
              f"peak {run['peak']}", file=sys.stderr)
        attempts.append({"wall_s": round(run["wall_s"], 3), "generation_span_s": round(span, 3),
                         "peak_concurrency": run["peak"], "ok": ok})
        # keep the fastest run (wall time, start-up included: what the goals compare)
        if best is None or (ok, -run["wall_s"]) > (best["ok"], -best["wall_s"]):
            best = run
    assert best is not None
    best["attempts"] = attempts
    return best, failures


def best_reference(name: str, server: StubServer, work: Path, url: str, level: int, inspect: str | None,
                   env: dict[str, str], row: Row, args: argparse.Namespace) -> dict | None:
    """The shortest wall time of ``--repeat`` runs of one reference at one level (None: every run failed)."""
    kept = None
    for _ in range(args.repeat):
        if name == "inspect_ai":
            assert inspect is not None
            attempt = run_inspect(inspect, server, work, url, args.instances, level, args.latency, args.timeout)
        else:
            attempt = run_reference(name, server, work, url, args.instances, level, args.latency, args.timeout,
                                    model=row.model.split("/", 1)[-1], env=env)
        if attempt is not None and (kept is None or attempt["wall_s"] < kept["wall_s"]):
            kept = attempt
    if kept is not None:
        print(f"concurrency {level:>3} {name}: wall {kept['wall_s']:.2f}s, span "
              f"{kept['generation_span_s']:.2f}s, peak {kept['peak_concurrency']}", file=sys.stderr)
    return kept


def summarise(key: str, row: Row, best: dict, startup: float, level: int, references: dict[str, dict | None],
              args: argparse.Namespace, url: str) -> dict:
    ideal = args.instances * args.latency / level
    net = best["wall_s"] - startup
    return {
        "row": key, "title": row.title, "concurrency": level, "ok": best["ok"], "rc": best["rc"],
        "wall_s": round(best["wall_s"], 3),
        "wall_minus_startup_s": round(net, 3),
        "generation_span_s": round(best["span_s"], 3),
        "ideal_s": round(ideal, 3),
        "ratio": round(best["span_s"] / ideal, 3),
        "ratio_end_to_end": round(net / ideal, 3),
        "peak_concurrency": best["peak"],
        "stub_calls": best["calls"],
        "cpu_s": round(best["cpu_s"], 3),
        "max_rss_mb": round(best["max_rss_mb"], 1),
        "references": references,
        "wall_ratios": {name: round(best["wall_s"] / ref["wall_s"], 3) for name, ref in references.items() if ref},
        "goal_reference": row.goal_reference, "goal": dict(row.goals).get(level),
        "attempts": best["attempts"],
        "env": sorted(name for name, _ in row.env),
        "command": "python -m pytest " + " ".join(a.replace(url, "<stub-url>").replace(url.removesuffix("/v1"),
                                                                                        "<stub-root>")
                                                  for a in best["cmd"][4:]),
    }


def render_table(results: dict) -> str:
    out = [(f"### Generation: {results['instances']} instances, stub latency "
            f"{results['latency_s'] * 1000:.0f} ms, `--ifbench-no-cache`"), ""]
    out += ["| row | fixed start-up (s) | concurrency | ideal (s) | wall (s) | gen span (s) | span/ideal | peak "
            "| CPU (s) | reference wall (s) | wall ÷ reference |", "|---|" + "---:|" * 9 + "---|"]
    flag_walls = {r["concurrency"]: r["wall_s"] for r in results["runs"] if r["row"] == "openai-compatible"}
    for r in results["runs"]:
        start = results["startup"][r["row"]]["fixed_startup_s"]
        refs = {n: ref for n, ref in (r.get("references") or {}).items() if ref}
        walls = "; ".join(f"{n} {ref['wall_s']:.2f}" for n, ref in refs.items()) or "–"
        ratios = []
        for n in refs:
            value, goal = r["wall_ratios"][n], r["goal"] if n == r["goal_reference"] else None
            mark = "" if goal is None else (" ✓" if value <= goal else f" ✗ (goal ≤ {goal})")
            ratios.append(f"{value:.2f}× {n}{mark}")
        if r["row"] == "env-var" and r["concurrency"] in flag_walls:
            ratios.append(f"{r['wall_s'] / flag_walls[r['concurrency']]:.2f}× the --api-base row (goal: 1)")
        out.append(f"| {r['title']}{'' if r['ok'] else ' ⚠'} | {start:.2f} | {r['concurrency']} | {r['ideal_s']:.2f} "
                   f"| {r['wall_s']:.2f} | {r['generation_span_s']:.2f} | {r['ratio']:.2f} | {r['peak_concurrency']} "
                   f"| {r['cpu_s']:.2f} | {walls} | {'; '.join(ratios) or '–'} |")
    out += ["", "Wall times include interpreter start-up and imports; a ratio is the plugin's wall time over the "
            "reference's at the same level (a reference shared by two rows ran once per level)."]
    out += [f"*{note}*" for note in results.get("notes", [])]
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
