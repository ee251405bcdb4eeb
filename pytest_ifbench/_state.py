"""Per-process session state: registry, protocols, model clients, background jobs."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._protocols import PROTOCOLS, ProtocolRegistry, Runtime
from ._registry import Registry
from .models.breaker import Breakers
from .models.cache import ResponseCache
from .models.client import ModelClient, RetryPolicy
from .models.local import DEFAULT_LOCAL_MODEL
from .models.providers import ProviderTable, make_client
from .models.recorded import RECORDED
from .models.spending import Ledger
from .ruff.batch import RuffBatcher
from .suite.format import Suite, load_suite, parse_suite
from .suite.run_settings import apply_overrides, generation_overrides

if TYPE_CHECKING:
    from .models.background import BackgroundGenerator
    from .models.lookahead import Lookahead

STATE_KEY = pytest.StashKey["IfbenchState"]()
#: Result records by node id, gathered from reports (on the xdist controller: from every worker).
RECORDS_KEY = pytest.StashKey[dict[str, dict[str, Any]]]()
#: Why the results file was not written (a full disk...) and where its records are, when it was not.
RESULTS_PROBLEM_KEY = pytest.StashKey[str]()


@dataclass(kw_only=True)
class IfbenchState:
    config: pytest.Config
    registry: Registry
    protocols: ProtocolRegistry
    model_name: str
    judge_names: list[str]
    api_base: str | None
    cache: ResponseCache | None
    retry: RetryPolicy
    concurrency: int
    strip_think: bool
    responses: Mapping[str, list[str]] | None = None
    #: Who serves which model string (the built-ins plus ``pytest_ifbench_model_providers``).
    providers: ProviderTable = field(default_factory=ProviderTable)
    sandbox: dict[str, Any] = field(default_factory=dict)
    generator: BackgroundGenerator | None = None
    #: Starts instances' jobs a bounded distance ahead of the running item (see ``models.lookahead``).
    lookahead: Lookahead | None = None
    #: Circuit breakers per endpoint, shared by the model's and the judges' clients (one set per process).
    breakers: Breakers = field(default_factory=Breakers)
    #: The run's spending limit (``--ifbench-max-cost``, see ``_max_cost``), shared by every client; None: none.
    spending: Ledger | None = None
    _runtime: Runtime | None = None
    _ruff_batcher: RuffBatcher | None = None
    #: The markers registered for instances, by name, with their decorator once collection made it
    #: (shared by the items, see ``_collect.shared_mark``).
    registered_markers: dict[str, pytest.MarkDecorator | None] = field(default_factory=dict)
    #: Suite data an importer already returned while pytest decided whether to collect a file.
    imported: dict[Path, Any] = field(default_factory=dict)
    #: Recorded response ids that matched no selected instance (likely typos).
    unmatched_responses: list[str] = field(default_factory=list)
    keep_workspaces: bool = False
    _agent: Any = None

    @property
    def agent_settings(self) -> Any:
        """Agent-run settings (``agents.session.AgentSettings``), built on first use."""
        if self._agent is None:
            self._agent = build_agent_settings(self.config, self)
        return self._agent

    @property
    def model_given(self) -> bool:
        return self.config.getoption("ifbench_model") is not None

    def client(self, model: str) -> ModelClient:
        return make_client(model, api_base=self.api_base, cache=self.cache, retry=self.retry,
                           strip_think=self.strip_think, providers=self.providers, breakers=self.breakers,
                           spending=self.spending)

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            model = self.client(self.model_name)
            judges = [model if name == self.model_name else self.client(name) for name in self.judge_names]
            self._runtime = Runtime(registry=self.registry, model=model, judges=judges,
                                    responses=self.responses, sandbox=self.sandbox,
                                    agent_settings=lambda: self.agent_settings)
        return self._runtime

    def ruff_batch(self) -> RuffBatcher:
        """Batches the ruff-backed checks of finished replies (one per process: each xdist worker its own)."""
        if self._ruff_batcher is None:
            self._ruff_batcher = RuffBatcher(self.registry)
        return self._ruff_batcher

    def generation(self) -> BackgroundGenerator:
        if self.generator is None:
            from .models.background import BackgroundGenerator

            concurrency = self.concurrency
            if concurrency <= 0:  # auto: the model's provider knows (llama.cpp serialises; hosted APIs like many)
                concurrency = self.providers.for_model(self.model_name, self.api_base).concurrency
            self.generator = BackgroundGenerator(concurrency)
            runtime = self.runtime
            for client in [runtime.model, *runtime.judges]:
                if client is not None:
                    client.limiter = self.generator.limiter
        return self.generator

    def load(self, path: Path) -> Suite:
        try:
            display = path.relative_to(self.config.rootpath)
        except ValueError:
            display = path
        data = self.imported.pop(path, None)
        if data is None:
            from .suite.importers import import_suite_data

            data = import_suite_data(self.config, path)
        if data is not None:
            suite = parse_suite(display, data, self.registry, protocols=set(self.protocols), root=path.parent)
        else:
            suite = load_suite(path, self.registry, protocols=set(self.protocols), display=display)
        return apply_overrides(suite, generation_overrides(self.config))


def build_state(config: pytest.Config) -> IfbenchState:
    from ._composition import build_registry

    registry = build_registry(config.hook)
    protocols = ProtocolRegistry(PROTOCOLS)
    config.hook.pytest_ifbench_register_protocols.call_historic(kwargs={"protocols": protocols})
    model = config.getoption("ifbench_model") or DEFAULT_LOCAL_MODEL
    judges = config.getoption("ifbench_judge_models") or [model]
    providers = ProviderTable.from_hook(config.hook)
    cache = None
    if not config.getoption("ifbench_no_cache"):
        root = Path(config.getoption("ifbench_cache"))
        if not root.is_absolute():
            root = Path(config.invocation_params.dir) / root
        cache = ResponseCache(root)
    responses = None
    if config.getoption("ifbench_responses"):
        from .models.recorded import ResponsesError, load_responses

        try:
            responses = load_responses(Path(config.getoption("ifbench_responses")))
        except ResponsesError as exc:
            raise pytest.UsageError(f"pytest-ifbench: --ifbench-responses: {exc}") from None
        if not config.getoption("ifbench_model"):
            model = RECORDED
    return IfbenchState(
        config=config, registry=registry, protocols=protocols, model_name=model, judge_names=list(judges),
        api_base=config.getoption("ifbench_api_base"), cache=cache,
        retry=RetryPolicy(max_attempts=config.getoption("ifbench_max_attempts"),
                          max_total_wait=config.getoption("ifbench_max_wait"),
                          timeout=config.getoption("ifbench_timeout")),
        concurrency=config.getoption("ifbench_concurrency"),
        strip_think=not config.getoption("ifbench_keep_think"),
        responses=responses, providers=providers,
        sandbox={"timeout": config.getoption("ifbench_sandbox_timeout")},
        keep_workspaces=config.getoption("ifbench_keep_workspaces"),
    )


_AGENT_OVERRIDES = ("runner", "tools", "max_steps", "max_tokens", "max_seconds", "max_cost", "command_timeout")


def build_agent_settings(config: pytest.Config, state: IfbenchState) -> Any:
    """Agent settings from the command line: overrides, workspaces, trajectories, tools, recordings."""
    from .agents.clis import collect_agent_clis
    from .agents.profiles import ToolRegistry
    from .agents.recorded_files import recorded_trajectories
    from .agents.session import AgentSettings

    base = Path(config.invocation_params.dir)

    def path_option(name: str) -> Path | None:
        value = config.getoption(name)
        return (base / value) if value else None

    tools = ToolRegistry()
    config.hook.pytest_ifbench_register_tools.call_historic(kwargs={"tools": tools})
    clis = collect_agent_clis(config.hook)
    recorded = None
    if config.getoption("ifbench_recorded_trajectories"):
        recorded = recorded_trajectories([base / p for p in config.getoption("ifbench_recorded_trajectories")])

    def submit(coro: Any) -> Any:
        return state.generation().run_threadsafe(coro)

    return AgentSettings(
        overrides={key: config.getoption(f"ifbench_agent_{key}") for key in _AGENT_OVERRIDES},
        keep_workspaces=state.keep_workspaces, workspace_root=path_option("ifbench_workspaces"),
        trajectories_dir=path_option("ifbench_trajectories"), tools=tools, clis=clis, recorded=recorded,
        submit=submit,
        # One log line per agent step: `pytest --log-cli-level=INFO` shows them live.
        progress=logging.getLogger("pytest_ifbench.agents").info,
        slots=config.getoption("ifbench_agent_concurrency"),
    )
