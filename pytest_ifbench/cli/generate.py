"""``ifbench generate BENCHMARK ...``: run one installed benchmark's suite generator or importer.

Each benchmark plugin contributes its generators through the hooks; every one
parses its own arguments (``ifbench generate BENCHMARK --help``).
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Mapping
from typing import Any


def add_parser(commands: Any) -> None:
    generators = _generators()
    generator_names = list(generators)
    generate = commands.add_parser(
        "generate", help="generate or import benchmark suites (ifbench generate BENCHMARK --help)",
        description="Generate suites for a benchmark, or import its official files. Each benchmark has "
                    f"its own options: ifbench generate BENCHMARK --help. Benchmarks: {', '.join(generator_names)}.",
    )
    generate.add_argument("benchmark", choices=list(generator_names), metavar="BENCHMARK")
    generate.add_argument("args", nargs=argparse.REMAINDER, help="the benchmark generator's own arguments")
    generate.set_defaults(run=functools.partial(_run, generators))


def _generators() -> dict[str, Any]:
    """``ifbench generate`` commands of the installed benchmark plugins, by name."""
    from .._composition import command_plugin_manager, generators

    return generators(command_plugin_manager().hook)


def _run(generators: Mapping[str, Callable[[list[str]], Any]], args: argparse.Namespace, extra: list[str]) -> int:
    return int(generators[args.benchmark](args.args) or 0)
