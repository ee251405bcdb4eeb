"""EvolIF's plugin: verifiers, official dialogue files, metrics, plots and
``ifbench generate evolif``.

Registered through the ``pytest_ifbench.benchmarks`` entry point ``evolif``;
everything heavy is imported inside the hooks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

BENCHMARK = "evolif"


def pytest_ifbench_register_verifiers(registry: Any) -> None:
    from .verifiers import register

    register(registry)


def pytest_ifbench_suite_data(path: Any, config: Any) -> Any:
    from .official import suite_data

    return suite_data(Path(path))


def pytest_ifbench_metrics(benchmark: str, records: list[dict[str, Any]]) -> list[Any] | None:
    if benchmark != BENCHMARK:
        return None
    from .metrics import tables

    return tables(records)


def pytest_ifbench_plots(benchmark: str, records: list[dict[str, Any]], directory: Any) -> list[Any] | None:
    if benchmark != BENCHMARK:
        return None
    from .metrics import plots

    return plots(records, directory)


def pytest_ifbench_generators(generators: dict[str, Any]) -> None:
    def generate(argv: list[str]) -> int:
        from .generate import main

        return main(argv)

    generators[BENCHMARK] = generate
