"""Protocols: how an instance talks to the model.

A protocol is an async function ``run(instance, runtime) -> Episode`` that
makes every model and judge call the instance needs. It runs in the
background generator, so it may not touch pytest. Protocols whose next turn
depends on a verdict (e.g. a patience budget) evaluate those checks
themselves and store the outcomes on the turn; every other check is
evaluated by the item in the foreground.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._registry import Registry
from ._types import CheckSpec, Instance, Verdict
from ._verify import CheckOutcome, VerifyContext, evaluate
from .judges.checklist import JudgeError, judge_checks, judged_subset, task_text
from .models.background import start_wait_clock
from .models.client import Completion, ModelCallError, ModelClient


@dataclass(kw_only=True)
class Runtime:
    """What protocols may use. ``responses`` switches to scoring pre-recorded replies."""

    registry: Registry
    model: ModelClient | None
    judges: Sequence[ModelClient] = ()
    responses: Mapping[str, Sequence[str]] | None = None
    sandbox: Mapping[str, Any] = field(default_factory=dict)
    #: Returns the settings of agent runs (``agents.session.AgentSettings``), built on first use so a run
    #: without agents never imports the agent modules; None outside pytest (the defaults apply).
    agent_settings: Callable[[], Any] | None = None

    @property
    def agent(self) -> Any:
        """The settings of agent runs, or None."""
        return self.agent_settings() if self.agent_settings is not None else None


@dataclass(kw_only=True)
class TurnRecord:
    index: int
    messages: list[dict[str, Any]]
    completion: Completion
    judged: dict[str, Verdict] = field(default_factory=dict)
    #: Outcomes computed by the protocol itself (verdict-dependent protocols).
    outcomes: list[CheckOutcome] | None = None


@dataclass(kw_only=True)
class Episode:
    instance: Instance
    turns: list[TurnRecord]
    judge_completions: list[Completion] = field(default_factory=list)
    ended: str = "completed"
    duration: float = 0.0
    #: For agent runs: the run (``agents.session.AgentRun``: trajectory, workspace, stop reason).
    agent: Any = None
    #: For agent runs: every model call of the run (the turns carry only each turn's final answer).
    step_completions: list[Completion] = field(default_factory=list)

    @property
    def final(self) -> TurnRecord:
        return self.turns[-1]

    def paid(self) -> list[Completion]:
        """Every model and judge call of the episode: what a failure after it leaves paid for. (An agent
        run's turns are its final answers, not calls: its calls are the steps.)"""
        turns = [t.completion for t in self.turns] if self.agent is None else []
        return turns + self.judge_completions + self.step_completions


Protocol = Callable[[Instance, Runtime], Awaitable[Episode]]


def charge(exc: BaseException, calls: Sequence[Completion], judge_calls: Sequence[Completion] = ()) -> None:
    """Add ``calls``, paid for before ``exc`` ended the instance, to its ``paid``, and the judge calls among
    them to its ``paid_judges``: the errored record counts the first in ``tokens`` and ``cost`` and lists
    the second in ``judge_calls`` (reports/records.py), as a finished instance's record does."""
    exc.paid = (*calls, *getattr(exc, "paid", ()))  # type: ignore[attr-defined]
    exc.paid_judges = (*judge_calls, *getattr(exc, "paid_judges", ()))  # type: ignore[attr-defined]

#: Index of the sample being generated (``generation.samples``); part of the cache key.
SAMPLE: contextvars.ContextVar[int] = contextvars.ContextVar("ifbench_sample", default=0)


async def run_samples(protocol: Protocol, instance: Instance, runtime: Runtime) -> list[Episode]:
    """Run ``protocol`` once per sample, concurrently; sample 0 first in the list."""

    async def one(index: int) -> Episode:
        SAMPLE.set(index)  # each gathered task has its own context copy
        return await protocol(instance, runtime)

    done = await asyncio.gather(*(one(i) for i in range(instance.generation.samples)), return_exceptions=True)
    failed = [result for result in done if isinstance(result, BaseException)]
    if failed:  # the instance errors with the first failure: the other samples' workspaces go now
        keep = bool(runtime.agent is not None and runtime.agent.keep_workspaces)
        for result in done:
            if isinstance(result, Episode) and result.agent is not None:
                result.agent.close(keep=keep)
        first = failed[0]
        for result in done:  # the other samples were paid for too: the errored record counts them
            if isinstance(result, Episode):
                charge(first, result.paid(), result.judge_completions)
            elif result is not first:
                charge(first, getattr(result, "paid", ()), getattr(result, "paid_judges", ()))
        raise first
    return list(done)


class ProtocolRegistry(dict[str, Protocol]):
    def register(self, name: str) -> Callable[[Protocol], Protocol]:
        def add(func: Protocol) -> Protocol:
            self[name] = func
            return func

        return add


def opening_messages(instance: Instance) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if instance.system:
        messages.append({"role": "system", "content": instance.system})
    messages.extend(dict(m) for m in instance.messages)
    if instance.prompt is not None:
        messages.append({"role": "user", "content": instance.prompt})
    return messages


class _Replies:
    """Hands out model replies: from the model, or from pre-recorded responses."""

    def __init__(self, instance: Instance, runtime: Runtime) -> None:
        self.instance = instance
        self.runtime = runtime
        self.recorded = None
        if runtime.responses is not None:
            self.recorded = list(runtime.responses.get(instance.id, ()))
        elif instance.response is not None:
            self.recorded = [instance.response]

    async def next(self, messages: Sequence[Mapping[str, Any]], turn: int, *, goes_on: bool = False) -> Completion:
        """The reply to ``messages`` (turn ``turn``); ``goes_on``: a later turn repeats this prompt, so the
        provider is asked to cache it (``ModelClient.complete(prompt_cache=True)``)."""
        if self.recorded is not None:
            if turn > len(self.recorded):
                raise LookupError(f"no recorded response for instance {self.instance.id!r} turn {turn}")
            turns = max(1, len(self.instance.turns))
            if turn == 1 and len(self.recorded) > turns:  # recorded for another version of the instance
                raise LookupError(f"instance {self.instance.id!r} has {turns} turn(s), but its recorded responses "
                                  f"hold {len(self.recorded)} replies: recorded for another version of it?")
            if SAMPLE.get():  # one reply scored as k samples would pass (or fail) k times over
                raise LookupError(f"instance {self.instance.id!r} asks for {self.instance.generation.samples} samples "
                                  "(generation.samples); recorded responses hold one reply per turn")
            from ._text import strip_reasoning

            raw = self.recorded[turn - 1]
            text, reasoning = strip_reasoning(raw)
            return Completion(text=text, raw_text=raw, reasoning=reasoning, cached=True, model="recorded")
        if self.runtime.model is None:
            raise RuntimeError("no model configured")
        return await self.runtime.model.complete(
            messages, self.instance.generation, tools=self.instance.tools, sample=SAMPLE.get(), prompt_cache=goes_on,
        )


async def _judge(runtime: Runtime, episode: Episode, record: TurnRecord, checks: Sequence[CheckSpec]) -> None:
    judged = judged_subset(runtime.registry, checks)
    if not judged:
        return
    try:
        verdicts, completions = await judge_checks(
            runtime.judges, runtime.registry, task_text(record.messages), record.completion.text, judged,
        )
    except JudgeError as exc:  # the record keeps what the run produced and paid for (reports/records.py)
        episode.judge_completions.extend(exc.completions)
        exc.episode = episode
        raise
    record.judged.update(verdicts)
    episode.judge_completions.extend(completions)


PROTOCOLS = ProtocolRegistry()


@PROTOCOLS.register("single_turn")
async def single_turn(instance: Instance, runtime: Runtime) -> Episode:
    """One request, every check on its reply."""
    start, waited = time.perf_counter(), start_wait_clock()
    replies = _Replies(instance, runtime)
    messages = opening_messages(instance)
    record = TurnRecord(index=1, messages=messages, completion=await replies.next(messages, 1))
    episode = Episode(instance=instance, turns=[record])
    await _judge(runtime, episode, record, instance.checks)
    episode.duration = time.perf_counter() - start - waited[0]
    return episode


@PROTOCOLS.register("multi_turn")
async def multi_turn(instance: Instance, runtime: Runtime) -> Episode:
    """Scripted user turns; the model sees the full history.

    ``protocol_options.patience`` (int) turns on a patience budget: it resets
    after a fully satisfied turn and drops by one after a failed one; the
    dialogue ends when it reaches 0. Turn checks are then evaluated here,
    since the next turn depends on them.
    """
    start, waited = time.perf_counter(), start_wait_clock()
    replies = _Replies(instance, runtime)
    patience_budget = instance.protocol_options.get("patience")
    patience = patience_budget
    messages = opening_messages(instance)
    episode = Episode(instance=instance, turns=[])
    for index, turn in enumerate(instance.turns, start=1):
        messages = messages + [{"role": "user", "content": turn.user}]
        is_last = index == len(instance.turns)
        try:
            completion = await replies.next(messages, index, goes_on=not is_last)
        except ModelCallError as exc:  # the earlier turns (and their judges) were paid for
            charge(exc, episode.paid(), episode.judge_completions)
            raise
        record = TurnRecord(index=index, messages=messages, completion=completion)
        episode.turns.append(record)
        messages = messages + [{"role": "assistant", "content": record.completion.text}]
        pinned = [c for c in instance.checks if c.turn == index or (c.turn is None and is_last)]
        await _judge(runtime, episode, record, list(turn.checks) + pinned)
        if patience_budget is not None:
            ctx = VerifyContext(registry=runtime.registry, instance=instance, messages=messages,
                                judged=record.judged, sandbox=runtime.sandbox)
            record.outcomes = await asyncio.to_thread(evaluate, turn.checks, record.completion.text, ctx)
            satisfied = all(o.passed for o in record.outcomes if o.check.scored)
            patience = patience_budget if satisfied else patience - 1
            if patience <= 0:
                episode.ended = "patience_exhausted"
                if not is_last:  # unpinned instance checks apply to the last turn that ran
                    await _judge(runtime, episode, record, [c for c in instance.checks if c.turn is None])
                break
    episode.duration = time.perf_counter() - start - waited[0]
    return episode


def runs_agents(protocol: Protocol) -> bool:
    """Whether ``protocol`` runs agents (needs the sandbox, maybe an agent CLI): the ``agent``
    protocol and protocols built on it, which say so with ``protocol.runs_agents = True``."""
    return bool(getattr(protocol, "runs_agents", False))


@PROTOCOLS.register("agent")
async def agent(instance: Instance, runtime: Runtime) -> Episode:
    """An agent works in a sandboxed copy of the instance's environment over many steps
    (``agents.session``); each user turn's final answer is a turn, the whole trajectory and
    the final workspace are what trajectory checks see, and judged checks read the transcript."""
    from .agents.session import AgentSettings, require_workspace, run_agent

    start, waited = time.perf_counter(), start_wait_clock()
    settings = runtime.agent if runtime.agent is not None else AgentSettings()
    run = await run_agent(instance, client=runtime.model, settings=settings, sample=SAMPLE.get())
    try:
        require_workspace(run, runtime.registry, instance.all_checks())
        turns = []
        history = opening_messages(instance) if not instance.turns else []
        for index, text in enumerate(run.turn_texts, start=1):
            if instance.turns:
                history = history + [{"role": "user", "content": instance.turns[index - 1].user}]
            completion = Completion(text=text, raw_text=text, model=runtime.model.model if runtime.model else "",
                                    cached=all(c.cached for c in run.completions))
            turns.append(TurnRecord(index=index, messages=list(history), completion=completion))
            history = history + [{"role": "assistant", "content": text}]
        episode = Episode(instance=instance, turns=turns, ended=run.stop_reason, agent=run,
                          step_completions=list(run.completions))
        judged = judged_subset(runtime.registry, instance.all_checks())
        if getattr(run, "fault", None):  # the agent took its own run down: a failure, never an error
            turns = turns or [TurnRecord(index=1, messages=opening_messages(instance),
                                         completion=Completion(text="", raw_text=""))]
            episode.turns = turns
            verdict = Verdict(passed=False, evidence=f"the agent ended its own run: {run.fault}")
            for turn in turns:
                turn.outcomes = [CheckOutcome(check=check, verdict=verdict) for check in instance.all_checks()]
        elif judged and turns:
            from .agents.transcript import render_transcript
            from .judges.trajectory import judge_trajectory

            verdicts, completions = await judge_trajectory(
                runtime.judges, runtime.registry, task_text(turns[-1].messages), render_transcript(run.trajectory),
                judged,
            )
            for turn in turns:  # the transcript is judged once; turn checks read the same verdicts
                turn.judged.update(verdicts)
            episode.judge_completions.extend(completions)
    except BaseException as exc:
        if not isinstance(exc, JudgeError):
            run.close()
            raise
        # The record keeps the run and what it paid for (reports/records.py); the item decides the checks
        # that need no judge on the final workspace, then closes it (``_collect``).
        episode.duration = time.perf_counter() - start - waited[0]
        episode.judge_completions.extend(exc.completions)
        exc.episode = episode
        raise
    episode.duration = time.perf_counter() - start - waited[0]
    return episode


agent.runs_agents = True  # type: ignore[attr-defined]
