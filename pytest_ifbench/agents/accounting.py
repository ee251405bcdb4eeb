"""Counting and capping a real agent CLI's model calls, as the built-in loop counts and caps its own.

The recording proxy (:mod:`.proxy`) asks a :class:`Meter` before every model call
(:meth:`Meter.admit`) and tells it every answer (:meth:`Meter.record`). The meter holds the run's
limits (:class:`~.options.AgentOptions`: ``max_steps``, ``max_tokens`` -- completion tokens --,
``max_cost`` where the provider reports cost, ``max_seconds`` as a wall-clock deadline) and stops the
run at the first one reached, with the loop's stop reason (:data:`LIMIT_REASONS`). A step is one
proxied model call: sub-agents' and side calls count like the main conversation's. Admission reserves
the step under a lock, so concurrent requests (sub-agents) never make more than ``max_steps`` calls.
A call that fails still counts as a step, as in the loop.

Where the time went, as seen from the proxy: ``model_seconds`` is the time at least one model call
was in flight (concurrent calls overlap, so it is a union of intervals, never more than the run's wall
clock); ``tool_seconds`` the time between a reply that asked for tools and the CLI's next request,
when no call was in flight -- the agent's tool calls plus the CLI's own handling of them.

Progress: after each call :meth:`Meter.record` sends one line (:func:`step_line`) to ``progress`` and
counts the step on :data:`~.progress.BOARD` (the live status line).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..models.client import Completion
from .options import AgentOptions
from .progress import BOARD

__all__ = ["CONTEXT_WINDOW", "LIMIT_REASONS", "Meter", "Usage", "step_line", "tool_names"]

#: The stop reasons a limit gives, the loop's names (:data:`~.loop.STOP_REASONS`).
LIMIT_REASONS = ("max_steps", "max_tokens", "max_seconds", "max_cost")
#: The stop of a run whose conversation outgrew the model's context window after its own steps: the
#: provider refused the next call. The agent filled the window, so the run is scored as it stands, like a
#: limit's (inspect_ai's ``model_length``); on the run's first call the task itself does not fit the model,
#: and that stays the model's error.
CONTEXT_WINDOW = "context_window"


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """What one run's model calls added up to (a snapshot of a :class:`Meter`)."""

    steps: int
    completions: tuple[Completion, ...]
    prompt_tokens: int
    completion_tokens: int
    #: USD where the provider reported cost (0.0 otherwise).
    cost: float
    model_seconds: float
    tool_seconds: float
    #: The limit that stopped the run (one of :data:`LIMIT_REASONS`, or :data:`CONTEXT_WINDOW`), or None.
    stop_reason: str | None
    #: The limit's one-line explanation, as the CLI was told it.
    stop_message: str | None

    def to_meta(self) -> dict[str, Any]:
        """The trajectory's ``meta`` entries, named as the loop names them."""
        return {"steps": self.steps, "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "cost": self.cost, "model_seconds": round(self.model_seconds, 4),
                "tool_seconds": round(self.tool_seconds, 4)}


def _cost_text(cost: float) -> str:
    return f"${cost:.4f}" if cost else "$0"


def step_line(step: int, max_steps: int, tools: Sequence[str], tokens: int, cost: float, *,
              who: str = "") -> str:
    """One progress line: ``step 3/30 (claude_code): 2 tool calls (Read, Bash); 1,234 tokens, $0.0012``."""
    calls = (f"{len(tools)} tool call{'s' if len(tools) != 1 else ''} ({', '.join(tools)})" if tools
             else "answer, no tool call")
    label = f" ({who})" if who else ""
    return f"step {step}/{max_steps}{label}: {calls}; {tokens:,} tokens, {_cost_text(cost)}"


