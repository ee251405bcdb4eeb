"""The built-in tool-calling loop (``runner: loop``): a model, a tool profile, a sandboxed workspace.

:func:`run_loop` sends the conversation with the profile's tools, executes every tool call the
model makes inside the sandbox (:mod:`.tools`), answers each with a ``tool`` message (OpenAI form,
``tool_call_id``) and calls the model again, until one of the stop rules below ends it. It
handles one user turn: a multi-turn instance calls it once per user query, continuing
:attr:`LoopResult.messages` with the next ``user`` message and passing :attr:`LoopResult.run_so_far` as
``earlier``, so the limits below and the trajectory's ``meta`` count the whole run, not the turn (as a
real CLI's meter does: ``max_cost`` per turn would let a ten-turn instance spend ten times the limit).

Stop rules (:attr:`LoopResult.stop_reason`), limits checked before each model call:

* ``finished``: the model called the finish tool (``finish`` / ``attempt_completion``); its
  answer is the final text.
* ``no_tool_call``: the model answered without any tool call -- that answer is the final text.
  This is the "no tool call = finished" rule of scaffolds without a finish tool (Claude Code's
  profile has none); a reply cut off by ``max_tokens`` of one call ends the run the same way.
* ``max_steps`` / ``max_tokens`` (completion tokens) / ``max_seconds`` / ``max_cost`` (when the
  provider reports cost; 0 = no limit): a limit of :class:`~.options.AgentOptions` was reached.
  ``max_seconds`` is a wall-clock deadline that also holds while a model call or a tool command is
  in flight (the call is cancelled; a command's timeout is cut to the time left, but never below
  :data:`~.tools.DEADLINE_GRACE`) and between the calls of one reply: once it has passed, the reply's
  remaining calls are answered "not executed".
  One call's ``max_tokens`` is capped by what is left of the run's budget.
* ``repeated_action``: the same call (tool name and canonical JSON arguments) ``max_repeats``
  times in a row; that last call is answered "not executed", not run.
* ``context_window``: the provider refused a call as longer than the model's context window after
  the run's own steps (its tool outputs and replies filled it): the run ends and is scored as it
  stands. On the run's first call the task itself does not fit the model: ``model_error``.
* ``model_error``: a :class:`~pytest_ifbench.models.client.ModelCallError` (retries exhausted); the
  trajectory is written, then the error is re-raised, so the item errors (a harness failure,
  not a model failure). Any other exception (no sandbox, a crashing tool) is recorded as
  ``harness_error`` (``cancelled`` when cancelled) and re-raised the same way.

Robustness: arguments that are not a JSON object, an unknown tool or arguments that do not fit
the tool's schema are answered with an error tool message and the run goes on -- so are arguments
no tool can take (``NaN``, numbers out of range, nesting deeper than
:data:`~.trajectory.MAX_ARGUMENT_DEPTH`) and commands the sandbox cannot start (a NUL character, a
command line over :data:`~.tools.MAX_COMMAND_BYTES`): what the agent sent is its own failure, never the
harness's error. Every call of a reply is answered, in order, even those after a finish or a stop
(as "not executed"). Tool output longer than ``max_output_chars`` keeps its head and tail around
``… [N characters elided] …``. In the history sent back to the model, arguments that are not valid
(strict) JSON are replaced by ``{}`` (some providers reject them); the trajectory keeps the text as
written.

Caching: every model call goes through ``client.complete(..., tools=...)``, cached by content.
Re-running a finished run replays it from the cache with no model call as long as every tool
output is the same as the first time; a command with nondeterministic output (``date``,
random numbers, timings) changes the next request, so the calls after it are made anew.
Each call also asks the provider to cache its prompt where the provider wants to be asked
(``prompt_cache=True``: Anthropic's ``cache_control`` marks; OpenAI caches by itself), as the next
step repeats it: what the run pays, not what it asks.

The trajectory (:class:`~.trajectory.Trajectory`; ``meta``: runner ``loop``, profile, model,
stop_reason, limits, and for the whole run -- every user turn so far -- steps, prompt_tokens, completion_tokens, cost,
model/tool seconds and ``turn_answers``, each finished turn's final text, which ``ifbench score
--trajectories`` scores) is rewritten atomically after every step when ``trajectory_path`` is given.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .._redact import redact
from .._text import map_strings, utf8_safe_value
from .._types import GenerationParams
from ..models.client import Completion, ModelCallError, ModelClient
from .accounting import CONTEXT_WINDOW
from .options import BUILT_IN_RUNNER, AgentOptions
from .profiles import Profile
from .progress import BOARD
from .tools import ToolContext, ToolResult, command_line, truncate_middle
from .trajectory import ArgumentsError, Trajectory, TrajectoryBuilder, loads_arguments
from .workspace import Workspace

STOP_REASONS = ("finished", "no_tool_call", "max_steps", "max_tokens", "max_seconds", "max_cost",
                "repeated_action", CONTEXT_WINDOW, "model_error")


@dataclass(frozen=True, slots=True, kw_only=True)
class StepTiming:
    """Where one step's time went (seconds): the model call, the tools, and the whole step."""

    model: float
    tools: float
    total: float

    @property
    def overhead(self) -> float:
        """The loop's own time: validation, bookkeeping, trajectory writes."""
        return max(self.total - self.model - self.tools, 0.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSoFar:
    """What the user turns of a run did up to now: a later turn's trajectory ``meta`` counts them too."""

    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    #: The final text of each turn.
    turn_answers: tuple[str, ...] = ()
    #: When the run's first turn started (``time.monotonic()``; None before it): ``max_seconds`` counts from it.
    started: float | None = None

    def to_meta(self) -> dict[str, Any]:
        return {"steps": self.steps, "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "cost": self.cost,
                "model_seconds": round(self.model_seconds, 4), "tool_seconds": round(self.tool_seconds, 4),
                "turn_answers": list(self.turn_answers)}


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopResult:
    """One :func:`run_loop` call: what happened and the conversation to continue."""

    trajectory: Trajectory
    #: The finish tool's answer, the text of a reply without tool calls, else the last reply's text.
    final_text: str
    #: One of :data:`STOP_REASONS`.
    stop_reason: str
    #: Model calls made.
    steps: int
    completions: tuple[Completion, ...]
    #: Time spent executing tools (sandboxed commands included) and in model calls (cache hits included).
    tool_seconds: float
    model_seconds: float
    #: The conversation to continue with the next user turn (opening messages included).
    messages: tuple[Mapping[str, Any], ...] = ()
    timings: tuple[StepTiming, ...] = ()
    #: The run up to the end of this turn, earlier turns included (``earlier`` of the next turn's call).
    run_so_far: RunSoFar = RunSoFar()


class HistoryMessage(dict):
    """A message dict sent to the model that also remembers what the trajectory needs and the wire
    format has no place for (a tool result's ``is_error``, an assistant's stripped reasoning and
    raw arguments), so a later turn's trajectory records earlier turns faithfully."""

    def __init__(self, data: Mapping[str, Any], **record: Any) -> None:
        super().__init__(data)
        self.record = record


def _canonical(raw: Any) -> str:
    if not isinstance(raw, str):
        return str(raw)
    try:
        return json.dumps(loads_arguments(raw), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return raw


def _replay(builder: TrajectoryBuilder, messages: Sequence[Mapping[str, Any]]) -> None:
    """Record the opening messages (a previous turn's conversation included) in the trajectory."""
    for message in messages:
        record = getattr(message, "record", {})
        role, content = message.get("role"), message.get("content")
        content = content if content is not None else ""
        if role == "system":
            builder.system(content)
        elif role == "user":
            builder.user(content)
        elif role == "assistant":
            builder.assistant(content if isinstance(content, str) else "", reasoning=record.get("reasoning", ""),
                              tool_calls=record.get("tool_calls") or message.get("tool_calls") or ())
        elif role == "tool":
            try:
                builder.tool(str(message.get("tool_call_id")), content, is_error=bool(record.get("is_error")))
            except ValueError:  # a result for a call the history does not show: keep it as text
                builder.user(f"[tool result] {content}" if isinstance(content, str) else content)


class _Run:
    """The mutable state of one :func:`run_loop` call."""

    def __init__(self, options: AgentOptions, earlier: RunSoFar) -> None:
        self.options = options
        self.earlier = earlier
        self.start = time.monotonic() if earlier.started is None else earlier.started
        self.steps = self.tokens = self.prompt_tokens = 0
        self.cost = self.model_seconds = self.tool_seconds = 0.0
        self.completions: list[Completion] = []
        self.timings: list[StepTiming] = []
        self.stop_reason = ""
        self.final_text = ""
        self.last_call: tuple[str, str] | None = None
        self.repeats = 0

    def limit_hit(self) -> str | None:
        """The limit the run (every turn so far, this one included) has reached, if any."""
        o, e = self.options, self.earlier
        if e.steps + self.steps >= o.max_steps:
            return "max_steps"
        if self.tokens_left() <= 0:
            return "max_tokens"
        if time.monotonic() - self.start >= o.max_seconds:
            return "max_seconds"
        if o.max_cost and e.cost + self.cost >= o.max_cost:
            return "max_cost"
        return None

    def tokens_left(self) -> int:
        """The completion tokens left of the run's ``max_tokens``."""
        return self.options.max_tokens - self.earlier.completion_tokens - self.tokens

    def so_far(self, *, answered: bool) -> RunSoFar:
        """The whole run so far: the earlier turns and this one, whose final text counts once ``answered``."""
        e = self.earlier
        return RunSoFar(steps=e.steps + self.steps, prompt_tokens=e.prompt_tokens + self.prompt_tokens,
                        completion_tokens=e.completion_tokens + self.tokens,
                        cost=e.cost + self.cost, model_seconds=e.model_seconds + self.model_seconds,
                        tool_seconds=e.tool_seconds + self.tool_seconds, started=self.start,
                        turn_answers=(*e.turn_answers, self.final_text) if answered else e.turn_answers)

    def repeated(self, name: str, raw: Any) -> bool:
        """Count ``name(raw)`` against the previous call; True when it makes ``max_repeats`` in a row."""
        key = (name, _canonical(raw))
        self.repeats = self.repeats + 1 if key == self.last_call else 1
        self.last_call = key
        return self.repeats >= self.options.max_repeats


def _calls(completion: Completion, step: int) -> list[dict[str, Any]]:
    """The reply's tool calls in OpenAI form, each with an id and string arguments (as written)."""
    out = []
    for k, call in enumerate(completion.tool_calls):
        function = call.get("function") or {}
        raw = function.get("arguments")
        raw = raw if isinstance(raw, str) else json.dumps(raw if raw is not None else {}, ensure_ascii=False)
        out.append({"id": call.get("id") or f"call_{step}_{k}", "type": "function",
                    "function": {"name": str(function.get("name") or ""), "arguments": raw}})
    return out


def _wire_call(call: Mapping[str, Any]) -> dict[str, Any]:
    try:
        valid = isinstance(loads_arguments(call["function"]["arguments"] or "{}"), dict)
    except ValueError:
        valid = False
    return call if valid else {**call, "function": {**call["function"], "arguments": "{}"}}


def _without_secrets(completion: Completion) -> Completion:
    """The reply with our secrets redacted before anything acts on it. A model (or provider) that echoes
    the API key would otherwise have the loop write it into the sandbox (``write_file``, ``bash``) and the
    trajectory file; the proxy does the same for a real CLI's replies."""
    calls = tuple(map_strings(list(completion.tool_calls), redact))
    fields = {"text": redact(completion.text), "raw_text": redact(completion.raw_text),
              "reasoning": redact(completion.reasoning)}
    if calls == completion.tool_calls and all(getattr(completion, k) == v for k, v in fields.items()):
        return completion
    return replace(completion, tool_calls=calls, **fields)


async def _execute(call: Mapping[str, Any], profile: Profile, ctx: ToolContext, run: _Run) -> tuple[ToolResult, str]:
    """Run one call (or explain why not); returns the result and a progress summary."""
    name, raw = call["function"]["name"], call["function"]["arguments"]
    if run.repeated(name, raw):
        run.stop_reason = "repeated_action"
        return ToolResult(content=f"Not executed: the same call was made {run.repeats} times in a row; "
                          "the run is stopped.", is_error=True), f"{name} (repeated)"
    tool = profile.get(name)
    if tool is None:
        known = ", ".join(t.name for t in profile.tools)
        return ToolResult(content=f"Error: there is no tool named {name!r}. Available tools: {known}.",
                          is_error=True), f"{name or '?'} (unknown tool)"
    try:
        arguments = utf8_safe_value(loads_arguments(raw)) if raw.strip() else {}  # "\\ud83d": a lone surrogate
    except ArgumentsError as exc:
        return ToolResult(content=f"Error: invalid arguments for {name}: {exc}.", is_error=True), \
            f"{name} (invalid arguments)"
    except ValueError as exc:
        return ToolResult(content=f"Error: the arguments of {name} are not valid JSON ({exc}); send a JSON object.",
                          is_error=True), f"{name} (bad JSON)"
    problem = tool.check(arguments)
    if problem is not None:
        return ToolResult(content=f"Error: invalid arguments for {name}: {problem}.", is_error=True), \
            f"{name} (invalid arguments)"
    began = time.perf_counter()
    try:
        result = await tool.run(arguments, ctx)
    finally:
        run.tool_seconds += time.perf_counter() - began
    return result, command_line(tool, arguments)


async def run_loop(*, client: ModelClient, messages: Sequence[Mapping[str, Any]], profile: Profile,
                   workspace: Workspace, options: AgentOptions, params: GenerationParams, sample: int = 0,
                   trajectory_path: Path | None = None, progress: Callable[[str], None] | None = None,
                   trajectory_id: str | None = None, meta: Mapping[str, Any] | None = None,
                   earlier: RunSoFar = RunSoFar()) -> LoopResult:
    """Run the loop for one user turn (module docstring); ``messages`` are the opening messages;
    ``meta`` is added to the trajectory's (e.g. the instance id); ``earlier``: the run's earlier turns
    (the previous call's :attr:`LoopResult.run_so_far`), which the limits count too."""
    specs = profile.specs()
    history: list[Mapping[str, Any]] = list(messages)
    run = _Run(options, earlier)
    ctx = ToolContext(workspace=workspace, options=options, deadline=run.start + options.max_seconds)
    meta = {"runner": BUILT_IN_RUNNER, "profile": profile.name, "model": client.model, "sample": sample,
            "stop_reason": None, "limits": options.to_json(), **run.so_far(answered=False).to_meta(), **(meta or {})}
    builder = TrajectoryBuilder(id=trajectory_id or (trajectory_path.stem if trajectory_path else "loop"),
                                meta=meta, tools=specs, path=trajectory_path, autosave=False)
    _replay(builder, history)
    BOARD.begin()
    answered = False
    try:
        while not run.stop_reason:
            reason = run.limit_hit()
            if reason:
                run.stop_reason = reason
                break
            await _step(client, history, params, sample, specs, profile, ctx, run, builder, progress)
        answered = True
    except ModelCallError as exc:
        if not (exc.context_window and (run.completions or earlier.steps)):  # a call of the run was answered
            run.stop_reason = "model_error"
            exc.paid = (*run.completions, *exc.paid)  # the steps before it were paid for: the record counts them
            raise
        run.stop_reason = CONTEXT_WINDOW  # the run's own steps filled the window: scored as it stands
    except asyncio.CancelledError:
        run.stop_reason = "cancelled"
        raise
    except BaseException:
        run.stop_reason = run.stop_reason or "harness_error"
        raise
    finally:
        BOARD.end()
        so_far = run.so_far(answered=answered)
        builder.meta.update(stop_reason=run.stop_reason, **so_far.to_meta())
        if trajectory_path is not None:
            builder.write(trajectory_path)
    return LoopResult(trajectory=builder.build(), final_text=run.final_text, stop_reason=run.stop_reason,
                      steps=run.steps, completions=tuple(run.completions), tool_seconds=run.tool_seconds,
                      model_seconds=run.model_seconds, messages=tuple(history), timings=tuple(run.timings),
                      run_so_far=so_far)


async def _step(client: ModelClient, history: list[Mapping[str, Any]], params: GenerationParams, sample: int,
                specs: list[dict[str, Any]], profile: Profile, ctx: ToolContext, run: _Run,
                builder: TrajectoryBuilder, progress: Callable[[str], None] | None) -> None:
    """One model call and the tool calls it makes."""
    began = time.perf_counter()
    tools_before = run.tool_seconds
    run.steps += 1
    builder.meta["steps"] = run.earlier.steps + run.steps
    budget = run.tokens_left()
    call_params = replace(params, max_tokens=min(params.max_tokens or budget, budget))
    left = run.start + run.options.max_seconds - time.monotonic()
    try:  # the run's deadline holds while the call is in flight, as it does for a tool command
        completion = await asyncio.wait_for(client.complete(history, call_params, sample=sample, tools=specs,
                                                            prompt_cache=True),
                                            timeout=max(left, 0.001))
    except TimeoutError:
        run.stop_reason = "max_seconds"
        return
    finally:
        model_time = time.perf_counter() - began
        run.model_seconds += model_time
    completion = _without_secrets(completion)
    run.completions.append(completion)
    BOARD.step(tokens=completion.prompt_tokens + completion.completion_tokens, cost=completion.cost,
               cached=completion.cached)
    run.tokens += completion.completion_tokens
    run.prompt_tokens += completion.prompt_tokens
    run.cost += completion.cost or 0.0
    calls = _calls(completion, run.steps)
    run.final_text = completion.text
    builder.assistant(completion.text, reasoning=completion.reasoning, tool_calls=calls)
    history.append(HistoryMessage(
        {"role": "assistant", "content": completion.text if completion.text or not calls else None,
         **({"tool_calls": [_wire_call(c) for c in calls]} if calls else {})},
        reasoning=completion.reasoning, tool_calls=calls))
    summaries = []
    if not calls:
        run.stop_reason = "no_tool_call"
        summaries.append("answer")
    deadline = run.start + run.options.max_seconds
    for call in calls:
        if not run.stop_reason and time.monotonic() >= deadline:  # the deadline holds within a reply too
            run.stop_reason = "max_seconds"
        if run.stop_reason:
            result = ToolResult(content=f"Not executed: the run already stopped ({run.stop_reason}).", is_error=True)
        else:
            result, summary = await _execute(call, profile, ctx, run)
            summaries.append(summary)
            if result.finish is not None:
                run.stop_reason, run.final_text = "finished", result.finish
        content = truncate_middle(result.content, run.options.max_output_chars)
        builder.tool(call["id"], content, is_error=result.is_error)
        history.append(HistoryMessage({"role": "tool", "tool_call_id": call["id"], "content": content},
                                      is_error=result.is_error))
    builder.checkpoint()  # one write per step: the reply and its tool results
    if progress is not None:
        so_far = run.so_far(answered=False)
        progress(f"step {so_far.steps}/{run.options.max_steps}: {'; '.join(summaries)}; "
                 f"{so_far.completion_tokens:,} tokens, {f'${so_far.cost:.4f}' if so_far.cost else '$0'}")
    run.timings.append(StepTiming(model=model_time, tools=run.tool_seconds - tools_before,
                                  total=time.perf_counter() - began))
