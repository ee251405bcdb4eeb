"""Exit codes and the two errors every ``ifbench`` subcommand reports the same way."""

from __future__ import annotations

#: Exit code for a bad command line or an unusable input (argparse's convention).
USAGE_ERROR = 2
#: Exit code when ifbench itself fails (a bug): never confused with "a case errored" (1).
INTERNAL_ERROR = 3


class UsageError(Exception):
    """A command-line or input problem reported as ``ifbench <cmd>: error: ...`` (exit 2)."""


class CaseError(Exception):
    """One case could not be verified; the message is reported after ``line N: ``."""