class Meter:
    """The model calls of one run: counted, capped by ``options``' limits, timed (module doc).

    ``start`` is the ``time.monotonic()`` the run's ``max_seconds`` counts from (default: now);
    ``progress`` gets one line per call, labelled ``who`` (the CLI's name)."""

    def __init__(self, options: AgentOptions, *, start: float | None = None,
                 progress: Callable[[str], None] | None = None, who: str = "") -> None:
        self.options = options
        self.start = time.monotonic() if start is None else start
        self.deadline = self.start + options.max_seconds
        self._progress = progress
        self._who = who
        self._lock = threading.Lock()
        self._steps = self._prompt = self._completion = 0
        self._cost = self._model = self._tools = 0.0
        self._completions: list[Completion] = []
        #: Answered calls whose reply asked for tools: the agent's commands have run in its sandbox.
        self.tool_replies = 0
        self._in_flight = 0
        self._busy_since = 0.0
        self._tools_since: float | None = None
        self._stop: str | None = None
        self._message: str | None = None

    # -- limits ------------------------------------------------------------------------------------
    def _limit(self) -> str | None:
        o = self.options
        if self._steps >= o.max_steps:
            return "max_steps"
        if self._completion >= o.max_tokens:
            return "max_tokens"
        if time.monotonic() >= self.deadline:
            return "max_seconds"
        if o.max_cost and self._cost >= o.max_cost:
            return "max_cost"
        return None

    def _explain(self, reason: str) -> str:
        o = self.options
        spent = {"max_steps": f"{self._steps} model calls made, the limit is {o.max_steps}",
                 "max_tokens": f"{self._completion} completion tokens used, the limit is {o.max_tokens}",
                 "max_seconds": f"the run's {o.max_seconds:g} s are over",
                 "max_cost": f"${self._cost:.4f} spent, the limit is ${o.max_cost:g}",
                 CONTEXT_WINDOW: "the conversation no longer fits the model's context window"}[reason]
        return f"ifbench: the run is stopped ({reason}: {spent}); no more model calls are answered"

    def stop(self, reason: str) -> str:
        """Stop the run for ``reason`` (the first stop wins); returns the stop's message."""
        with self._lock:
            if self._stop is None:
                self._stop, self._message = reason, self._explain(reason)
            return str(self._message)

    def admit(self) -> str | None:
        """Reserve one step for a model call, or return why not (the stop's message; the run is stopped)."""
        with self._lock:
            reason = self._stop or self._limit()
            if reason is not None:
                if self._stop is None:
                    self._stop, self._message = reason, self._explain(reason)
                return str(self._message)
            self._steps += 1
            now = time.monotonic()
            if self._in_flight == 0:
                self._busy_since = now
                if self._tools_since is not None:
                    self._tools += now - self._tools_since
                    self._tools_since = None
            self._in_flight += 1
            return None

    def tokens_left(self) -> int:
        """Completion tokens the run may still use (at least 1)."""
        with self._lock:
            return max(self.options.max_tokens - self._completion, 1)

    def seconds_left(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)

    # -- accounting --------------------------------------------------------------------------------
    def record(self, completion: Completion | None, *, tools: Sequence[str] = ()) -> None:
        """The end of an admitted call: its completion (None when it failed) and the tools it asked for."""
        with self._lock:
            now = time.monotonic()
            self._in_flight -= 1
            if self._in_flight == 0:
                self._model += now - self._busy_since
                self._tools_since = now if tools else None
            if completion is None:
                return
            self._completions.append(completion)
            self.tool_replies += bool(tools)
            BOARD.step(tokens=completion.prompt_tokens + completion.completion_tokens, cost=completion.cost,
                       cached=completion.cached)
            self._prompt += completion.prompt_tokens
            self._completion += completion.completion_tokens
            self._cost += completion.cost or 0.0
            line = step_line(len(self._completions), self.options.max_steps, tools, self._completion, self._cost,
                             who=self._who)
        if self._progress is not None:
            self._progress(line)

    @property
    def stop_reason(self) -> str | None:
        with self._lock:
            return self._stop

    def usage(self) -> Usage:
        with self._lock:
            model = self._model + (time.monotonic() - self._busy_since if self._in_flight else 0.0)
            return Usage(steps=self._steps, completions=tuple(self._completions), prompt_tokens=self._prompt,
                         completion_tokens=self._completion, cost=self._cost, model_seconds=model,
                         tool_seconds=self._tools, stop_reason=self._stop, stop_message=self._message)


def tool_names(message: Mapping[str, Any]) -> list[str]:
    """The tools a Messages-format reply asks for, in order."""
    return [str(block.get("name") or "?") for block in message.get("content") or ()
            if isinstance(block, Mapping) and block.get("type") == "tool_use"]
