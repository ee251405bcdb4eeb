"""``ifbench score --suite X.yaml --responses R.jsonl``: score pre-generated responses.

Runs pytest in-process (same items, metrics and results file as a normal run)
without calling the model under test.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .errors import CaseError, UsageError
from .lines import bounded_lines, json_line, text_line

_SCORE_DESCRIPTION = """\
Score pre-generated responses against suites without calling the model
under test. Runs pytest in-process with --ifbench-responses, so items,
subtests, metrics and the results file are those of a normal run.
Responses are JSONL lines {"id": "<instance id>", "response": "..."}
(or "responses": [...] with one reply per turn). A line that cannot be
used (not UTF-8, not JSON, not such an object, a repeated id) is reported
on stderr as "FILE:LINE: ..." and left out; the other lines are scored.
An instance without a recorded response errors with "no recorded
response for instance ...": score never calls the model under test, so
with --trajectories alone every instance that is not an agent run errors.
A --trajectories file or folder holding no trajectory is a usage error.
Judged checks still call the judge (--judge-model after "--")."""

_SCORE_EPILOG = """\
Arguments after "--" are passed to pytest unchanged (e.g. -- -q -k name).
exit status: pytest's, unchanged: 0 all instances passed, 1 some checks
failed or some instances errored, 2 interrupted, 3 internal error (also
when ifbench itself fails before pytest runs), 4 usage error (e.g. an
unreadable responses file, or one without a usable line), 5 no instances
collected."""


def add_parser(commands: Any) -> None:
    score = commands.add_parser(
        "score", help="score pre-generated responses against suites (runs pytest)",
        usage="ifbench score [-h] --suite FILE [--suite FILE ...] (--responses JSONL | --trajectories PATH ...)\n"
              "                     [--results FILE] [-- PYTEST_ARGS ...]",
        description=_SCORE_DESCRIPTION, epilog=_SCORE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    score.add_argument("--suite", dest="suites", action="append", required=True, metavar="FILE",
                       help="suite file (or directory of suites); repeatable")
    score.add_argument("--responses", default=None, metavar="JSONL",
                       help="pre-generated responses, one JSON object per line")
    score.add_argument("--trajectories", action="append", default=[], metavar="PATH",
                       help="recorded agent trajectories for agent instances (files or folders: ours, normalized "
                            "JSONL, or raw proxy logs, the authors' included); repeatable; no agent is run")
    score.add_argument("--results", default="ifbench-results.json", metavar="FILE",
                       help="results JSON file (default: ifbench-results.json; '' to skip)")
    score.set_defaults(run=run, takes_pytest_args=True)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    """pytest's exit code for the suites; ``extra`` (after ``--``) goes to pytest unchanged."""
    from pathlib import Path
    from tempfile import TemporaryDirectory

    import pytest

    from ..models.recorded import ResponsesError, load_responses

    if args.responses is None and not args.trajectories:
        print("ifbench score: error: give --responses, --trajectories or both", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    usable = None
    if args.responses is not None:
        try:  # fail early, one line per unusable line, rather than inside pytest's configure
            usable = _screen_responses(Path(args.responses))
        except ResponsesError as exc:
            print(f"ifbench score: error: {exc}", file=sys.stderr)
            return int(pytest.ExitCode.USAGE_ERROR)
    for path in args.trajectories:
        problem = _trajectories_problem(Path(path))
        if problem:
            print(f"ifbench score: error: --trajectories {path}: {problem}", file=sys.stderr)
            return int(pytest.ExitCode.USAGE_ERROR)
    with TemporaryDirectory(prefix="ifbench-score-") as scratch:
        recorded: list[str] = []
        if args.responses is None:
            # score never calls the model under test: without --responses, an instance that is not
            # an agent run errors with "no recorded response" instead of being generated
            none = Path(scratch) / "no-responses.jsonl"
            none.write_text("", encoding="utf-8")
            recorded.append(f"--ifbench-responses={none}")
        else:
            responses = args.responses
            if usable is not None:  # some lines were left out: pytest reads the usable ones
                clean = Path(scratch) / Path(args.responses).name
                clean.write_text("".join(line.rstrip("\r\n") + "\n" for line in usable), encoding="utf-8")
                load_responses(clean)  # pytest's own rules; disagreeing with the screen is a bug (exit 3)
                responses = str(clean)
            recorded.append(f"--ifbench-responses={responses}")
        for path in args.trajectories:
            recorded.append(f"--ifbench-recorded-trajectories={path}")
        # Options as `--opt=value`: pytest picks its root directory before plugins add their options, and takes a
        # separate value for a path to test (the scratch directory would move the root, and every node id).
        code = pytest.main([*args.suites, *recorded, f"--ifbench-results={args.results}", "-p", "no:cacheprovider",
                            *extra])
    return int(code)


def _trajectories_problem(path: Any) -> str | None:
    """Why ``path`` holds no usable trajectory (missing, unreadable, not a trajectory), else None."""
    if not path.exists():
        return "no such file or folder"
    from ..agents.recorded_files import recorded_trajectories

    try:
        found = recorded_trajectories([path])
    except (OSError, ValueError) as exc:  # TrajectoryFileError is a ValueError
        return f"not a trajectory file: {exc}"
    if not found:
        return ("no trajectory found (expected ours as .json, normalized JSONL, or raw proxy logs "
                "as .raw.jsonl)")
    return None


def _screen_responses(path: Any) -> list[str] | None:
    """None when every line of the responses file is usable, else the usable lines, each
    unusable one reported on stderr as ``FILE:LINE: reason``. Raises ``ResponsesError``
    when the file cannot be read or no line is usable (then nothing could be scored)."""
    from ..models.recorded import ResponsesError

    try:
        with path.open("rb") as source:
            lines = list(bounded_lines(source, str(path)))
    except OSError as exc:
        raise ResponsesError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UsageError as exc:
        raise ResponsesError(str(exc)) from None
    if _results_file(lines):
        raise ResponsesError(f"{path} is a pytest-ifbench results file, not a responses file (one JSON object a "
                             'line: {"id": ..., "response": ...}); to score a run\'s agent runs again, give its '
                             "trajectories (--trajectories)")
    usable: list[str] = []
    seen: set[str] = set()
    bad = 0
    # bytes.splitlines as before: a lone \r ends a line too (JSON strings never hold a raw one).
    split = (part for line in lines for part in ([line] if isinstance(line, CaseError) else line.splitlines()))
    for number, line in enumerate(split, start=1):
        if not isinstance(line, CaseError) and not line.strip():
            continue
        try:
            if isinstance(line, CaseError):
                raise line
            text = text_line(line)
            replies_id = _response_id(json_line(text))
            if replies_id in seen:
                raise CaseError(f"duplicate id {replies_id!r} (the first one is kept)")
        except CaseError as exc:
            bad += 1
            print(f"ifbench score: error: {path}:{number}: {exc}", file=sys.stderr)
            continue
        seen.add(replies_id)
        usable.append(text)
    if not usable:
        raise ResponsesError(f"{path}: no usable line" + (f" ({bad} unusable, reported above)" if bad else ""))
    return usable if bad else None


def _results_file(lines: list[Any]) -> bool:
    """Whether the file read as ``lines`` opens as a results file: its first key ``"format"``, on the first line
    (the compact file, then ``"instances"`` too) or the second (indented)."""
    head = [line for line in lines[:2] if not isinstance(line, CaseError)]
    first = head[0].lstrip() if head else b""
    if first.startswith(b'{"format":'):
        return b'"instances":' in first
    return first.rstrip() == b"{" and len(head) > 1 and head[1].lstrip().startswith(b'"format":')


def _response_id(entry: Any) -> str:
    """The instance id of one responses line, or :class:`CaseError` saying what is wrong with it."""
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
        raise CaseError('expected an object with a string "id"')
    if "responses" in entry:
        replies = entry["responses"]
        if not isinstance(replies, list) or not all(isinstance(r, str) for r in replies):
            raise CaseError('"responses" must be a list of strings')
    elif not isinstance(entry.get("response"), str):
        raise CaseError('needs "response" (string) or "responses" (list)')
    return entry["id"]

