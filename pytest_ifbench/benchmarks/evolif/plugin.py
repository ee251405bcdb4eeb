"""EvolIF's plugin: verifiers, official dialogue files, ``--evolif-compat``, metrics, plots and
``ifbench generate evolif``.

Registered through the ``pytest_ifbench.benchmarks`` entry point ``evolif``; the core derives the
hooks from the declaration and imports each module named here when first needed.
"""

from __future__ import annotations

from pytest_ifbench import Benchmark, Compat

_HERE = "pytest_ifbench.benchmarks.evolif"

BENCHMARK = Benchmark(
    name="evolif",
    verifiers=f"{_HERE}.verifiers:register",
    official_reader=f"{_HERE}.official:read",
    compat=Compat(
        help="rules of every EvolIF check: paper (the paper and the instruction text shown) or reference "
             "(the authors' released checkers, verdict for verdict); default: each suite's options.compat, "
             "else paper",
        coerce=f"{_HERE}.compat:official_params"),
    metrics=f"{_HERE}.metrics:tables",
    plots=f"{_HERE}.metrics:plots",
    generator=f"{_HERE}.generate:main",
)
