"""``ifbench generate BENCHMARK ...``: run one installed benchmark's suite generator or importer.

Each benchmark plugin contributes its generators through the hooks; every one
parses its own arguments (``ifbench generate BENCHMARK --help``).

The generators are looked up only when ``generate`` is the command being run
(or its help is shown): building the plugin manager imports every installed
benchmark, which no other subcommand should wait for.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from typing import Any

#: Where the benchmark names go in the description (filled in when the help is shown).
_NAMES = "{benchmarks}"


class _Generators:
    """The installed benchmarks' generators by name, found on first use; also the ``choices``
    argparse checks BENCHMARK against (it asks ``in`` and, for its error, iterates)."""

    def __init__(self) -> None:
        self._found: dict[str, Callable[[list[str]], Any]] | None = None

    def by_name(self) -> dict[str, Callable[[list[str]], Any]]:
        if self._found is None:
            from .._composition import command_plugin_manager, generators

            self._found = generators(command_plugin_manager().hook)
        return self._found

    def __contains__(self, name: object) -> bool:
        return name in self.by_name()

    def __iter__(self) -> Iterator[str]:
        return iter(self.by_name())


class _HelpWithNames(argparse.HelpFormatter):
    """Writes the installed benchmarks' names into the description, only when the help is shown."""

    generators: _Generators

    def _format_text(self, text: str) -> str:
        return super()._format_text(text.replace(_NAMES, ", ".join(self.generators)))


def add_parser(commands: Any) -> None:
    found = _Generators()
    formatter = type("GenerateHelpFormatter", (_HelpWithNames,), {"generators": found})
    generate = commands.add_parser(
        "generate", help="generate or import benchmark suites (ifbench generate BENCHMARK --help)",
        description="Generate suites for a benchmark, or import its official files. Each benchmark has "
                    f"its own options: ifbench generate BENCHMARK --help. Benchmarks: {_NAMES}.",
        formatter_class=formatter,
    )
    generate.add_argument("benchmark", choices=found, metavar="BENCHMARK")
    generate.add_argument("args", nargs=argparse.REMAINDER, help="the benchmark generator's own arguments")
    generate.set_defaults(run=lambda args, extra: int(found.by_name()[args.benchmark](args.args) or 0))
