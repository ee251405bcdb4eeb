"""``ifbench agents install|status``: install the pinned real agent CLIs with npm, or show their state.

The CLIs are those of the agent-CLI registry: the shipped ones, every installed benchmark plugin's
``pytest_ifbench_agent_clis`` and each ``--plugin MODULE``'s (conftest files are not read here).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .errors import UsageError

if TYPE_CHECKING:
    from ..agents.clis import AgentClis


class _Shipped:
    """"a, b or c": the shipped CLIs' names, looked up only when a help text is shown (argparse
    ``%``-formats an argument's help with the action's attributes), so other subcommands never
    import the agent-CLI declarations."""

    def __str__(self) -> str:
        from ..agents.clis import BUILTIN_CLIS

        shipped = [cli.name for cli in BUILTIN_CLIS]
        return f"{', '.join(shipped[:-1])} or {shipped[-1]}"


def add_parser(commands: Any) -> None:
    agents = commands.add_parser(
        "agents", help="install or check the real agent CLIs (ifbench agents install|status)",
        description="Install the pinned agent CLIs that agent runners drive (npm install into one directory: "
                    "$IFBENCH_AGENTS_DIR, else agents/ in the per-user cache, ~/.cache/pytest-ifbench/agents, "
                    "shared by every checkout), or show their state. NAME@VERSION installs another version "
                    "beside the pinned one; an instance naming that version runs it.",
    )
    actions = agents.add_subparsers(dest="action", title="actions", metavar="ACTION", required=True)
    install = actions.add_parser("install", help="npm install the pinned versions (all when no NAME is given), "
                                                 "or NAME@VERSION beside them",
                                 epilog="exit status: npm's (127 when npm is missing).")
    names = install.add_argument("names", nargs="*", metavar="NAME",
                                 help="%(shipped)s, or a plugin's CLI; "
                                      "NAME@VERSION for another version (e.g. claude_code@2.0.69)")
    names.shipped = _Shipped()  # type: ignore[attr-defined]
    status = actions.add_parser("status", help="show each CLI's pinned version and whether it is installed",
                                epilog="exit status: 0 when every CLI is installed at its pinned version, else 1.")
    for action in (install, status):
        action.add_argument("--dir", default=None, metavar="DIR", help="the install directory")
        action.add_argument("--plugin", dest="plugins", action="append", default=[], metavar="MODULE",
                            help="import MODULE and call its pytest_ifbench_agent_clis(clis); repeatable")
    agents.set_defaults(run=run)


def _registry(plugins: Sequence[str]) -> AgentClis:
    """The shipped CLIs, the installed plugins' and each ``--plugin`` module's."""
    from .._composition import command_plugin_manager
    from ..agents.clis import collect_agent_clis
    from .plugin_option import plugin_modules

    modules = plugin_modules(plugins, "pytest_ifbench_agent_clis", "pytest_ifbench_agent_clis(clis)")
    try:
        return collect_agent_clis(command_plugin_manager(modules).hook)
    except Exception as exc:  # noqa: BLE001 - any plugin failure is a usage error
        raise UsageError(f"registering agent CLIs failed: {type(exc).__name__}: {exc}") from None


def run(args: argparse.Namespace, extra: list[str]) -> int:
    from pathlib import Path

    from ..agents.install import agents_dir, cli_problem, install, installed_versions, parse_spec

    clis = _registry(args.plugins)
    directory = Path(args.dir).absolute() if args.dir else agents_dir()
    if args.action == "install":
        unknown = []
        for spec in args.names:
            try:
                parse_spec(spec, clis)
            except ValueError:
                unknown.append(spec)
        if unknown:
            raise UsageError(f"unknown agent CLI(s): {', '.join(unknown)} (known: {', '.join(clis.names())}, "
                             "each optionally @VERSION)")
        print(f"installing into {directory}")
        return install(args.names, directory, clis)
    print(f"agent CLIs in {directory}")
    problems = 0
    for cli in clis:
        problem = cli_problem(cli.name, directory, clis)
        problems += problem is not None
        others = [v for v in installed_versions(cli.name, directory, clis) if v != cli.version]
        also = f" (also installed: {', '.join(others)})" if others and problem is None else ""
        print(f"{cli.name}: {cli.package}@{cli.version}: {'installed' if problem is None else problem}{also}")
    return 1 if problems else 0
