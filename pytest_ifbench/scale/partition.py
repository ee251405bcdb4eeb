"""Which shard runs which instance: deterministic, disjoint, complete, balanced.

An instance is one pytest item, and it carries all its samples and every turn of its
dialogue, so neither ever straddles two shards. The assignment is a function of the
selection alone (node ids and their expected costs), never of the order pytest
collected them in or of the machine, so every shard (and every xdist worker inside
one) computes the same split.

Balance: instances are dealt in rounds of N, heaviest first; in each round the
heaviest goes to the shard with the least cost so far. Every shard gets one per
full round, so shard sizes differ by at most one, and the cost stays close.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardSpec:
    """Shard ``index`` (1-based) of ``count``; ``source`` says where it came from (an option, a variable)."""

    index: int
    count: int
    source: str = "--ifbench-shard"

    def __post_init__(self) -> None:
        if not 1 <= self.index <= self.count:
            raise ValueError(f"{self.source}: shard {self.index} of {self.count} is out of range (K must be 1..N)")

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"


def parse_spec(text: str, *, source: str = "--ifbench-shard") -> ShardSpec:
    """``"K/N"`` -> :class:`ShardSpec`; ValueError naming ``source`` otherwise."""
    match = _SPEC.match(text or "")
    if not match:
        raise ValueError(f"{source}: expected K/N (e.g. 2/3), got {text!r}")
    return ShardSpec(index=int(match.group(1)), count=int(match.group(2)), source=source)


def _tiebreak(nodeid: str) -> str:
    """A stable order that does not follow file order (so one suite's instances spread over shards)."""
    return hashlib.sha256(nodeid.encode()).hexdigest()


def assign(costs: Mapping[str, float], count: int) -> dict[str, int]:
    """Node id -> shard (1..count) for the whole selection ``costs`` (node id -> expected cost)."""
    if count < 1:
        raise ValueError("the number of shards must be >= 1")
    order = sorted(costs, key=lambda nodeid: (-float(costs[nodeid]), _tiebreak(nodeid), nodeid))
    load = [0.0] * count
    out: dict[str, int] = {}
    for start in range(0, len(order), count):
        free = sorted(range(count), key=lambda shard: (load[shard], shard))
        for nodeid, shard in zip(order[start:start + count], free):
            out[nodeid] = shard + 1
            load[shard] += float(costs[nodeid])
    return out


#: Expected cost of one agent episode relative to a single-turn call (many model calls and tool runs).
AGENT_WEIGHT = 20.0


def expected_cost(*, protocol: str, turns: int, samples: int) -> float:
    """Relative cost of one instance: samples x turns, an agent run weighing :data:`AGENT_WEIGHT` a turn."""
    per_turn = AGENT_WEIGHT if protocol == "agent" else 1.0
    return float(max(1, samples)) * float(max(1, turns)) * per_turn
