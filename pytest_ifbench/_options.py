"""The core's command-line options (``pytest --help``, group "ifbench" and "ifbench-agents").

Reporters, the scale plugins and benchmarks add their own options in their own modules.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from .suite.run_settings import add_options as add_run_settings_options


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("ifbench", "instruction-following benchmarks (pytest-ifbench)")
    group.addoption("--model", dest="ifbench_model", default=None, metavar="MODEL",
                    help="litellm model string to evaluate, e.g. openai/gpt-4o-mini "
                         "(default: the embedded local/smollm2)")
    group.addoption("--judge-model", dest="ifbench_judge_models", action="append", default=None, metavar="MODEL",
                    help="litellm model for LLM-judged checks; repeat for a panel (default: --model)")
    group.addoption("--api-base", dest="ifbench_api_base", default=None, metavar="URL",
                    help="base URL of an OpenAI-compatible server (litellm env vars such as OPENAI_API_BASE also work)")
    group.addoption("--ifbench-concurrency", dest="ifbench_concurrency", type=_count(0, "0 (auto) or more"),
                    default=0, metavar="N",
                    help="model calls in flight at once per process (default: 16 for APIs, 1 for local models)")
    group.addoption("--ifbench-cache", dest="ifbench_cache", default=".ifbench-cache", metavar="DIR",
                    help="response cache directory (default: .ifbench-cache)")
    group.addoption("--ifbench-no-cache", dest="ifbench_no_cache", action="store_true",
                    help="neither read nor write the response cache")
    group.addoption("--ifbench-results", dest="ifbench_results", default="ifbench-results.json", metavar="FILE",
                    help="results JSON file (default: ifbench-results.json; '' to skip)")
    group.addoption("--ifbench-responses", dest="ifbench_responses", default=None, metavar="JSONL",
                    help="score pre-generated responses instead of calling a model")
    group.addoption("--ifbench-keep-think", dest="ifbench_keep_think", action="store_true",
                    help="verify replies with <think>...</think> blocks left in")
    group.addoption("--ifbench-max-attempts", dest="ifbench_max_attempts", type=_count(1), default=6, metavar="N",
                    help="attempts per model call before it errors (default: 6)")
    group.addoption("--ifbench-max-wait", dest="ifbench_max_wait", type=float, default=300.0, metavar="SECONDS",
                    help="cap on total backoff wait per model call (default: 300)")
    group.addoption("--ifbench-timeout", dest="ifbench_timeout", type=float, default=600.0, metavar="SECONDS",
                    help="timeout of one model request (default: 600)")
    group.addoption("--ifbench-full", dest="ifbench_full", action="store_true",
                    help="also run instances marked 'full' (left out unless asked for; a -m expression "
                         "naming 'full' or explicit node ids select them too)")
    add_run_settings_options(group)
    group.addoption("--ifbench-sandbox-timeout", dest="ifbench_sandbox_timeout", type=float, default=10.0,
                    metavar="SECONDS", help="wall-clock limit for sandboxed code per verifier (default: 10)")
    agents = parser.getgroup("ifbench-agents", "agent runs (pytest-ifbench): override every agent instance's options")
    agents.addoption("--ifbench-sandbox", dest="ifbench_sandbox", default=None, metavar="NAME",
                     help="the sandbox backend agent commands run on: bubblewrap (default), docker, or one a "
                          "plugin adds (pytest_ifbench_sandbox_backend); never a fallback to another")
    from .agents.clis import BUILTIN_CLIS
    from .agents.options import AUTO_RUNNER, BUILT_IN_RUNNER, AgentOptions

    shipped = ", ".join(cli.name for cli in BUILTIN_CLIS)
    agents.addoption("--ifbench-agent-runner", dest="ifbench_agent_runner", default=None, metavar="NAME",
                     help=f"run agent instances with this runner: {AUTO_RUNNER} (each instance's scaffold CLI where "
                          f"installed, else the built-in loop with that scaffold's tool profile), {BUILT_IN_RUNNER} "
                          f"(the built-in tool loop) or a real agent CLI ({shipped}, or a plugin's; see `ifbench "
                          f"agents status`); default: the instance's protocol_options.runner, else {BUILT_IN_RUNNER}")
    agents.addoption("--ifbench-agent-tools", dest="ifbench_agent_tools", default=None, metavar="PROFILE",
                     help="tool profile of the built-in loop (generic, claude_code, kilo, droid, ...); default: the "
                          "instance's protocol_options.tools, else (runner loop or auto) its scaffold's profile, "
                          "else generic")
    defaults = AgentOptions()
    for name, kind, unit, what in (
            ("max-steps", int, "N", "stop each agent run after N model calls (steps)"),
            ("max-tokens", int, "N", "stop each agent run once it has used N completion tokens in all"),
            ("max-seconds", float, "SECONDS", "stop each agent run after SECONDS of wall-clock time (model calls "
                                              "and tools)"),
            ("max-cost", float, "USD", "stop each agent run once its model calls cost USD, where the provider "
                                       "reports cost; 0 for no limit"),
            ("command-timeout", float, "SECONDS", "stop one tool command of an agent run after SECONDS")):
        option = name.replace("-", "_")
        agents.addoption(f"--ifbench-agent-{name}", dest=f"ifbench_agent_{option}", type=kind, default=None,
                         metavar=unit, help=f"{what}; default: the instance's protocol_options.{option}, else "
                                            f"{getattr(defaults, option):g}")
    agents.addoption("--ifbench-agent-concurrency", dest="ifbench_agent_concurrency", type=_count(1), default=2,
                     metavar="N", help="agent runs in flight at once per process (default: 2)")
    agents.addoption("--ifbench-keep-workspaces", dest="ifbench_keep_workspaces", action="store_true",
                     help="keep each agent run's workspace (a failed item's report names its path)")
    agents.addoption("--ifbench-workspaces", dest="ifbench_workspaces", default=None, metavar="DIR",
                     help="create agent workspaces under DIR (default: the system's temporary directory)")
    agents.addoption("--ifbench-trajectories", dest="ifbench_trajectories", default="ifbench-trajectories",
                     metavar="DIR", help="write each agent run's trajectory here, step by step "
                                         "(default: ifbench-trajectories; '' to skip)")
    agents.addoption("--ifbench-recorded-trajectories", dest="ifbench_recorded_trajectories", action="append",
                     default=None, metavar="PATH",
                     help="score recorded trajectories (files or folders: ours, normalized JSONL, raw proxy "
                          "logs) instead of running agents; repeatable")


def _count(minimum: int, allowed: str = "") -> Callable[[str], int]:
    """An option's ``type``: a whole number of at least ``minimum``; anything else is a usage error naming the
    option (``argument --ifbench-concurrency: must be 0 (auto) or more, got -3``)."""
    allowed = allowed or f"{minimum} or more"

    def count(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {value}")
        return value

    return count
