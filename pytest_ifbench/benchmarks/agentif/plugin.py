"""AgentIF-OneDay's plugin: the ``agentif.rubric`` verifier, the ``agentif`` protocol, official
``data.jsonl`` files and AgentIF YAML suites, the ``needs_web`` skip, start-up checks (sandbox, Chromium),
metrics and ``ifbench generate agentif agreement``.

Registered through the ``pytest_ifbench.benchmarks`` entry point ``agentif``; the core derives the declared
hooks and imports each module named there when first needed. The collection hooks are ordinary hook
functions; everything heavy is imported inside them.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from pytest_ifbench import Benchmark

_HERE = "pytest_ifbench.benchmarks.agentif"
WEB_TOOLS = ("web_search", "web_fetch")


def generate(argv: list[str]) -> int:
    """``ifbench generate agentif agreement ...``."""
    commands = ("agreement",)
    if not argv or argv[0] not in commands:
        print(f"usage: ifbench generate {BENCHMARK.name} {{{','.join(commands)}}} ...")
        return 2
    from .agreement import main

    return main(argv[1:])


BENCHMARK = Benchmark(
    name="agentif",
    verifiers=f"{_HERE}.verifiers:register",
    protocols=f"{_HERE}.protocol:register",
    official_reader=f"{_HERE}.official:read",
    metrics=f"{_HERE}.metrics:tables",
    generator=generate,
)


def _spec(item: pytest.Item) -> Any:
    spec = getattr(item, "spec", None)
    return spec if getattr(spec, "benchmark", None) == BENCHMARK.name else None


def web_tools(config: pytest.Config) -> list[str]:
    """Names of the web tools plugins register (``pytest_ifbench_register_tools``), on a fresh registry."""
    from pytest_ifbench import ToolRegistry

    tools = ToolRegistry()
    for impl in config.hook.pytest_ifbench_register_tools.get_hookimpls():
        impl.function(tools=tools)
    return [name for name in WEB_TOOLS if name in tools.tools()]


class NeedsWeb(pytest.Item):
    """Stands in for a ``needs_web`` task when no web tool is registered: it is reported as skipped with the
    reason, and (not being a suite item) its agent run is never started."""

    def __init__(self, *, reason: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reason = reason

    def setup(self) -> None:
        pytest.skip(self.reason)

    def runtest(self) -> None:  # pragma: no cover - setup always skips
        pytest.skip(self.reason)

    def reportinfo(self) -> tuple[Any, int, str]:
        return self.path, 0, self.name


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``needs_web`` tasks, with the reason, unless a ``web_search``/``web_fetch`` tool is registered."""
    web = [index for index, item in enumerate(items)
           if _spec(item) is not None and "needs_web" in _spec(item).markers]
    if not web or web_tools(config):
        return
    reason = ("agentif: this task needs the live web, and no tool named web_search or web_fetch is registered "
              "(pytest_ifbench_register_tools); the sandbox has no network")
    for index in web:
        item = items[index]
        stand_in = NeedsWeb.from_parent(item.parent, name=item.name, reason=reason)
        for mark in item.own_markers:
            stand_in.add_marker(getattr(pytest.mark, mark.name)(*mark.args, **mark.kwargs))
        items[index] = stand_in


def pytest_collection_finish(session: pytest.Session) -> None:
    """Say at start-up, in one line each, what AgentIF tasks will lack: the sandbox, Chromium."""
    config = session.config
    tasks = [spec for item in session.items if (spec := _spec(item)) is not None and spec.protocol == BENCHMARK.name]
    if not tasks or config.getoption("collectonly"):
        return
    recorded = False
    try:
        recorded = bool(config.getoption("ifbench_recorded_trajectories"))
    except ValueError:
        pass
    if not recorded:
        from pytest_ifbench.sandbox import sandbox_problem

        problem = sandbox_problem()
        if problem:
            raise pytest.UsageError(f"pytest-ifbench: {len(tasks)} agentif task(s) selected, but {problem}")
    from .screenshot import problem as screenshot_problem

    if reason := screenshot_problem():
        message = f"agentif: {reason}; HTML/SVG files reach the judge as text only"
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(message, yellow=True)
        warnings.warn(pytest.PytestWarning(message), stacklevel=1)
