"""OctoBench's plugin: the conflict-attribution verifier, official files, ``--octobench-*`` options, the
``octobench_reflect`` protocol, metrics, the Figure 3 plot and ``ifbench generate octobench``.

Registered through the ``pytest_ifbench.benchmarks`` entry point ``octobench``; the core derives the
hooks from the declaration and imports each module named here when first needed. The options other
than ``--octobench-compat`` are an ordinary hook function; the official reader reads them.
"""

from __future__ import annotations

import pytest

from pytest_ifbench import Benchmark, Compat

_HERE = "pytest_ifbench.benchmarks.octobench"

BENCHMARK = Benchmark(
    name="octobench",
    verifiers=f"{_HERE}.verifiers:register",
    protocols=f"{_HERE}.reflect:register",
    official_reader=f"{_HERE}.official:read",
    reader_options=("octobench_workspaces", "ifbench_recorded_trajectories", "octobench_reflect"),
    compat=Compat(help="headline OctoBench scoring: paper (omitted checks fail, not-applicable checks are left "
                       "out) or reference (the authors' scorer); both are always shown. Default: each suite's "
                       "options.compat, else paper",
                  checks=False),
    metrics=f"{_HERE}.metrics:tables",
    plots=f"{_HERE}.metrics:plots",
    generator=f"{_HERE}.generate:main",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ifbench")
    group.addoption("--octobench-workspaces", dest="octobench_workspaces", default=None, metavar="DIR",
                    help="OctoBench official instances run in DIR/<instance_id>/ (a local copy of each "
                         "instance's environment; the official Docker images are not pulled)")
    group.addoption("--octobench-reflect", dest="octobench_reflect", action="store_true", default=False,
                    help="rerun partially failed OctoBench instances once with their failed checks as feedback "
                         "(section 4.3.2); the rerun is what is reported, Table 5 compares both")
