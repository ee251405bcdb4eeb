"""VeriCode's plugin: verifiers, metrics, plots and ``ifbench generate vericode``.

Registered through the ``pytest_ifbench.benchmarks`` entry point ``vericode``;
everything heavy is imported inside the hooks.
"""

from __future__ import annotations

from typing import Any

BENCHMARK = "vericode"


def pytest_ifbench_register_verifiers(registry: Any) -> None:
    from .verifiers import register

    register(registry)


def pytest_ifbench_metrics(benchmark: str, records: list[dict[str, Any]]) -> list[Any] | None:
    if benchmark != BENCHMARK:
        return None
    from .metrics import vericode_tables

    return vericode_tables(records)


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
