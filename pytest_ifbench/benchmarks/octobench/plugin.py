"""OctoBench's plugin: the conflict-attribution verifier, official files, ``--octobench-*`` options, the
``octobench_reflect`` protocol, metrics, the Figure 3 plot and ``ifbench generate octobench``.

Registered through the ``pytest_ifbench.benchmarks`` entry point ``octobench``; everything heavy is
imported inside the hooks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

BENCHMARK = "octobench"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ifbench")
    group.addoption("--octobench-workspaces", dest="octobench_workspaces", default=None, metavar="DIR",
                    help="OctoBench official instances run in DIR/<instance_id>/ (a local copy of each "
                         "instance's environment; the official Docker images are not pulled)")
    group.addoption("--octobench-compat", dest="octobench_compat", choices=("paper", "reference"), default=None,
                    help="headline OctoBench scoring: paper (omitted checks fail, not-applicable checks are left "
                         "out) or reference (the authors' scorer); both are always shown. Default: each suite's "
                         "options.compat, else paper")
    group.addoption("--octobench-reflect", dest="octobench_reflect", action="store_true", default=False,
                    help="rerun partially failed OctoBench instances once with their failed checks as feedback "
                         "(section 4.3.2); the rerun is what is reported, Table 5 compares both")


def _option(config: pytest.Config, name: str) -> Any:
    try:
        return config.getoption(name)
    except ValueError:  # the option is not registered (plugin loaded without its addoption)
        return None


def pytest_ifbench_register_verifiers(registry: Any) -> None:
    from .verifiers import register

    register(registry)


def pytest_ifbench_register_protocols(protocols: Any) -> None:
    from .reflect import register

    register(protocols)


def pytest_ifbench_suite_data(path: Any, config: pytest.Config) -> Any:
    from .official import Settings, suite_data

    workspaces = _option(config, "octobench_workspaces")
    settings = Settings(workspaces=Path(workspaces).resolve() if workspaces else None,
                        recorded=bool(_option(config, "ifbench_recorded_trajectories")),
                        compat=_option(config, "octobench_compat"), reflect=bool(_option(config, "octobench_reflect")))
    return suite_data(Path(path), settings)


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
