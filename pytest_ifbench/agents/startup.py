"""What stops a run of agent instances at start-up, in one line, before any instance runs.

Each of these would otherwise fail every item alike (or, worse, every model call after retries): a
``--ifbench-workspaces`` directory that does not exist, an ``--ifbench-agent-*`` value an instance's
``protocol_options`` could not hold, a tool profile no plugin registered, a real CLI that is not installed or unknown,
and a model whose context window cannot hold a real CLI's own prompt (the embedded model's 4,096 tokens
against Claude Code's ~21,000).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .options import BUILT_IN_RUNNER, OptionError, agent_options

if TYPE_CHECKING:
    from .._types import Instance
    from .session import AgentSettings

__all__ = ["agent_startup_problem"]


def agent_startup_problem(instances: Sequence[Instance], settings: AgentSettings, *, model: str,
                          context_window: Callable[[str], int | None] | None = None) -> str | None:
    """One line saying why ``instances`` (agent instances, to be run on ``model``) cannot start, or None.

    ``context_window(model)`` gives the model's window in tokens where its provider knows it."""
    from .clis import AgentClis
    from .install import cli_problem
    from .session import instance_options

    root = settings.workspace_root
    if root is not None and not root.is_dir():
        return f"--ifbench-workspaces {root}: no such directory (create it, or leave the option out)"
    flags = {key: value for key, value in settings.overrides.items() if value is not None}
    try:
        agent_options({}, flags)
    except OptionError as exc:
        return f"{_flag(exc.field)}={flags[exc.field]}: {exc}"
    profiles = settings.tools.profiles() if settings.tools is not None else None
    runners: set[str] = set()
    for instance in instances:
        try:
            options = instance_options(instance, settings)
        except OptionError:
            continue  # the item reports its own option error
        runners.add(options.runner)
        if options.runner == BUILT_IN_RUNNER and profiles is not None and options.tools not in profiles:
            where = (_flag("tools") if "tools" in flags else
                     f"{instance.suite}: instance {instance.id!r}: protocol_options.tools")
            return f"{where}: unknown tool profile {options.tools!r} (known: {', '.join(sorted(profiles))})"
    clis = settings.clis if settings.clis is not None else AgentClis()
    window = context_window(model) if context_window is not None else None
    for runner in sorted(runners - {BUILT_IN_RUNNER}):
        problem = cli_problem(runner, clis=clis)
        if problem:
            return f"agent runner {runner!r}: {problem}"
        needed = clis.get(runner).prompt_tokens
        if window is not None and needed > window:
            return (f"agent CLI {runner} cannot run on {model}: the model's context window is {window:,} tokens, "
                    f"and {runner}'s own prompt (system prompt and tool schemas) is about {needed:,} tokens")
    return None


def _flag(option: str) -> str:
    """The command-line option that overrides agent option ``option``: ``--ifbench-agent-max-steps``."""
    return f"--ifbench-agent-{option.replace('_', '-')}"
