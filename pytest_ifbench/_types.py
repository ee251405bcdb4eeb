"""The data model shared by every concern: suites, instances, checks, verdicts.

All records are frozen, slotted, keyword-only dataclasses with explicit
``to_json`` so results files and xdist reports never depend on pickling.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
CheckKind = Literal["check", "bonus", "penalty"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What a verifier says about one response for one check.

    ``applicable`` is False when the check is conditional and its condition did not arise
    (e.g. "after editing a file, run the tests" in a run that edited nothing): such a check
    is neither met nor unmet, and metrics leave it out of their denominators. ``passed`` is
    then meaningless and read as False.
    """

    passed: bool
    evidence: str = ""
    #: Free-form details (judge reasoning, ruff violations...) kept in results.
    details: Mapping[str, Any] = field(default_factory=dict)
    applicable: bool = True

    def to_json(self) -> dict[str, Any]:
        out = {"passed": self.passed, "evidence": self.evidence, "details": dict(self.details)}
        if not self.applicable:  # omitted when True: results of applicable checks keep their old shape
            out["applicable"] = False
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeOmission:
    """Stands in for a judged check's verdict when the judge produced none (e.g. it left the check
    out of its answer); evaluation turns it into an error outcome carrying ``reason``."""

    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class GenerationParams:
    """Everything sent to the model that changes its output (part of the cache key)."""

    temperature: float | None = 0.0
    max_tokens: int | None = 1024
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    samples: int = 1
    #: ``none|minimal|low|medium|high`` for reasoning models; None leaves the provider's default.
    reasoning_effort: str | None = None

    def litellm_kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in ("temperature", "max_tokens", "top_p", "seed", "reasoning_effort"):
            value = getattr(self, name)
            if value is not None:
                # 0 and 0.0 are the same request: normalise so the cache key agrees.
                out[name] = float(value) if name in ("temperature", "top_p") else value
        if self.stop:
            out["stop"] = list(self.stop)
        return out

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"stop": list(self.stop)}


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckSpec:
    """One checklist item of an instance, as written in the suite."""

    id: str
    verifier: str
    params: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    #: ``check`` counts towards ISR/CSR; ``bonus``/``penalty`` carry points (rubrics).
    kind: CheckKind = "check"
    points: float = 1.0
    #: 1-based turn the check applies to in multi-turn protocols; None = the last turn.
    turn: int | None = None
    #: Unscored checks are reported (e.g. a lower-privileged instruction that a higher one overrides) but never scored.
    scored: bool = True
    category: str | None = None
    #: Free data for benchmark metrics (e.g. an instruction's position), kept in results.
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "verifier": self.verifier, "params": dict(self.params),
            "description": self.description, "kind": self.kind, "points": self.points,
            "turn": self.turn, "scored": self.scored, "category": self.category,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """A scripted user turn of a multi-turn instance and the checks on its reply."""

    user: str
    checks: tuple[CheckSpec, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Instance:
    """One benchmark instance: collected as one pytest item."""

    id: str
    benchmark: str
    suite: Path
    protocol: str = "single_turn"
    protocol_options: Mapping[str, Any] = field(default_factory=dict)
    system: str | None = None
    prompt: str | None = None
    messages: tuple[Mapping[str, Any], ...] = ()
    turns: tuple[Turn, ...] = ()
    tools: tuple[Mapping[str, Any], ...] = ()
    checks: tuple[CheckSpec, ...] = ()
    generation: GenerationParams = GenerationParams()
    category: str | None = None
    scaffold: str | None = None
    tier: int | None = None
    markers: tuple[str, ...] = ()
    #: A pre-recorded reply: the instance is scored without calling a model.
    response: str | None = None
    #: The directory an agent run's workspace is copied from (``protocol: agent``).
    environment: Path | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    def all_checks(self) -> tuple[CheckSpec, ...]:
        """Instance-level checks followed by every turn's checks, in order."""
        out = list(self.checks)
        for turn in self.turns:
            out.extend(turn.checks)
        return tuple(out)

    @property
    def needs_model(self) -> bool:
        return self.response is None


@dataclass(frozen=True, slots=True, kw_only=True)
class Suite:
    path: Path
    benchmark: str
    description: str
    instances: tuple[Instance, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
