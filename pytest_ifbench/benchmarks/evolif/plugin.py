"""EvolIF's plugin: verifiers, official dialogue files, ``--evolif-compat``, metrics, plots and
``ifbench generate evolif``.

Registered through the ``pytest_ifbench.benchmarks`` entry point ``evolif``;
everything heavy is imported inside the hooks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

BENCHMARK = "evolif"


def pytest_addoption(parser: Any) -> None:
    parser.getgroup("ifbench").addoption(
        "--evolif-compat", dest="evolif_compat", choices=("paper", "reference"), default=None,
        help="rules of every EvolIF check: paper (the paper and the instruction text shown) or reference "
             "(the authors' released checkers, verdict for verdict); default: each suite's options.compat, "
             "else paper")


def pytest_ifbench_register_verifiers(registry: Any) -> None:
    from .verifiers import register

    register(registry)


def pytest_ifbench_suite_data(path: Any, config: Any) -> Any:
    from .official import suite_data

    try:
        flag = config.getoption("evolif_compat")
    except (ValueError, AttributeError):  # the option is not registered (plugin loaded without its addoption)
        flag = None
    return suite_data(Path(path), flag)


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
