"""A pytest plugin for the benchmarks: the process's resident memory when collection ends and when
the session ends, written as JSON to ``$IFBENCH_BENCH_RSS_PHASES``.

``bench_overhead.py --growth`` loads it (``-p _rss_phases``) to split the memory a run holds per
instance into what the collected suite holds (its items and parsed instances, the input) and what
each finished instance adds (its kept reports and summary view)."""

from __future__ import annotations

import json
import os

import pytest

ENV = "IFBENCH_BENCH_RSS_PHASES"


def _rss_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _record(phase: str) -> None:
    path = os.environ.get(ENV)
    if not path:
        return
    try:
        with open(path, encoding="utf-8") as f:
            phases = json.load(f)
    except (OSError, ValueError):
        phases = {}
    phases[phase] = _rss_kb()
    with open(path, "w", encoding="utf-8") as f:
        json.dump(phases, f)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    _record("collected_kb")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    _record("finished_kb")
