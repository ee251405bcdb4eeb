"""ManyIH-Bench's plugin: verifiers, official files, ``--manyih-compat``, metrics, plots,
the instruction listing in failure reports and ``ifbench generate manyih``.

Registered through the ``pytest_ifbench.benchmarks`` entry point ``manyih``; the core derives the
hooks from the declaration and imports each module named here when first needed. The report section
is an ordinary hook function.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_ifbench import Benchmark, Compat

_HERE = "pytest_ifbench.benchmarks.manyih"

BENCHMARK = Benchmark(
    name="manyih",
    verifiers=f"{_HERE}.verifiers:register",
    official_reader=f"{_HERE}.official:read",
    compat=Compat(help="compat mode of every ManyIH check: paper (the instructions' plain meaning) or "
                       "reference (the authors' released checkers, quirks included); default: each "
                       "suite's options.compat, else paper"),
    metrics=f"{_HERE}.metrics:tables",
    plots=f"{_HERE}.metrics:plots",
    generator=f"{_HERE}.generate:main",
    markers=(("subset_coding", "ManyIH coding instances"), ("subset_if", "ManyIH instruction-following instances"),
             ("ppi_ordinal", "ManyIH instances whose privileges are ordinal tags"),
             ("ppi_scalar", "ManyIH instances whose privileges are scalar tags"),
             ("perturbed", "ManyIH instances whose scalar privileges were perturbed")),
)


def pytest_ifbench_instance_verified(item: pytest.Item, record: dict[str, Any]) -> None:
    """Show every instruction of a ManyIH instance -- suppressed ones included -- in its report."""
    if record.get("benchmark") != BENCHMARK.name:
        return
    from .metrics import hierarchy_lines

    lines = hierarchy_lines(record)
    if lines:
        item.add_report_section("call", "manyih instructions", "\n".join(lines))
