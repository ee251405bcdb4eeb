"""The feedback-correction rerun (section 4.3.2): protocol ``octobench_reflect``.

``--octobench-reflect`` switches OctoBench's agent instances to this protocol. It runs the core
``agent`` protocol once and evaluates every check of that run here (judged verdicts from the run's
judge call, deterministic checks on its trajectory and workspace). A *partially failed* instance --
at least one applicable scored check passed and at least one failed (errored checks count as failed)
-- is run once more, from a fresh workspace, with its failed checks rendered as structured feedback
appended to its first user query; the rerun is what the item then checks and reports. Instances
that passed everything or nothing are not rerun (the paper collects partial failures only).

The original run's per-check results, the feedback and whether a rerun happened are kept in the
final trajectory's ``meta["octobench_reflection"]`` (so they reach the results file under
``agent.trajectory.meta``); ``metrics.reflection_table`` turns them into Table 5 (original vs
reflection ISR/CSR and their delta). Recorded trajectories are scored as they are: nothing is rerun.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import Any

from pytest_ifbench import PROTOCOLS, CheckOutcome, Episode, Instance, Registry, Runtime, VerifyContext, evaluate

from .taxonomy import SOURCES

META_KEY = "octobench_reflection"
_EVIDENCE = 300


def _evaluate(instance: Instance, episode: Episode, runtime: Runtime) -> list[CheckOutcome]:
    final = episode.final
    run = episode.agent
    ctx = VerifyContext(registry=runtime.registry, instance=instance, judged=final.judged,
                        messages=final.messages + [{"role": "assistant", "content": final.completion.text}],
                        sandbox=runtime.sandbox, trajectory=run.trajectory if run else None,
                        workspace=run.workspace if run else None)
    return evaluate(instance.all_checks(), final.completion.text, ctx)


def _requirement(registry: Registry, outcome: CheckOutcome) -> str:
    check = outcome.check
    verifier = registry.get(check.verifier)
    if verifier.criterion is not None:
        return verifier.criterion(check.params)
    return check.description or f"{verifier.description} ({check.verifier}, {dict(check.params)})"


def feedback(registry: Registry, failed: Sequence[CheckOutcome]) -> str:
    """The structured feedback for the failed checks (one numbered item each)."""
    lines = ["[Feedback on your previous attempt at this task] An evaluation of that attempt found that it did "
             "not meet the requirements below. Treat each one as an explicit constraint this time:"]
    for number, outcome in enumerate(failed, start=1):
        check = outcome.check
        source = SOURCES.get(check.category or "", check.category or "task")
        kind = check.metadata.get("check_type", "compliance")
        why = outcome.error or (outcome.verdict.evidence if outcome.verdict else "")
        why = " ".join(str(why).split())
        why = why if len(why) <= _EVIDENCE else why[:_EVIDENCE - 1] + "…"
        lines.append(f"{number}. [{source} / {kind}] {_requirement(registry, outcome)}"
                     + (f"\n   What went wrong: {why}" if why else ""))
    return "\n".join(lines)


def with_feedback(instance: Instance, text: str) -> Instance:
    """The instance with ``text`` appended to its first user query, run as a plain agent instance."""
    if instance.turns:
        first = dataclasses.replace(instance.turns[0], user=f"{instance.turns[0].user}\n\n{text}")
        changes: dict[str, Any] = {"turns": (first, *instance.turns[1:])}
    else:
        changes = {"prompt": f"{instance.prompt or ''}\n\n{text}".lstrip()}
    return dataclasses.replace(instance, id=f"{instance.id}--reflection", protocol="agent", **changes)


def _checks_json(outcomes: Sequence[CheckOutcome]) -> list[dict[str, Any]]:
    return [outcome.check.to_json() | outcome.to_json() for outcome in outcomes]


def _annotate(episode: Episode, info: dict[str, Any]) -> None:
    run = episode.agent
    if run is not None:
        run.trajectory = dataclasses.replace(run.trajectory, meta={**dict(run.trajectory.meta), META_KEY: info})


def partial_failure(outcomes: Sequence[CheckOutcome]) -> tuple[list[CheckOutcome], bool]:
    """(the failed applicable scored checks, whether some other check passed)."""
    counted = [o for o in outcomes if o.check.scored and o.check.kind == "check" and o.applicable]
    return [o for o in counted if not o.passed], any(o.passed for o in counted)


async def reflect(instance: Instance, runtime: Runtime) -> Episode:
    """Run, evaluate, and rerun a partially failed instance once with feedback (see the module doc)."""
    agent = PROTOCOLS["agent"]
    first = await agent(dataclasses.replace(instance, protocol="agent"), runtime)
    if runtime.agent is not None and runtime.agent.recorded is not None:
        _annotate(first, {"rerun": False, "reason": "recorded trajectory"})
        return first
    try:
        outcomes = await asyncio.to_thread(_evaluate, instance, first, runtime)
    except BaseException:
        if first.agent is not None:
            first.agent.close()
        raise
    failed, some_passed = partial_failure(outcomes)
    original = {"original_checks": _checks_json(outcomes), "original_stop_reason": first.ended,
                "original_steps": first.agent.steps if first.agent else 0}
    if not failed or not some_passed:
        _annotate(first, {"rerun": False, "reason": "no check failed" if not failed else "no check passed",
                          **original})
        return first
    keep = bool(runtime.agent is not None and runtime.agent.keep_workspaces)
    if first.agent is not None:
        first.agent.close(keep=keep)
    text = feedback(runtime.registry, failed)
    second = await agent(with_feedback(instance, text), runtime)
    second.instance = instance
    second.judge_completions = list(first.judge_completions) + list(second.judge_completions)
    second.step_completions = list(first.step_completions) + list(second.step_completions)
    second.duration += first.duration
    _annotate(second, {"rerun": True, "feedback": text, "failed": [o.check.id for o in failed], **original})
    return second


def register(protocols: Any) -> None:
    reflect.runs_agents = True  # type: ignore[attr-defined] - the core checks the sandbox at start-up
    protocols["octobench_reflect"] = reflect
