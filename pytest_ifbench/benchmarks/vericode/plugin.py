"""VeriCode's plugin: verifiers, metrics, plots and ``ifbench generate vericode``.

Registered through the ``pytest_ifbench.benchmarks`` entry point ``vericode``; the core derives the
hooks from the declaration and imports each module named here when first needed.
"""

from __future__ import annotations

from pytest_ifbench import Benchmark

_HERE = "pytest_ifbench.benchmarks.vericode"

BENCHMARK = Benchmark(
    name="vericode",
    verifiers=f"{_HERE}.verifiers:register",
    metrics=f"{_HERE}.metrics:vericode_tables",
    plots=f"{_HERE}.metrics:plots",
    generator=f"{_HERE}.generate:main",
)
