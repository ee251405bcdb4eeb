"""One agent instance, end to end: a fresh workspace, the runner, the trajectory.

The runner is the built-in tool-calling loop (``runner: loop``, tools presented
by a profile) or a real agent program (``runner: claude_code`` ...) driven
through the recording proxy. Either way the result is an :class:`AgentRun`:
the trajectory, the final workspace (kept for the workspace verifiers, closed
by the item's teardown), the final answer of each user turn, why the run
stopped and where its time went.

With recorded trajectories (``ifbench score --trajectories``) nothing runs:
the recorded trajectory is scored as it is, without a workspace.

Failures of the harness itself — no sandbox, a runner that crashed, a proxy
error — raise :class:`AgentHarnessError`: the item errors, and no check is
counted as failed by the model. A run the agent itself took down (its own
commands hit a sandbox limit, killed the CLI, ...: :attr:`CliResult.agent_fault`)
is no error: :attr:`AgentRun.fault` holds the reason, the stop reason is
``agent_fault``, and every check of the instance fails with that reason.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..models.background import add_wait
from .options import BUILT_IN_RUNNER, AgentOptions, agent_options, choose_runner

if TYPE_CHECKING:
    from .._types import CheckSpec, Instance
    from ..models.client import Completion, ModelClient
    from .loop import LoopResult
    from .trajectory import Trajectory
    from .workspace import Workspace


#: A trajectory's meta key: why the run's final workspace was not kept beside it.
NOT_KEPT = "workspace_not_kept"


class AgentHarnessError(RuntimeError):
    """The harness, not the agent, failed (sandbox, runner, proxy); the item errors. ``paid``: the model
    calls the run made before it failed (a CLI's proxied calls), which the errored record counts."""

    paid: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSettings:
    """Run-wide agent settings from the command line."""

    #: ``--ifbench-agent-*`` values that override every instance's options (None = not given).
    overrides: Mapping[str, Any] = field(default_factory=dict)
    keep_workspaces: bool = False
    #: Where workspaces are created (default: the system's temporary directory).
    workspace_root: Path | None = None
    #: Where each run's trajectory is written step by step (None: not written).
    trajectories_dir: Path | None = None
    #: Tools and profiles (built-ins plus the ``pytest_ifbench_register_tools`` hook).
    tools: Any = None
    #: Agent CLIs and wire formats (built-ins plus the ``pytest_ifbench_agent_clis`` hook; None: built-ins).
    clis: Any = None
    #: Recorded trajectories by instance id: score them instead of running anything.
    recorded: Mapping[str, Trajectory] | None = None
    #: Runs a coroutine on the background loop from another thread (the recording proxy needs it).
    submit: Callable[[Any], Any] | None = None
    #: Called with one line per agent step (progress display).
    progress: Callable[[str], None] | None = None
    #: Agent runs in flight at once (each holds a sandbox; model calls are limited separately).
    slots: int = 2


@dataclass(kw_only=True)
class AgentRun:
    trajectory: Trajectory
    #: The final workspace (None for recorded trajectories); closed by the item's teardown.
    workspace: Workspace | None
    runner: str
    options: AgentOptions
    stop_reason: str
    steps: int = 0
    #: The final answer after each user turn.
    turn_texts: list[str] = field(default_factory=list)
    completions: list[Completion] = field(default_factory=list)
    #: A real CLI's version that ran, and the one the instance named (None: none named).
    runner_version: str | None = None
    version_named: str | None = None
    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    duration: float = 0.0
    trajectory_path: Path | None = None
    #: Why the agent's own actions ended the run (None: they did not); the instance fails with it.
    fault: str | None = None
    #: The final workspace kept beside the trajectory (``agents/workspace_archive.py``), or why it was not.
    workspace_archive: str | None = None
    #: A re-scored run whose live workspace was not kept: why, and that checks reading the workspace cannot
    #: be decided again (:func:`require_workspace`; a protocol reading the workspace itself raises
    #: :class:`AgentHarnessError` with it).
    workspace_lost: str | None = None

    def close(self, *, keep: bool = False) -> None:
        """End the run's workspace: its backend's side (a container, a disk quota's tmpfs mount) always
        goes; its files stay on disk when it was made to be kept (``--ifbench-keep-workspaces``) or with
        ``keep``. (Skipping the close to keep the files left the quota mounted, and the next run's start-up
        released it as a killed run's, files and all.)"""
        if self.workspace is not None:
            if keep:
                self.workspace.keep = True
            self.workspace.close()

    def to_json(self) -> dict[str, Any]:
        return {
            "runner": self.runner, "stop_reason": self.stop_reason, "steps": self.steps,
            "runner_version": self.runner_version, "version_named": self.version_named,
            "options": self.options.to_json(), "model_seconds": round(self.model_seconds, 4),
            "tool_seconds": round(self.tool_seconds, 4), "duration": round(self.duration, 4),
            "workspace": str(self.workspace.path) if self.workspace is not None else None,
            "trajectory_file": str(self.trajectory_path) if self.trajectory_path else None,
            **({"workspace_archive": self.workspace_archive} if self.workspace_archive else {}),
            **({"fault": self.fault} if self.fault else {}),
            "trajectory": self.trajectory.to_json(),
        }


def instance_options(instance: Instance, settings: AgentSettings) -> AgentOptions:
    """The agent options an instance runs with: its own (:func:`.options.agent_options`, the command line's
    ``--ifbench-agent-*`` on top) and the runner :func:`.options.choose_runner` picks for its scaffold
    under ``--ifbench-agent-runner`` (raises :class:`.options.OptionError`)."""
    from .clis import AgentClis
    from .install import cli_problem
    from .profiles import ToolRegistry

    overrides = dict(settings.overrides)
    flag = overrides.pop("runner", None)
    clis = settings.clis if settings.clis is not None else AgentClis()
    tools = settings.tools if settings.tools is not None else ToolRegistry()
    options = agent_options(instance.protocol_options, overrides)
    return choose_runner(options, scaffold=instance.scaffold, flag=flag, clis=clis,
                         installed=lambda name: cli_problem(name, clis=clis) is None, profiles=tools.profiles())


def user_queries(instance: Instance) -> list[str]:
    """The user turns of an agent instance: its prompt, or each scripted turn."""
    if instance.turns:
        return [turn.user for turn in instance.turns]
    return [instance.prompt] if instance.prompt is not None else []


def _file_name(instance: Instance, sample: int) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{instance.suite.as_posix()}--{instance.id}").strip("._")
    return f"{base}{f'.sample{sample}' if sample else ''}.json"


async def run_agent(instance: Instance, *, client: ModelClient | None, settings: AgentSettings,
                    sample: int = 0) -> AgentRun:
    """Run (or, with recorded trajectories, replay) one agent instance."""
    options = instance_options(instance, settings)
    if settings.recorded is not None:
        return _recorded(instance, options, settings)
    if client is None:
        raise AgentHarnessError("no model configured for the agent run")
    from .workspace import SandboxUnavailable, Workspace

    backend = instance_backend(options)
    path = settings.trajectories_dir / _file_name(instance, sample) if settings.trajectories_dir else None
    queued = time.perf_counter()
    # The workspace is made once a slot is free: made earlier, every selected instance's would hold its disk
    # (and its quota mount or container) from the run's start, and one cancelled in the queue (Ctrl-C) was left.
    async with _slots(settings.slots):
        start = time.perf_counter()
        add_wait(start - queued)
        try:
            workspace = Workspace.create(instance.environment, parent=settings.workspace_root,
                                         keep=settings.keep_workspaces, backend=backend)
        except SandboxUnavailable as exc:
            raise AgentHarnessError(str(exc) if backend is None else f"{_named(options)}: {exc}") from None
        try:
            if options.runner == BUILT_IN_RUNNER:
                run = await _loop(instance, client, workspace, options, settings, sample, path)
            else:
                run = await _cli(instance, client, workspace, options, settings, path, sample)
        except BaseException:
            workspace.close()
            raise
    run.duration = time.perf_counter() - start
    try:  # the checks see the agent's work, never a HOME or /tmp it prepared for them
        await asyncio.to_thread(workspace.clear_home_and_tmp)
    except OSError as exc:
        workspace.close()
        error = AgentHarnessError(f"cannot clear the run's HOME and /tmp before its checks: {exc}")
        error.paid = tuple(run.completions)
        raise error from None
    if path is not None:  # what the checks see, kept beside the trajectory for a re-score
        from .workspace_archive import archive_path, pack

        path.parent.mkdir(parents=True, exist_ok=True)
        problem = await asyncio.to_thread(pack, workspace.path, archive_path(path), environment=instance.environment)
        run.workspace_archive = problem or str(archive_path(path))
        if problem is not None:  # said in the trajectory too: a re-score from it must not guess the workspace
            await asyncio.to_thread(_note_not_kept, path, run, problem)
    return run


def _note_not_kept(path: Path, run: AgentRun, problem: str) -> None:
    run.trajectory.meta[NOT_KEPT] = problem
    _write_trajectory(path, run.trajectory)


def _write_trajectory(path: Path, trajectory: Trajectory) -> None:
    """A real CLI's trajectory, or one noted after the run, as the loop writes its own (indented JSON)."""
    import json

    from .trajectory import write_atomic

    write_atomic(path, json.dumps(trajectory.to_json(), ensure_ascii=False, indent=1) + "\n")


#: (backend name, image) -> (the backend it was made from, the backend): see :func:`instance_backend`.
_BACKENDS: dict[tuple[str, str | None], tuple[Any, Any]] = {}
_BACKENDS_LOCK = threading.Lock()


def _named(options: AgentOptions) -> str:
    image = f" (image {options.sandbox_image})" if options.sandbox_image else ""
    return f"the instance's sandbox backend {options.sandbox_backend}{image}"


def instance_backend(options: AgentOptions) -> Any:
    """The sandbox backend an instance's suite names (``sandbox: {backend, image}``), or None: the run's.

    The suite's choice is honoured whatever ``--ifbench-sandbox`` says (the flag chooses the backend of
    the instances that name none): the run's own backend object when it is the one named, else one made by
    name, per image through its ``with_image``; one per process, reused.  A backend that cannot run here
    is the instance's error with its one-line reason (:class:`AgentHarnessError`) -- never a fallback."""
    if options.sandbox_backend is None:
        return None
    from ..sandbox.backend import ImageBackend
    from ..sandbox.backends import current_backend, make_backend

    name, image = options.sandbox_backend, options.sandbox_image
    with _BACKENDS_LOCK:
        current = current_backend()
        base = current if current.name == name else None
        cached = _BACKENDS.get((name, image))
        if cached is not None and (base is None or cached[0] is base):
            backend = cached[1]
        else:
            try:
                base = base or make_backend(name)
            except KeyError as exc:
                raise AgentHarnessError(f"{_named(options)}: {exc.args[0]}") from None
            backend = base
            if image is not None:
                if not isinstance(base, ImageBackend):
                    raise AgentHarnessError(f"{_named(options)}: the {name} backend takes no image")
                backend = base.with_image(image)
        problem = backend.problem()
        if problem is not None:  # not kept: the next instance asks again
            _BACKENDS.pop((name, image), None)
            raise AgentHarnessError(f"{_named(options)}: {problem}")
        _BACKENDS[(name, image)] = (base, backend)
    return backend


_SEMAPHORES: dict[tuple[int, int], asyncio.Semaphore] = {}


def _slots(n: int) -> asyncio.Semaphore:
    """One semaphore per event loop and size: agent runs of a session share it."""
    key = (id(asyncio.get_running_loop()), n)
    if key not in _SEMAPHORES:
        _SEMAPHORES[key] = asyncio.Semaphore(max(1, n))
    return _SEMAPHORES[key]


async def _loop(instance: Instance, client: ModelClient, workspace: Workspace, options: AgentOptions,
                settings: AgentSettings, sample: int, path: Path | None) -> AgentRun:
    from ..models.client import ModelCallError
    from .loop import RunSoFar, run_loop
    from .profiles import ToolRegistry

    tools = settings.tools if settings.tools is not None else ToolRegistry()
    profile = tools.profile(options.tools)
    instructions, memory = _project_instructions(profile, workspace)
    system = "\n\n".join(part for part in (
        profile.system_prompt, instance.system,
        instructions if profile.instructions_as == "system" else "", memory) if part)
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.extend(dict(m) for m in instance.messages)
    run: AgentRun | None = None
    so_far = RunSoFar()
    for index, query in enumerate(user_queries(instance)):
        if index == 0 and instructions and profile.instructions_as == "reminder":
            query = f"<system-reminder>\n{instructions}\n</system-reminder>\n\n{query}"
        messages.append({"role": "user", "content": query})
        try:
            result = await run_loop(client=client, messages=messages, profile=profile, workspace=workspace,
                                    options=options, params=instance.generation, sample=sample,
                                    trajectory_path=path, progress=_progress(settings, instance),
                                    trajectory_id=instance.id, earlier=so_far,
                                    meta={"instance_id": instance.id, "benchmark": instance.benchmark})
        except ModelCallError as exc:  # the loop counts this turn's calls; the earlier turns were paid for too
            exc.paid = (*(run.completions if run is not None else ()), *exc.paid)
            raise
        messages, so_far = list(result.messages), result.run_so_far
        if run is None:
            run = AgentRun(trajectory=result.trajectory, workspace=workspace, runner=BUILT_IN_RUNNER,
                           options=options, stop_reason=result.stop_reason, trajectory_path=path)
        _add_turn(run, result)
        if result.stop_reason not in ("finished", "no_tool_call"):
            break  # a limit ended the run: later user turns are not sent
    if run is None:
        raise AgentHarnessError(f"instance {instance.id!r} has no user query")
    return run


def _add_turn(run: AgentRun, result: LoopResult) -> None:
    """Add one user turn's :class:`~.loop.LoopResult` to the run: the trajectory and the stop reason are the
    latest turn's (its trajectory holds the earlier turns), the rest adds up."""
    run.trajectory, run.stop_reason = result.trajectory, result.stop_reason
    run.steps += result.steps
    run.turn_texts.append(result.final_text)
    run.completions.extend(result.completions)
    run.model_seconds += result.model_seconds
    run.tool_seconds += result.tool_seconds


def _project_instructions(profile: Any, workspace: Workspace) -> tuple[str, str]:
    """What the scaffold would load by itself from the workspace: its instruction file (the first of
    ``profile.instruction_files`` that exists) and its memory files, each labelled with its path.
    Read without following links (``Workspace.read_bytes``), so a planted link cannot pull host files in."""

    def read(relative: str) -> str | None:
        try:
            return workspace.read_bytes(relative, max_bytes=64_000).decode("utf-8", "replace")
        except (OSError, ValueError):
            return None

    instructions = ""
    for name in profile.instruction_files:
        text = read(name)
        if text is not None:
            instructions = f"Contents of {name} (project instructions):\n\n{text.strip()}"
            break
    memory = []
    for folder in profile.memory_dirs:
        directory = workspace.path / folder
        if directory.is_dir() and not directory.is_symlink():
            for path in sorted(directory.glob("*.md"))[:20]:
                text = read(f"{folder}/{path.name}")
                if text is not None:
                    memory.append(f"Memory bank file {folder}/{path.name}:\n\n{text.strip()}")
    return instructions, "\n\n".join(memory)


def _progress(settings: AgentSettings, instance: Instance) -> Callable[[str], None] | None:
    report = settings.progress
    if report is None:
        return None
    return lambda line: report(f"{instance.id}: {line}")


async def _cli(instance: Instance, client: ModelClient, workspace: Workspace, options: AgentOptions,
               settings: AgentSettings, path: Path | None, sample: int = 0) -> AgentRun:
    from dataclasses import replace

    from .cli import cli_problem, run_cli

    problem = cli_problem(options.runner, clis=settings.clis)
    if problem:
        raise AgentHarnessError(problem)
    log = (path.with_suffix(".raw.jsonl") if path else workspace.tmp.parent / "proxy.raw.jsonl")
    result = await run_cli(options.runner, workspace=workspace, queries=user_queries(instance),
                           system=instance.system, model_name=client.model, client=client,
                           submit=settings.submit, options=options, log_path=log, clis=settings.clis,
                           session_id=session_key(instance, sample), version=options.runner_version,
                           replace_system=options.system_prompt == "replace",
                           progress=_progress(settings, instance))
    if result.harness_error:
        error = AgentHarnessError(f"{options.runner}: {result.harness_error}")
        error.paid = tuple(result.usage.completions) if result.usage else ()
        raise error
    # Keyed like the loop's trajectories, so `ifbench score --trajectories` finds each run again.
    trajectory = replace(result.trajectory, meta={**result.trajectory.meta, "instance_id": instance.id,
                                                  "benchmark": instance.benchmark, "sample": sample})
    result = replace(result, trajectory=trajectory)
    if path is not None:
        _write_trajectory(path, result.trajectory)
    usage = result.usage
    # Every proxied call counts, as the loop's calls do: steps, tokens and cost reach the results from here.
    return AgentRun(trajectory=result.trajectory, workspace=workspace, runner=options.runner, options=options,
                    stop_reason=result.stop_reason, turn_texts=list(result.turn_texts), trajectory_path=path,
                    steps=usage.steps if usage else len(result.trajectory.assistant_turns()),
                    completions=list(usage.completions) if usage else [],
                    model_seconds=usage.model_seconds if usage else 0.0,
                    tool_seconds=usage.tool_seconds if usage else 0.0, fault=result.agent_fault,
                    runner_version=trajectory.meta.get("runner_version"), version_named=options.runner_version)


def session_key(instance: Instance, sample: int = 0) -> str:
    """The id of a real CLI's run (its proxy records' ``session_id``): the instance's suite and id as in
    its pytest node id, and the sample index past the first. Distinct for every run of a session."""
    return f"{instance.suite.as_posix()}::{instance.id}{f'#sample{sample}' if sample else ''}"


def _recorded(instance: Instance, options: AgentOptions, settings: AgentSettings) -> AgentRun:
    recorded = settings.recorded or {}
    trajectory = recorded.get(instance.id) or recorded.get(session_key(instance))
    if trajectory is None:
        raise LookupError(f"no recorded trajectory for instance {instance.id!r}")
    ended = trajectory.meta.get("stop_reason")
    if ended in _ERRORED or trajectory.meta.get("harness_error"):  # the live run was an error, never scored
        reason = f"the recorded run of instance {instance.id!r} ended in an error ({ended}), as the live run did"
        raise (LookupError if ended == "model_error" else AgentHarnessError)(f"{reason}: it is not scored")
    workspace = _reopened(instance, trajectory, options, settings)
    lost = trajectory.meta.get(NOT_KEPT) if workspace is None else None
    steps = trajectory.meta.get("steps")
    return AgentRun(trajectory=trajectory, workspace=workspace,
                    runner=str(trajectory.meta.get("runner", "recorded")),
                    options=options, stop_reason=str(trajectory.meta.get("stop_reason", "recorded")),
                    steps=steps if isinstance(steps, int) else len(trajectory.assistant_turns()),
                    turn_texts=recorded_answers(trajectory), completions=_recorded_usage(trajectory),
                    workspace_lost=(f"the run's final workspace was {lost}: its workspace checks cannot be decided "
                                    "again" if isinstance(lost, str) else None))


#: A recorded run's ``stop_reason`` when it ended in an error (the loop's; a CLI's error is ``meta.harness_error``).
_ERRORED = frozenset({"model_error", "harness_error", "cancelled"})


def _recorded_usage(trajectory: Trajectory) -> list[Completion]:
    """What the recorded run paid, as one cached completion (the record's ``cached_*`` tokens and
    ``cached_cost``: paid then, not now), from its ``meta``; none when it records nothing."""
    from ..models.client import Completion

    meta = trajectory.meta

    def count(name: str) -> int:
        value = meta.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    cost = meta.get("cost")
    cost = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) and 0 <= cost < 1e12 else None
    if not (count("prompt_tokens") or count("completion_tokens") or cost):
        return []
    return [Completion(text="", raw_text="", prompt_tokens=count("prompt_tokens"),
                       completion_tokens=count("completion_tokens"), cost=cost, cached=True,
                       model=str(meta.get("model") or "recorded"))]


