"""The ``agentif`` protocol: the core ``agent`` protocol does the work, then the rubric judge grades it.

The agent run is exactly ``PROTOCOLS["agent"]`` on the instance without its ``agentif.rubric`` checks (other
judged checks still go to the core trajectory judge). Then each judge gets one call (:func:`.judge.judge_task`)
with the question, the attachments (the environment's files), the final answer, the files the agent created or
changed, and the reference answer; the verdicts fill every turn's ``TurnRecord.judged``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from pytest_ifbench import PROTOCOLS, AgentHarnessError, Episode, Instance, JudgeError, Runtime

from . import materials, screenshot
from .judge import JudgeInput, judge_task
from .verifiers import RUBRIC


def _materials(instance: Instance, episode: Episode) -> JudgeInput:
    run = episode.agent
    produced, notes = [], []
    if run is not None and run.workspace is not None:
        produced, notes = materials.produced_materials(run.workspace, instance.environment)
    elif run is not None:
        notes.append("the agent's final workspace is not available (recorded trajectory): no files shown")
    if reason := screenshot.problem():
        notes.append(reason)
    return JudgeInput(
        question=instance.prompt or "\n\n".join(t.user for t in instance.turns),
        answer=episode.final.completion.text if episode.turns else "",
        attachments=materials.from_paths(materials.attachment_paths(instance)),
        produced=produced,
        reference=str(instance.metadata.get("reference_answer") or ""),
        reference_files=materials.from_paths(materials.reference_paths(instance)),
        notes=notes,
    )


async def agentif(instance: Instance, runtime: Runtime) -> Episode:
    rubric = [c for c in instance.all_checks() if c.verifier == RUBRIC]
    working = dataclasses.replace(
        instance, checks=tuple(c for c in instance.checks if c.verifier != RUBRIC),
        turns=tuple(dataclasses.replace(t, checks=tuple(c for c in t.checks if c.verifier != RUBRIC))
                    for t in instance.turns))
    episode = await PROTOCOLS["agent"](working, runtime)
    episode.instance = instance
    try:
        if rubric and episode.agent is not None and episode.agent.workspace_lost:  # the judge reads its files
            raise AgentHarnessError(episode.agent.workspace_lost)
        if rubric and episode.turns:
            data = await asyncio.to_thread(_materials, instance, episode)
            verdicts, completions = await judge_task(runtime.judges, data, rubric)
            for turn in episode.turns:
                turn.judged.update(verdicts)
            episode.judge_completions.extend(completions)
    except BaseException as exc:
        if not isinstance(exc, JudgeError):
            if episode.agent is not None:
                episode.agent.close()
            raise
        # The record keeps the run, what it paid for and its checks decided without the judge, on the final
        # workspace, which the item closes then.
        episode.judge_completions.extend(exc.completions)
        exc.episode = episode
        raise
    return episode


def register(protocols: Any) -> None:
    protocols["agentif"] = agentif
