"""Result records: one JSON-ready mapping per instance (the results file's entries).

Schema (documented in docs/results-format.md): nodeid, suite, benchmark,
instance, model, judges, protocol, category, scaffold, tier, markers,
status (passed | failed | error), error, ended, turns[], checks[], tokens,
cost, durations, verifier_versions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._redact import redact
from ._version import __version__

if TYPE_CHECKING:
    from ._model_types import Instance
    from ._protocols import Episode
    from ._registry import Registry
    from ._verify import CheckOutcome

RESULTS_FORMAT = 1


def _base(nodeid: str, instance: Instance, model: str | None, judges: Sequence[str]) -> dict[str, Any]:
    return {
        "nodeid": nodeid, "suite": instance.suite.as_posix(), "benchmark": instance.benchmark,
        "instance": instance.id, "model": model, "judges": list(judges), "protocol": instance.protocol,
        "protocol_options": dict(instance.protocol_options),
        "category": instance.category, "scaffold": instance.scaffold, "tier": instance.tier,
        "markers": list(instance.markers), "metadata": dict(instance.metadata),
        "generation": instance.generation.to_json(),
    }


def error_record(nodeid: str, instance: Instance, model: str | None, judges: Sequence[str],
                 error: str, kind: str = "model") -> dict[str, Any]:
    return _base(nodeid, instance, model, judges) | {
        "status": "error", "error": error, "error_kind": kind, "turns": [], "checks": [],
        "tokens": {"prompt": 0, "completion": 0}, "cost": None, "durations": {},
    }


def episode_record(
    nodeid: str, instance: Instance, model: str | None, judges: Sequence[str], episodes: Sequence[Episode],
    outcomes: Sequence[tuple[int, CheckOutcome]], registry: Registry, verify_seconds: float,
) -> dict[str, Any]:
    """The record of a run instance; ``episodes`` has one entry per sample (sample 0 first)."""
    episode = episodes[0]
    completions = [c for e in episodes
                   for c in [t.completion for t in e.turns] + list(e.judge_completions) + list(e.step_completions)]
    costs = [c.cost for c in completions if c.cost is not None]
    checks = []
    for turn, outcome in outcomes:
        entry = outcome.check.to_json() | outcome.to_json() | {"turn_ran": turn}
        entry["version"] = registry.get(outcome.check.verifier).version
        checks.append(entry)
    # A not-applicable check (a condition that never arose) neither passes nor fails the instance.
    scored = [c for c in checks if c["scored"] and c.get("applicable", True)]
    return _base(nodeid, instance, model, judges) | {
        "status": "passed" if all(c["passed"] for c in scored) else "failed",
        "error": None, "ended": episode.ended,
        "turns": [
            {"index": t.index, "messages": t.messages, "response": t.completion.to_json()}
            for t in episode.turns
        ],
        "checks": checks,
        "judge_calls": [c.to_json() for c in episode.judge_completions],
        "tokens": {"prompt": sum(c.prompt_tokens for c in completions if not c.cached),
                   "completion": sum(c.completion_tokens for c in completions if not c.cached),
                   "cached_prompt": sum(c.prompt_tokens for c in completions if c.cached),
                   "cached_completion": sum(c.completion_tokens for c in completions if c.cached)},
        "cost": sum(costs) if costs else None,
        "durations": {"generation": round(max(e.duration for e in episodes), 4),
                      "verification": round(verify_seconds, 4)},
        "samples": len(episodes),
        "sample_responses": [[t.completion.text for t in e.turns] for e in episodes[1:]],
        "verifier_versions": {c["verifier"]: c["version"] for c in checks},
    } | ({"agent": episode.agent.to_json()} if episode.agent is not None else {})


def write_results(path: Path, records: Sequence[Mapping[str, Any]], meta: Mapping[str, Any]) -> None:
    document = {
        "format": RESULTS_FORMAT, "plugin_version": __version__, **meta,
        "instances": sorted(records, key=lambda r: r["nodeid"]),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    # Compact: the C encoder is ~5x faster than indent=; use `python -m json.tool` to read it.
    text = json.dumps(document, ensure_ascii=False, default=str, separators=(",", ":"))
    tmp.write_text(redact(text), encoding="utf-8")
    tmp.replace(path)
