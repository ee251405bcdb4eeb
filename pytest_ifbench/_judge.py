"""LLM-judged checks: one call per instance per judge, structured JSON back.

Every judged check of an instance goes to each judge in a single call that
must answer ``{"checks": [{"id", "verdict": "pass"|"fail", "score", "reasoning"}]}``.
Pass/fail requirements use ``verdict``; scored requirements (a verifier with a
``judge_scale``) use the integer ``score`` and pass above their threshold.
Malformed JSON gets one repair turn; after that the instance errors. A check
the judge leaves out is not passed. With a panel, each check's verdict is
the strict majority of the judges; the mean and the spread are recorded.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._client import ModelClient
from ._model_types import CheckSpec, GenerationParams, Verdict
from ._registry import Registry
from ._text import first_json_object

JUDGE_PARAMS = GenerationParams(temperature=0.0, max_tokens=1024)


def response_format(ids: Sequence[str], scale: int | None = None) -> dict[str, Any]:
    """A JSON schema for the verdicts; constrained decoders (llama.cpp) follow it exactly."""
    item: dict[str, Any] = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "enum": list(ids)},
            "verdict": {"type": "string", "enum": ["pass", "fail"]},
            "reasoning": {"type": "string", "maxLength": 300},
        },
        "required": ["id", "verdict", "reasoning"],
    }
    if scale:
        item["properties"]["score"] = {"type": "integer", "minimum": 1, "maximum": scale}
        item["required"] = ["id", "verdict", "score", "reasoning"]
    schema = {
        "type": "object",
        "properties": {
            "checks": {
                "type": "array",
                "minItems": len(ids),
                "maxItems": len(ids),
                "items": item,
            },
        },
        "required": ["checks"],
    }
    return {"type": "json_schema", "json_schema": {"name": "checklist_verdicts", "schema": schema}}

_SYSTEM = (
    "You are a strict evaluator. You decide, for each requirement, whether the RESPONSE "
    "satisfies it. Judge only what is in the response. Reply with JSON only, exactly in the "
    'form {"checks": [{"id": "<requirement id>", "verdict": "pass" or "fail", '
    '"reasoning": "<one or two sentences>"}]}, with one entry per requirement id.'
)
_SYSTEM_SCORED = (
    " Some requirements ask for a score: for every requirement also give an integer \"score\" "
    "from 1 to {scale} for how well the response meets it (for pass/fail requirements, use "
    "{scale} for pass and 1 for fail)."
)


class JudgeError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgedCheck:
    judge: str
    passed: bool
    reasoning: str


def judge_prompt(task: str, response: str, items: Sequence[tuple[str, str]]) -> str:
    requirements = "\n".join(f"- id: {check_id}\n  requirement: {text}" for check_id, text in items)
    return f"TASK GIVEN TO THE MODEL:\n{task}\n\nRESPONSE:\n{response}\n\nREQUIREMENTS:\n{requirements}\n"


def parse_verdicts(text: str, ids: Sequence[str], scored: Mapping[str, float] | None = None,
                   ) -> dict[str, tuple[bool, str]]:
    """Parse the judge's JSON; raise ValueError with a reason when it is malformed.

    ``scored`` maps the ids of scored requirements to their pass threshold: those
    pass when their integer ``score`` exceeds it (the reasoning is prefixed with it).
    """
    scored = scored or {}
    blob = first_json_object(text)
    if blob is None:
        raise ValueError("no JSON object in the reply")
    data = json.loads(blob)
    checks = data.get("checks") if isinstance(data, dict) else None
    if not isinstance(checks, list):
        raise ValueError('the JSON has no "checks" list')
    out: dict[str, tuple[bool, str]] = {}
    for entry in checks:
        if not isinstance(entry, dict) or entry.get("id") not in ids:
            continue
        if entry["id"] in scored:
            score = entry.get("score")
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise ValueError(f"check {entry['id']!r} needs a numeric score, got {score!r}")
            reasoning = f"score {score:g} (passes above {scored[entry['id']]:g}): {entry.get('reasoning', '')}"
            out.setdefault(entry["id"], (score > scored[entry["id"]], reasoning))
            continue
        verdict = str(entry.get("verdict", "")).strip().lower()
        if verdict not in ("pass", "fail"):
            raise ValueError(f"check {entry.get('id')!r} has verdict {entry.get('verdict')!r}, not pass/fail")
        out.setdefault(entry["id"], (verdict == "pass", str(entry.get("reasoning", ""))))
    return out


async def _ask(client: ModelClient, prompt: str, ids: Sequence[str], scored: Mapping[str, float],
               scale: int | None) -> tuple[dict[str, tuple[bool, str]], Any]:
    system = _SYSTEM + (_SYSTEM_SCORED.format(scale=scale) if scale else "")
    messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    fmt = response_format(ids, scale)
    reply = await client.complete(messages, JUDGE_PARAMS, response_format=fmt)
    try:
        return parse_verdicts(reply.text, ids, scored), reply
    except (ValueError, json.JSONDecodeError) as exc:
        messages += [
            {"role": "assistant", "content": reply.text},
            {"role": "user", "content": f"Your reply was not valid: {exc}. Reply again with only the JSON object."},
        ]
        repaired = await client.complete(messages, JUDGE_PARAMS, response_format=fmt)
        try:
            return parse_verdicts(repaired.text, ids, scored), repaired
        except (ValueError, json.JSONDecodeError) as exc2:
            raise JudgeError(
                f"judge {client.model!r} returned malformed JSON twice ({exc2}); reply: {repaired.text[:300]!r}"
            ) from None


async def judge_checks(
    judges: Sequence[ModelClient], registry: Registry, task: str, response: str, checks: Sequence[CheckSpec],
) -> tuple[dict[str, Verdict], list[Any]]:
    """Verdicts by check id for every judged check, plus the judge completions."""
    if not checks:
        return {}, []
    if not judges:
        raise JudgeError("judged checks need a judge model (--judge-model)")
    items = []
    scored: dict[str, float] = {}
    scale = None
    for check in checks:
        verifier = registry.get(check.verifier)
        assert verifier.criterion is not None
        text = verifier.criterion(check.params)
        if check.kind == "penalty":
            text = f"The response avoids this mistake: {text}"
        if verifier.judge_scale:
            scale = max(scale or 0, verifier.judge_scale)
            scored[check.id] = float(check.params.get("threshold", 0.6 * verifier.judge_scale))
            text += f" (give a score from 1 to {verifier.judge_scale})"
        items.append((check.id, text))
    ids = [check_id for check_id, _ in items]
    prompt = judge_prompt(task, response, items)
    per_judge: list[dict[str, tuple[bool, str]]] = []
    completions = []
    for client in judges:
        verdicts, completion = await _ask(client, prompt, ids, scored, scale)
        per_judge.append(verdicts)
        completions.append(completion)
    out: dict[str, Verdict] = {}
    for check_id in ids:
        votes = []
        details = []
        for client, verdicts in zip(judges, per_judge):
            passed, reasoning = verdicts.get(check_id, (False, "the judge omitted this check"))
            votes.append(1.0 if passed else 0.0)
            details.append({"judge": client.model, "passed": passed, "reasoning": reasoning,
                            "omitted": check_id not in verdicts})
        mean = statistics.fmean(votes)
        spread = statistics.pstdev(votes) if len(votes) > 1 else 0.0
        evidence = "\n".join(f"[{d['judge']}] {'pass' if d['passed'] else 'fail'}: {d['reasoning']}" for d in details)
        out[check_id] = Verdict(passed=mean > 0.5, evidence=evidence,
                                details={"judges": details, "mean": mean, "spread": spread})
    return out, completions


def judged_subset(registry: Registry, checks: Sequence[CheckSpec]) -> list[CheckSpec]:
    return [c for c in checks if registry.get(c.verifier).kind == "judge"]


def task_text(messages: Sequence[Mapping[str, Any]]) -> str:
    return "\n\n".join(f"[{m['role']}] {m.get('content') or ''}" for m in messages if m.get("role") != "assistant")
