"""``ifbench agents install|status``: install the pinned real agent CLIs with npm, or show their state."""

from __future__ import annotations

import argparse
from typing import Any

from .errors import UsageError


def add_parser(commands: Any) -> None:
    agents = commands.add_parser(
        "agents", help="install or check the real agent CLIs (ifbench agents install|status)",
        description="Install the pinned agent CLIs that agent runners drive (npm install into one directory: "
                    "$IFBENCH_AGENTS_DIR, else .ifbench-agents in the current directory), or show their state.",
    )
    actions = agents.add_subparsers(dest="action", title="actions", metavar="ACTION", required=True)
    install = actions.add_parser("install", help="npm install the pinned versions (all when no NAME is given)",
                                 epilog="exit status: npm's (127 when npm is missing).")
    install.add_argument("names", nargs="*", metavar="NAME", help="claude_code, kilo or droid")
    status = actions.add_parser("status", help="show each CLI's pinned version and whether it is installed",
                                epilog="exit status: 0 when every CLI is installed at its pinned version, else 1.")
    for action in (install, status):
        action.add_argument("--dir", default=None, metavar="DIR", help="the install directory")
    agents.set_defaults(run=run)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    from pathlib import Path

    from ..agents.cli import AGENT_CLIS, agents_dir, cli_problem, install

    directory = Path(args.dir).absolute() if args.dir else agents_dir()
    if args.action == "install":
        unknown = [name for name in args.names if name not in AGENT_CLIS]
        if unknown:
            raise UsageError(f"unknown agent CLI(s): {', '.join(unknown)} (known: {', '.join(AGENT_CLIS)})")
        return install(args.names, directory)
    problems = 0
    for name, (package, version, _binary) in AGENT_CLIS.items():
        problem = cli_problem(name, directory)
        problems += problem is not None
        print(f"{name}: {package}@{version}: {'installed' if problem is None else problem}")
    return 1 if problems else 0
