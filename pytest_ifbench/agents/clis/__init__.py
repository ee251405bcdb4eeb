"""Real agent CLIs as runners: one module per CLI, one registry.

A CLI is one module declaring one :class:`AgentCli` (runner name, npm package and pinned version,
executable, wire format, how it is configured and invoked): :mod:`.claude_code`, :mod:`.kilo`,
:mod:`.droid`. A package adds another with that one module plus one registration::

    def pytest_ifbench_agent_clis(clis):
        clis.add(my_cli.CLI)

Its wire format, if the proxy does not speak it yet, is likewise one module (:mod:`..wire`) plus
``clis.add_wire_format(MY_FORMAT)``.
"""

from __future__ import annotations

from ._base import HOME, PLACEHOLDER_KEY, SANDBOX_PATH, AgentCli, Invocation, write_home
from ._registry import BUILTIN_CLIS, AgentClis, collect_agent_clis

__all__ = ["BUILTIN_CLIS", "HOME", "PLACEHOLDER_KEY", "SANDBOX_PATH", "AgentCli", "AgentClis", "Invocation",
           "collect_agent_clis", "write_home"]
