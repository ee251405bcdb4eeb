"""``ifbench compare BASE.json NEW.json``: is the new run better or worse, and is that real?

The two results files are paired by instance (:mod:`pytest_ifbench.reports.compare`); the report goes to
the terminal and, with ``--out FILE.md``, to a Markdown file. ``--fail-on-regression`` makes a
significant drop of a benchmark's ISR, CSR or score exit 1, so CI can gate on it -- also one that the
instances NEW errored on would make, had they failed (:meth:`~..reports.compare.Comparison.unresolved`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .errors import USAGE_ERROR, UsageError

_DESCRIPTION = """\
Compare two runs of the same suites (two results files, --ifbench-results), paired
by instance: per benchmark and per category/scaffold/tier/protocol, the change of
ISR, CSR and score with its 95% interval and a paired test (exact McNemar for
pass/fail; for means a paired bootstrap interval with a fixed seed and the exact
sign-flip permutation test); the instances that flipped with their failed checks;
instances only one run holds, apart. The model
may differ; runs with another plugin version, judges, generation settings or an
instance whose checks changed are refused, naming the difference (--force compares
them anyway)."""

_EPILOG = """\
exit status: 0 compared (no significant regression, or no --fail-on-regression),
1 a benchmark's ISR, CSR or score dropped significantly and --fail-on-regression
(or would have, had the instances NEW errored on and BASE scored failed: nothing
says they did not regress), 2 refused (runs not comparable, an unreadable file)."""


def add_parser(commands: Any) -> None:
    compare = commands.add_parser("compare", help="compare two runs paired by instance: changes, intervals, tests",
                                  description=_DESCRIPTION, epilog=_EPILOG,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    compare.add_argument("base", metavar="BASE.json", help="the reference run's results file")
    compare.add_argument("new", metavar="NEW.json", help="the run compared with it")
    compare.add_argument("--out", default=None, metavar="FILE.md", help="also write the report as Markdown")
    compare.add_argument("--alpha", type=_level, default=0.05, metavar="A",
                         help="significance level of the tests and the gate (default 0.05)")
    compare.add_argument("--fail-on-regression", action="store_true",
                         help="exit 1 when a benchmark's ISR, CSR or score drops significantly at --alpha, or would "
                              "had the instances NEW errored on (and BASE scored) failed")
    compare.add_argument("--force", action="store_true",
                         help="compare runs that differ in more than the model (the differences are not checked)")
    compare.set_defaults(run=run)


def _level(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a level between 0 and 1, got {text!r}")
    return value


def run(args: argparse.Namespace, extra: list[str]) -> int:
    from ..reports.compare import NotComparable, Run, compare
    from ..reports.compare_render import markdown, terminal_lines
    from ..scale.merge import NotResults, load

    out = Path(args.out) if args.out else None
    if out is not None and out.suffix.lower() != ".md":
        raise UsageError(f"--out {args.out!r} must end in .md")
    try:
        files = []
        for name in (args.base, args.new):
            files.append(load(Path(name)))
            print(f"ifbench compare: read {name}: {len(files[-1].records)} instance(s)", file=sys.stderr, flush=True)
        base, new = (Run(name=str(f.path), meta=f.meta, records={r["nodeid"]: r for r in f.records}) for f in files)
        comparison = compare(base, new, alpha=args.alpha, force=args.force)
    except (NotComparable, NotResults) as exc:
        print(f"ifbench compare: refused: {exc}" + ("" if isinstance(exc, NotResults) else
              " (--force compares them anyway)"), file=sys.stderr)
        return USAGE_ERROR
    for line in terminal_lines(comparison):
        print(line)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(markdown(comparison), encoding="utf-8")
        print(f"report written to {out}")
    return 1 if args.fail_on_regression and (comparison.regressions() or comparison.unresolved()) else 0
