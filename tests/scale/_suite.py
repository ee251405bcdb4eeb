"""The suite the shard tests split: single-turn instances that pass and fail, a dialogue, a sampled one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pytest_ifbench.scale.merge import verdicts


def suite_text(n: int = 8) -> str:
    lines = ["ifbench: 1", "benchmark: scaled", "instances:"]
    for i in range(n):
        word = "lower" if i % 2 else "MIXED"  # the stub echoes the prompt: odd ones pass, even ones fail
        lines += [f"  - id: q{i}", f"    category: {'odd' if i % 2 else 'even'}", f"    prompt: question {i} {word}",
                  "    checks: [{id: lower, verifier: ifbench.case, params: {mode: lower}},"
                  " {id: words, verifier: ifbench.word_count, params: {min: 3}}]"]
    lines += ["  - id: dialogue", "    category: odd", "    protocol: multi_turn", "    turns:",
              "      - user: first turn", "        checks: [{id: t1, verifier: ifbench.case, params: {mode: lower}}]",
              "      - user: SECOND turn", "        checks: [{id: t2, verifier: ifbench.case, params: {mode: lower}}]",
              "  - id: sampled", "    category: even", "    prompt: a sampled question",
              "    generation: {samples: 3, temperature: 0.7}",
              "    checks: [{id: lower, verifier: ifbench.case, params: {mode: lower}}]"]
    return "\n".join(lines) + "\n"


#: instances of suite_text() and the stub calls a full run makes (8 + 2 turns + 3 samples)
INSTANCES = 10
CALLS = 13


def write(directory: Path) -> Path:
    path = directory / "suites" / "scaled.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(suite_text(), encoding="utf-8")
    return path


def verdicts_of(results: Path) -> dict[str, Any]:
    data = json.loads(results.read_text(encoding="utf-8"))
    return {record["nodeid"]: verdicts(record) for record in data["instances"]}


def summary_tables(summary: Path) -> str:
    """The summary's metric tables, without what differs between two runs of the same instances
    (the date, the time taken, the file names, the totals table with its seconds)."""
    text = summary.read_text(encoding="utf-8")
    body = text[text.index("## Totals"):]
    body = re.sub(r"## Totals\n\n(\|.*\n)+", "", body)
    return re.sub(r"\]\([^)]*/([^/)]+)\)", r"](\1)", body)


def terminal_tables(lines: list[str]) -> list[str]:
    """The terminal summary from the model line to the time line (the metric tables)."""
    start = next(i for i, line in enumerate(lines) if line.startswith("model: "))
    end = next(i for i, line in enumerate(lines) if line.startswith("time: "))
    return [line.rstrip() for line in lines[start:end]]


def kill_after_records(process: Any, journal: Path, lines: int = 3, patience: float = 120.0) -> dict[str, Any]:
    """``SIGKILL`` the process group of a shard run (started with ``start_new_session``) once its journal
    holds ``lines`` lines (its header and records); the journal's header."""
    import os
    import signal
    import time

    from pytest_ifbench.reports.results_reader import read_results_text

    deadline = time.monotonic() + patience
    try:
        while not (journal.exists() and len(journal.read_text(encoding="utf-8").splitlines()) >= lines):
            assert time.monotonic() < deadline, "no records reached the journal"
            time.sleep(0.05)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return read_results_text(journal.read_text(encoding="utf-8").splitlines()[0] + "\n")
