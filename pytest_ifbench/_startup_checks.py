"""What stops a run at start-up, in one line, before any instance calls a model or starts a sandbox.

A provider that cannot run here, a hosted model without its API key, a missing sandbox, an agent CLI
that is not installed: each would otherwise error every item alike (or, worse, every model call after its
retries). The checks need the selected instances, so they run where the collection is known:

- without xdist, in ``pytest_collection_finish`` (see ``_plugin``), as a usage error;
- under xdist, on the controller, when the first worker reports its collection
  (``pytest_xdist_node_collection_finished``): the workers do not check. A usage error raised in a
  worker ends in xdist's INTERNALERROR with the reason lost (the worker dies after its collection was
  sent, and the controller asserts on the item it was given), so the controller reads the selected
  instances from the suite files by node id and stops the run itself, with the usage error's exit code.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._state import STATE_KEY

if TYPE_CHECKING:
    from ._types import Instance

__all__ = ["check_models", "check_selected", "pytest_xdist_node_collection_finished"]

#: Set on the controller once the start-up checks have run (every worker reports the same collection).
_CHECKED = pytest.StashKey[bool]()


def check_selected(instances: Sequence[Instance], config: pytest.Config) -> None:
    """Raise :class:`pytest.UsageError` naming what keeps the selected ``instances`` from running here."""
    check_models(_models_needed(instances, config), config)
    _check_agents(instances, config)
    collector = config.pluginmanager.get_plugin("ifbench-results")
    if instances and collector is not None:
        collector.lock_results()  # another run writing the same results file stops this one here


def _models_needed(instances: Sequence[Instance], config: pytest.Config) -> list[str]:
    """The model strings the selected instances will call: the model, and judges if judged."""
    state = config.stash[STATE_KEY]
    names = []
    if state.responses is None and any(i.needs_model for i in instances):
        names.append(state.model_name)
    if any(state.registry.get(c.verifier).kind == "judge" for i in instances for c in i.all_checks()):
        names.extend(state.judge_names)
    return names


def check_models(names: list[str], config: pytest.Config) -> None:
    """Stop the run when the provider of a model it will call cannot run here."""
    state = config.stash[STATE_KEY]
    found = state.providers.unavailable(names, state.api_base)
    if found:
        model, provider, problem = found
        raise pytest.UsageError(f"pytest-ifbench: {provider.needed.format(model=model)} but {problem}")
    _check_keys(names, config)


def _check_keys(names: list[str], config: pytest.Config) -> None:
    """Stop the run when a hosted model it will call has no API key (see ``models.credentials``):
    every call would fail alike."""
    from .models.credentials import key_needed, missing_key

    state = config.stash[STATE_KEY]
    for model in dict.fromkeys(names):
        missing = missing_key(model, state.api_base, state.providers)
        if not missing:
            continue
        role = "judge model" if model != state.model_name and model in state.judge_names else "model"
        hint = " (or name a server of your own with --api-base)" if missing == ("OPENAI_API_KEY",) else ""
        raise pytest.UsageError(f"pytest-ifbench: {role} {key_needed(model, missing)}{hint}")


def _check_agents(instances: Sequence[Instance], config: pytest.Config) -> None:
    """Agent instances need the OS sandbox, and a real agent CLI needs its program (and never run
    unsandboxed)."""
    from ._protocols import runs_agents

    state = config.stash[STATE_KEY]
    agents = [i for i in instances if runs_agents(state.protocols[i.protocol])]
    if not agents or config.getoption("ifbench_recorded_trajectories"):
        return
    from .sandbox import current_backend

    problem = current_backend().problem()
    if problem:
        raise pytest.UsageError(f"pytest-ifbench: {len(agents)} agent instance(s) selected, but {problem}")
    from .agents.startup import agent_startup_problem

    provider = state.providers.for_model(state.model_name, state.api_base)
    problem = agent_startup_problem(agents, state.agent_settings, model=state.model_name,
                                    context_window=provider.context_window)
    if problem:
        raise pytest.UsageError(f"pytest-ifbench: {problem}")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: Sequence[str]) -> None:
    """The xdist controller checks the collection its first worker reports (see the module)."""
    config = node.config
    if config.stash.get(_CHECKED, False) or config.getoption("collectonly"):
        return
    config.stash[_CHECKED] = True
    try:
        check_selected(list(_instances_of(config, ids)), config)
    except pytest.UsageError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)


def _instances_of(config: pytest.Config, ids: Iterable[str]) -> Iterable[Instance]:
    """The suite instances among the node ids a worker collected, read from their suite files.

    A file that does not load yields nothing: its worker reported that as a collection error."""
    from .suite.errors import SuiteError

    wanted: dict[str, set[str]] = {}
    for node_id in ids:
        file, sep, name = node_id.partition("::")
        if sep:
            wanted.setdefault(file, set()).add(name.split("@")[0])  # `--dist loadgroup` appends @group
    state = config.stash[STATE_KEY]
    for file, names in wanted.items():
        path = Path(config.rootpath, file)
        if path.suffix not in (".yaml", ".yml", ".json", ".jsonl"):
            continue
        try:
            suite = state.load(path)
        except (SuiteError, OSError, ValueError):
            continue
        yield from (instance for instance in suite.instances if instance.id in names)
