"""The ``ifbench`` console script: the argument parser wiring and :func:`main`.

Subcommands, one module each:

* ``ifbench verify --in cases.jsonl`` (:mod:`.verify`): run one verifier per JSONL
  line and print one JSON verdict per line. Judged verifiers call the judge panel.
* ``ifbench score --suite X.yaml --responses R.jsonl`` (:mod:`.score`): score
  pre-generated responses by running pytest in-process (same items, metrics and
  results file as a normal run) without calling the model under test.
* ``ifbench verifiers [--json]`` (:mod:`.verifiers`): list every registered verifier.
* ``ifbench generate BENCHMARK ...`` (:mod:`.generate`): a benchmark's suite generator.
* ``ifbench agents install [NAME ...] [--dir DIR]`` / ``ifbench agents status [--dir DIR]``
  (:mod:`.agents`): install the pinned real agent CLIs with npm, or show whether each one is installed.
* ``ifbench merge --out merged.json shard-*.json [--expect N]`` (:mod:`.merge`): one run's reports from its shards.
* ``ifbench compare BASE.json NEW.json`` (:mod:`.compare`): two runs paired by instance, changes and tests.

Each subcommand module has ``add_parser(commands)``, which adds its parser and sets
``run(args, extra) -> exit code`` as the parser's default; a new subcommand is one
module plus its entry in :data:`SUBCOMMANDS`. Imports stay lazy, because every subcommand's
parser is built on every call: ``add_parser`` imports nothing heavy (``generate`` and ``agents``
look their names up only when their help is shown or they run), ``ifbench verify`` loads the
verifiers of the benchmarks its cases name, pytest never, and litellm only when a judged case is
verified (tests/test_cli_startup.py checks what each command imports; perf/bench_cli_startup.py
measures it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import agents, compare, generate, merge, score, verifiers, verify
from .errors import INTERNAL_ERROR, USAGE_ERROR, UsageError

__all__ = ["INTERNAL_ERROR", "USAGE_ERROR", "main"]

#: The subcommand modules, in the order ``ifbench --help`` lists them.
SUBCOMMANDS = (verify, score, verifiers, generate, agents, merge, compare)


class _TopFormatter(argparse.HelpFormatter):
    """Leaves room for the longest subcommand name (argparse undercounts indented subcommands)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog)
        self._action_max_length = len("    verifiers")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ifbench", description="pytest-ifbench command-line tools.",
        formatter_class=_TopFormatter,
    )
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND", required=True)
    for subcommand in SUBCOMMANDS:
        subcommand.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in args_list:
        cut = args_list.index("--")
        args_list, extra = args_list[:cut], args_list[cut + 1:]
    parser = _parser()
    try:
        args = parser.parse_args(args_list)
        if extra and not getattr(args, "takes_pytest_args", False):
            parser.error(f"unrecognized arguments: -- {' '.join(extra)}")
    except SystemExit as exc:  # --help and usage errors: return, never exit, from main()
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else USAGE_ERROR)
    try:
        return args.run(args, extra)
    except UsageError as exc:
        print(f"ifbench {args.command}: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except BrokenPipeError:  # e.g. `ifbench verifiers | head`: the reader left, nothing to report
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # noqa: BLE001 - a bug: say so, with the traceback to report, and exit 3
        import traceback

        traceback.print_exc(file=sys.stderr)
        print(f"ifbench {args.command}: internal error: {type(exc).__name__}: {str(exc)[:500]}", file=sys.stderr)
        return INTERNAL_ERROR
