"""Hook specifications for extending pytest-ifbench.

Implement these in a ``conftest.py``, a pytest plugin, or a benchmark plugin
(a module published under the ``pytest_ifbench.benchmarks`` entry-point group;
see docs/architecture.md), as plain functions with these names or with
``pytest.hookimpl``. Benchmark plugins are also loaded by the ``ifbench``
command, outside pytest: there only the ``pytest_ifbench_*`` hooks are called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pluggy import HookspecMarker

if TYPE_CHECKING:
    import pytest

    from ._protocols import ProtocolRegistry
    from ._registry import Registry
    from .agents.clis import AgentClis
    from .agents.profiles import ToolRegistry
    from .models.providers import ProviderTable
    from .reports.metrics import MetricTable
    from .sandbox.backend import SandboxBackend

#: ``pytest.hookspec`` itself (the "pytest" project's marker), without importing pytest: the ``ifbench``
#: command builds its plugin manager from these specs and never needs pytest for it.
hookspec = HookspecMarker("pytest")


@hookspec(historic=True)
def pytest_ifbench_register_verifiers(registry: Registry) -> None:
    """Add verifiers to ``registry`` (``registry.verifier(id, ...)`` decorator or ``registry.add``).

    Called once per session after the built-ins are registered; ids must be
    ``<benchmark>.<name>`` and unique.
    """


@hookspec(historic=True)
def pytest_ifbench_register_protocols(protocols: ProtocolRegistry) -> None:
    """Add protocols: ``protocols["name"] = async def run(instance, runtime) -> Episode``."""


@hookspec(historic=True)
def pytest_ifbench_register_tools(tools: ToolRegistry) -> None:
    """Add tools and tool profiles for the built-in agent loop (``runner: loop``).

    ``tools.add_tool(tool)`` offers a :class:`~pytest_ifbench.agents.tools.Tool` in every
    profile (``profiles=[...]`` to choose); ``tools.add_profile(profile)`` adds a whole
    :class:`~pytest_ifbench.agents.profiles.Profile`, selected by ``protocol_options.tools``.
    Profiles usually present existing capabilities under other names:
    ``alias(tools.tool("bash"), name="Shell", ...)``. The built-in tools and profiles
    (``generic``, ``claude_code``, ``kilo``, ``droid``) are registered first; names are unique.
    Every tool must execute inside the run's sandboxed workspace (``ToolContext.command``).
    """


@hookspec(historic=True)
def pytest_ifbench_agent_clis(clis: AgentClis) -> None:
    """Add real agent CLIs (runners) and the proxy wire formats they speak.

    ``clis.add(cli)`` registers an :class:`~pytest_ifbench.agents.clis.AgentCli` (a subclass
    declaring its runner ``name``, npm ``package``/``version``/``binary``, ``wire`` format,
    ``multi_turn``, and implementing ``configure`` -- the environment and HOME files pointing it at
    the proxy -- and ``invocation`` -- the argv of one turn, later turns continuing the session);
    suites then use ``runner: <name>`` and ``ifbench agents install|status`` lists it.
    ``clis.add_wire_format(wire)`` adds a :class:`~pytest_ifbench.agents.wire.WireFormat` the
    proxy can serve (paths, translation to a model call, the Messages-shaped record, rendering).
    The built-ins (``claude_code``, ``kilo``, ``droid``; ``anthropic_messages``, ``openai_chat``)
    are registered first; names are unique. Called under pytest once per session, and by the
    ``ifbench agents`` command (installed plugins and ``--plugin`` modules only: no conftests).
    A CLI runs only inside the sandbox, reaching nothing but the proxy.
    """


@hookspec(historic=True)
def pytest_ifbench_model_providers(providers: ProviderTable) -> None:
    """Add model providers: ``providers.add(Provider(name=..., prefix="myprov/", transport=...))``.

    A :class:`~pytest_ifbench.Provider` declares which model strings it serves (``prefix`` or a
    ``serves_when(model, api_base, extra)`` predicate), the transport that sends its calls (see
    :class:`pytest_ifbench.models.provider_api.Transport`; retries, the response cache, reasoning
    stripping and accounting stay the client's), its availability check (``problem()``: a
    non-None reason stops a run that selects one of its models, before anything is called), its
    default concurrency (for ``--ifbench-concurrency=0``) and whether it needs litellm.

    Providers added here are asked before the built-in ones, in the order added: the embedded
    model (``local/``), recorded responses, the direct OpenAI-compatible path, and litellm, which
    serves everything else and is always asked last (the ``trylast`` default). Names are unique.
    Called once per session under pytest (historic: a conftest registered later adds its
    providers too) and by the ``ifbench`` command; ``make_client`` and every client the run
    builds use the resulting table.
    """


@hookspec(firstresult=True)
def pytest_ifbench_sandbox_backend(name: str, config: pytest.Config) -> SandboxBackend | None:
    """Return the sandbox backend called ``name`` (``--ifbench-sandbox=NAME``), or None if it is not yours.

    First result wins; the built-ins (``bubblewrap``, ``docker``) answer last (``trylast``), so a plugin
    can add a backend or replace a built-in one.  The result must satisfy
    :class:`pytest_ifbench.sandbox.backend.SandboxBackend`; agent workspaces of the run use only it.
    Its ``problem()`` is asked at start-up: a line there stops the run (no fallback to another backend).
    """


@hookspec(firstresult=True)
def pytest_ifbench_suite_data(path: Any, config: pytest.Config) -> Any:
    """Return suite data (the same mapping a suite YAML file holds) for a file that is
    not a native suite, e.g. an official benchmark file in its own format, or None.

    The data is validated exactly like a YAML suite, so errors still name the
    file, the instance and the field.
    """


@hookspec(firstresult=True)
def pytest_ifbench_report_check(item: pytest.Item, name: str, outcomes: list[Any]) -> bool | None:
    """Report one subtest's worth of outcomes; raise to fail the subtest.

    Called inside ``subtests.test(msg=name)``: once per scored check (``name``
    is the check id and ``outcomes`` has one element), or once per turn when the
    instance reports per turn (``protocol_options.subtests: turn``). The built-in
    implementation runs last and raises when any outcome did not pass. Implement
    it ``tryfirst`` and return True to decide differently (e.g. baselines), or as a
    ``wrapper`` to surround it (e.g. an Allure step, which then fails with it).
    """


def pytest_ifbench_instance_verified(item: pytest.Item, record: dict[str, Any]) -> None:
    """Called once an instance's checks are evaluated, before they are reported.

    ``record`` is the instance's result record (see docs/results-format.md);
    implementations may attach things to reports but must not change it.
    """


def pytest_ifbench_plots(benchmark: str, records: list[dict[str, Any]], directory: Any) -> list[Any] | None:
    """Render ``benchmark``'s plots as PNG files into ``directory`` (a Path, one folder per
    benchmark, already created) and return
    their paths. Called on the controller after the run by the summary reporter.
    Import plotting libraries (matplotlib, Agg backend) inside the implementation.
    """


def pytest_ifbench_metrics(benchmark: str, records: list[dict[str, Any]]) -> list[MetricTable] | None:
    """Return extra metric tables for ``benchmark`` computed from its result records
    (the entries of the results file). Called on the controller after the run.
    """


def pytest_ifbench_results_meta(config: pytest.Config) -> dict[str, Any] | None:
    """Return entries to add to the top level of the results file (a plugin's own keys, e.g. the
    ``shard`` entry of ``--ifbench-shard``), or None. Called on the controller once, as the results file
    is written; the results are merged in registration order, and the core's own keys (``format``,
    ``plugin_version``, ``model``, ``judges``, ``generation``, ``metrics``, ``instances``) cannot be
    replaced. The file is written from the run's journal without reading it back, so this is the way
    to add to it (rewriting it would hold the whole file in memory).
    """


def pytest_ifbench_summary_facts(config: pytest.Config) -> list[str] | None:
    """Return lines (Markdown) for the list of facts at the top of the summary file -- model, date,
    settings -- e.g. what the shared cache did, or None. Called on the controller as the summary is
    written (by ``ifbench merge`` too, with the command's plugins).
    """


def pytest_ifbench_generators(generators: dict[str, Any]) -> None:
    """Add ``ifbench generate NAME`` commands: ``generators[NAME] = main`` with
    ``main(argv: list[str]) -> int`` (an exit status). Called by the ``ifbench``
    command only; import the generator inside ``main`` so the CLI starts fast.
    """