def require_workspace(run: AgentRun, registry: Any, checks: Sequence[CheckSpec]) -> None:
    """Raise :class:`AgentHarnessError` when ``checks`` read the final workspace of a re-scored run whose
    workspace was not kept: the live run decided them on it, and a re-score without it would fail them
    instead (an error, not a verdict)."""
    if run.workspace_lost and any(registry.get(check.verifier).reads_workspace for check in checks):
        raise AgentHarnessError(run.workspace_lost)


def _reopened(instance: Instance, trajectory: Trajectory, options: AgentOptions,
              settings: AgentSettings) -> Workspace | None:
    """The run's final workspace, when its changes were kept beside the trajectory, in a fresh sandbox
    workspace: its workspace checks are then decided as they were live. Without one they cannot be (they
    error)."""
    archive = trajectory.meta.get("workspace_archive")
    if not archive:
        return None
    from .workspace import SandboxUnavailable
    from .workspace_archive import reopen

    try:
        return reopen(Path(archive), environment=instance.environment, parent=settings.workspace_root,
                      keep=settings.keep_workspaces, backend=instance_backend(options))
    except (ValueError, OSError, SandboxUnavailable) as exc:
        raise AgentHarnessError(f"cannot re-open the run's final workspace {archive}: {exc}") from None


def recorded_answers(trajectory: Trajectory) -> list[str]:
    """The final text of each user turn of a recorded run, as the live run scored them: the loop's or a
    real CLI's ``meta.turn_answers`` (a finish tool's answer is in no message's text, and a multi-turn run
    has one per turn), else the last assistant message's text (a trajectory from elsewhere)."""
    answers = trajectory.meta.get("turn_answers")
    if isinstance(answers, list) and answers and all(isinstance(a, str) for a in answers):
        return list(answers)
    return [trajectory.final_text()]
