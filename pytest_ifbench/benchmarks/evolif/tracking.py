"""EvolIF generator, the instruction and topic layers: the dialogue script.

A ``Tracker`` walks the topic layer (continue the current topic, open a new
one, or backtrack to one from the topic history) and keeps each topic's own
instruction state, changed by one add, modify or remove per turn (the
parameters of a modify come from the constraint layer in ``sampling``). Each
step yields a ``ScriptTurn``: the move, the operations and the constraints in
force after them, which ``realise`` turns into a user message.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .catalog import PAPER_GROUPS
from .sampling import conflict, evolve_args, sample_args


@dataclass(frozen=True, kw_only=True)
class Operation:
    """One instruction-layer change: ``kind`` add | modify | remove of constraint ``name``."""

    kind: str
    name: str
    before: Any = None
    after: Any = None

    def label(self) -> str:
        return {"add": "+", "modify": "~", "remove": "-"}[self.kind] + self.name


@dataclass(kw_only=True)
class TopicState:
    topic: Mapping[str, Any]
    #: The instruction state I_T: official constraint id -> args, at most one per group.
    constraints: dict[str, Any] = field(default_factory=dict)
    turns: int = 0
    questions_used: list[str] = field(default_factory=list)
    follow_ups_used: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class ScriptTurn:
    """A turn of the dialogue script: the structured intention U_t before realisation."""

    index: int
    move: str  # new | continue | backtrack
    state: TopicState
    previous_topic: Mapping[str, Any] | None
    operations: list[Operation]
    #: The constraints in force after this turn's operations (the checks of the turn).
    constraints: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class TrackerConfig:
    groups: tuple[str, ...] = PAPER_GROUPS
    #: Turns spent on a topic before a switch may happen, and the chance of switching after that.
    min_stay: int = 2
    switch_probability: float = 0.3
    backtrack_probability: float = 0.55
    #: Weights of add / modify / remove on a topic that has constraints.
    operation_weights: tuple[float, float, float] = (0.45, 0.35, 0.2)
    max_constraints: int = 7
    initial_constraints: tuple[int, int] = (1, 2)


class Tracker:
    """Three-layer tracking: topics, per-topic instruction states, constraint parameters."""

    def __init__(self, rng: random.Random, topics: Sequence[Mapping[str, Any]],
                 config: TrackerConfig = TrackerConfig()) -> None:
        self.rng = rng
        self.pool = list(topics)
        self.config = config
        self.history: list[TopicState] = []
        self.active: TopicState | None = None
        self.turn = 0

    # -- topic layer
    def _move(self) -> str:
        if self.active is None:
            return "new"
        if self.active.turns < self.config.min_stay or self.rng.random() >= self.config.switch_probability:
            return "continue"
        others = [s for s in self.history if s is not self.active]
        if others and self.rng.random() < self.config.backtrack_probability:
            return "backtrack"
        return "new" if len(self.history) < len(self.pool) else "backtrack"

    def step(self) -> ScriptTurn:
        self.turn += 1
        previous = self.active
        move = self._move()
        if move == "new":
            used = {s.topic["id"] for s in self.history}
            topic = self.rng.choice([t for t in self.pool if t["id"] not in used])
            state = TopicState(topic=topic)
            self.history.append(state)
            operations = self._initial(state)
        else:
            if move == "backtrack":
                state = self.rng.choice([s for s in self.history if s is not previous])
            else:
                assert previous is not None
                state = previous
            operations = [self._evolve(state)]
        state.turns += 1
        self.active = state
        return ScriptTurn(index=self.turn, move=move, state=state,
                          previous_topic=previous.topic if previous is not None else None,
                          operations=[op for op in operations if op is not None],
                          constraints=dict(state.constraints))

    # -- instruction layer
    def _initial(self, state: TopicState) -> list[Operation | None]:
        low, high = self.config.initial_constraints
        return [self._add(state) for _ in range(self.rng.randint(low, high))]

    def _evolve(self, state: TopicState) -> Operation | None:
        count = len(state.constraints)
        free = [g for g in self.config.groups if g not in state.constraints]
        if count == 0:
            kinds = ["add"]
        elif count == 1:
            kinds = ["add", "modify"] if free else ["modify"]
        elif count >= self.config.max_constraints or not free:
            kinds = ["modify", "remove"]
        else:
            kinds = ["add", "modify", "remove"]
        weights = {"add": self.config.operation_weights[0], "modify": self.config.operation_weights[1],
                   "remove": self.config.operation_weights[2]}
        order = self.rng.choices(kinds, weights=[weights[k] for k in kinds], k=1) + kinds
        for kind in dict.fromkeys(order):
            op = {"add": self._add, "modify": self._modify, "remove": self._remove}[kind](state)
            if op is not None:
                return op
        return None

    def _add(self, state: TopicState) -> Operation | None:
        free = [g for g in self.config.groups if g not in state.constraints]
        self.rng.shuffle(free)
        for name in free:
            for _ in range(5):
                args = sample_args(name, self.rng, state.topic, state.constraints)
                if conflict({**state.constraints, name: args}) is None:
                    state.constraints[name] = args
                    return Operation(kind="add", name=name, after=args)
        return None

    def _modify(self, state: TopicState) -> Operation | None:
        names = list(state.constraints)
        self.rng.shuffle(names)
        for name in names:
            before = state.constraints[name]
            others = {k: v for k, v in state.constraints.items() if k != name}
            for _ in range(8):
                after = evolve_args(name, before, self.rng, state.topic, others)
                if after != before and conflict({**others, name: after}) is None:
                    state.constraints[name] = after
                    return Operation(kind="modify", name=name, before=before, after=after)
        return None

    def _remove(self, state: TopicState) -> Operation | None:
        if not state.constraints:
            return None
        name = self.rng.choice(list(state.constraints))
        return Operation(kind="remove", name=name, before=state.constraints.pop(name))


def build_script(rng: random.Random, topics: Sequence[Mapping[str, Any]], turns: int,
                 config: TrackerConfig = TrackerConfig()) -> list[ScriptTurn]:
    tracker = Tracker(rng, topics, config)
    return [tracker.step() for _ in range(turns)]
