"""ManyIH-Bench's plugin: verifiers, official files, ``--manyih-compat``, metrics, plots,
the instruction listing in failure reports and ``ifbench generate manyih``.

Registered through the ``pytest_ifbench.benchmarks`` entry point ``manyih``;
everything heavy is imported inside the hooks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

BENCHMARK = "manyih"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("ifbench").addoption(
        "--manyih-compat", dest="manyih_compat", choices=("paper", "reference"), default=None,
        help="compat mode of every ManyIH check: paper (the instructions' plain meaning) or "
             "reference (the authors' released checkers, quirks included); default: each "
             "suite's options.compat, else paper")


def pytest_ifbench_register_verifiers(registry: Any) -> None:
    from .verifiers import register

    register(registry)


def pytest_ifbench_suite_data(path: Any, config: pytest.Config) -> Any:
    from .official import suite_data

    try:
        flag = config.getoption("manyih_compat")
    except ValueError:  # the option is not registered (plugin loaded without its addoption)
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


def pytest_ifbench_instance_verified(item: pytest.Item, record: dict[str, Any]) -> None:
    """Show every instruction of a ManyIH instance -- suppressed ones included -- in its report."""
    if record.get("benchmark") != BENCHMARK:
        return
    from .metrics import hierarchy_lines

    lines = hierarchy_lines(record)
    if lines:
        item.add_report_section("call", "manyih instructions", "\n".join(lines))


def pytest_ifbench_generators(generators: dict[str, Any]) -> None:
    def generate(argv: list[str]) -> int:
        from .generate import main

        return main(argv)

    generators[BENCHMARK] = generate
