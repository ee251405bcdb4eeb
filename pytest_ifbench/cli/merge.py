"""``ifbench merge --out merged.json shard-*.json [--expect N]``: one run's reports from its shards.

The merged results file, its summary (beside it, named as a run names it) and the
terminal tables are those a single run over the union writes: the records are put
together and every metric is computed again (:mod:`pytest_ifbench.scale`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .errors import USAGE_ERROR, UsageError

_DESCRIPTION = """\
Merge the results files of the shards of one run (pytest --ifbench-shard=K/N) into
one results file, with the summary and terminal tables a single run over all their
instances would have written: metrics are recomputed over the union, never averaged;
tokens, cost and time are summed. Files that are not parts of one run (another
model, judges, plugin version, generation settings or split, or one instance with
different records in two files) are refused, naming both files; nothing is written.
A missing shard (--expect N, or a gap in the shard indices) is named and the
instances it would have run are listed as not run; what is there is still merged.
A journal of a run that did not finish (*.partial.jsonl) is merged too, and makes
the merge incomplete; when no file holds the run's split, that is said instead of
a list of the instances not run."""

_EPILOG = """\
exit status: 0 merged and complete, 1 merged but shards or instances are missing or a
file did not finish, 2 refused (files that do not belong together, an unreadable file)
or the merged file cannot be written (a full disk: nothing is left behind)."""


def add_parser(commands: Any) -> None:
    merge = commands.add_parser("merge", help="merge the results files of a run's shards into one run's reports",
                                description=_DESCRIPTION, epilog=_EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    merge.add_argument("files", nargs="+", metavar="SHARD.json", help="the shards' results files")
    merge.add_argument("--out", required=True, metavar="FILE", help="the merged results file to write")
    merge.add_argument("--expect", type=_count, default=None, metavar="N",
                       help="the number of shards the run had (a missing one is named)")
    merge.add_argument("--summary", default=None, metavar="PATH",
                       help="the summary file (.md or .html); default: beside --out, as a run names it "
                            "(merged.json -> merged-summary.md); '' to skip")
    merge.set_defaults(run=run)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of shards >= 1, got {text!r}")
    return value


def _inputs(names: list[str]) -> tuple[list[Path], list[str]]:
    """The files to merge, and the patterns among ``names`` that matched none: a shell without ``nullglob``
    passes ``shard-*.partial.jsonl`` on as it is when no shard was killed, and ``merge shard-*.json
    shard-*.partial.jsonl`` (the command that merges killed shards from their journals) must not be refused
    for it. A missing file named outright is still the merge's refusal; a pattern alone is a usage error."""
    inputs: list[Path] = []
    unmatched: list[str] = []
    for name in names:
        if any(char in name for char in "*?[") and not Path(name).exists():
            unmatched.append(name)
        else:
            inputs.append(Path(name))
    if not inputs:
        raise UsageError(f"no file to merge: {', '.join(unmatched)} matched nothing")
    return inputs, unmatched


def _progress(file: Any) -> None:
    print(f"ifbench merge: read {file.label}: {file.instances} instance(s)", file=sys.stderr, flush=True)
    if file.unfinished:
        print(f"ifbench merge: {file.label} is the journal of a run that did not finish (killed, out of time): "
              "the instances it finished are merged, its others are not run", file=sys.stderr, flush=True)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    from ..reports.results_lock import ResultsInUse, ResultsLock
    from ..scale.merge import CannotWrite, MergeRefused, NotResults, merge
    from ..scale.report import shared_cache_warnings, spending_facts, summary_path_for, write_reports

    out = Path(args.out)
    summary = summary_path_for(out) if args.summary is None else (Path(args.summary) if args.summary else None)
    if summary is not None and summary.suffix.lower() not in (".md", ".html"):
        raise UsageError(f"--summary: {args.summary!r} must end in .md or .html")
    inputs, unmatched = _inputs(args.files)
    if out.resolve() in {path.resolve() for path in inputs}:
        raise UsageError(f"--out {out} is one of the shards' files: it would be overwritten")
    lock = ResultsLock(out)  # a run writing --out at the same time would replace the merge's file
    try:
        lock.acquire()  # (none taken where it cannot be: the merge's own write says why)
    except ResultsInUse as exc:
        print(f"ifbench merge: refused: {exc}", file=sys.stderr)
        return USAGE_ERROR
    try:
        merged = merge(inputs, out=out, expect=args.expect, on_file=_progress)
        lines = write_reports(merged, out, summary)
    except (MergeRefused, NotResults) as exc:
        print(f"ifbench merge: refused: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except CannotWrite as exc:
        print(f"ifbench merge: cannot write: {exc}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        lock.release()
    for line in lines:
        print(line)
    for line in spending_facts(merged):  # Markdown for the merged summary's facts: plain here
        print(line.replace("**", ""))
    for line in shared_cache_warnings(merged):
        print(f"ifbench merge: warning: {line}", file=sys.stderr)
    for pattern in unmatched:
        print(f"ifbench merge: note: {pattern} matched no file", file=sys.stderr)
    for note in merged.notes:  # stderr, as the warnings: stdout is the merged run's summary
        print(f"ifbench merge: note: {note}", file=sys.stderr)
    print(f"merged {len(merged.records)} instances from {len(inputs)} file(s) into {out}")
    if merged.complete:
        return 0
    for index in merged.missing:
        print(f"ifbench merge: shard {index} is missing", file=sys.stderr)
    for label in merged.unfinished:
        print(f"ifbench merge: {label} did not finish: the run is incomplete", file=sys.stderr)
    if merged.not_run_unknown:
        print(f"ifbench merge: cannot list the instances not run: {merged.not_run_unknown}", file=sys.stderr)
    if merged.not_run:
        shown = merged.not_run[:50]
        print(f"ifbench merge: {len(merged.not_run)} instance(s) not run:", file=sys.stderr)
        for nodeid in shown:
            print(f"  {nodeid}", file=sys.stderr)
        if len(merged.not_run) > len(shown):
            print(f"  ... and {len(merged.not_run) - len(shown)} more (the merged file's not_run lists all)",
                  file=sys.stderr)
    return 1
