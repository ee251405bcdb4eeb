"""Allure reporting, the text side: what the reporter (``_allure``) attaches and writes.

Pure functions, no allure import and no redaction (the reporter redacts every
text before it attaches or writes it): chat messages, replies, multi-turn
trajectories, the judges' reasoning and a failed check's evidence as readable
attachment text; the prompt an errored instance would have sent; step titles;
and the session files ``environment.properties``, ``categories.json`` (from
:data:`CATEGORIES`) and ``allurerc.json``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._verify import CheckOutcome

#: Category tags that start a test's status message, and the Allure categories matching them.
CATEGORIES: list[dict[str, Any]] = [
    {"name": "Model/API error", "tag": "model error", "matchedStatuses": ["broken"],
     "description": "The model call failed for good (after retries): the instance was not scored."},
    {"name": "Judge error", "tag": "judge error", "matchedStatuses": ["broken", "failed"],
     "description": "A judge returned malformed verdicts twice, or produced no verdict for a check."},
    {"name": "Sandbox timeout", "tag": "sandbox timeout", "matchedStatuses": ["failed", "broken"],
     "description": "Model-written code hit the sandbox's wall-clock limit."},
    {"name": "Verifier error", "tag": "verifier error", "matchedStatuses": ["broken", "failed"],
     "description": "A verifier raised instead of returning a verdict."},
    {"name": "Check failed", "tag": "check failed", "matchedStatuses": ["failed"],
     "description": "The reply did not meet one or more checklist items."},
]

_TITLE_MAX = 140


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "\n".join(p.get("text", "") if isinstance(p, Mapping) else str(p) for p in content)
    return json.dumps(content, ensure_ascii=False, default=str)


def render_messages(messages: Iterable[Mapping[str, Any]]) -> str:
    """Chat messages as readable text: a ``── role ──`` rule, then the content."""
    parts = []
    for message in messages:
        text = _content_text(message.get("content"))
        if message.get("tool_calls"):
            text = (text + "\n" if text else "") + "[tool calls]\n" + json.dumps(
                message["tool_calls"], indent=1, ensure_ascii=False, default=str)
        name = f" ({message['name']})" if message.get("name") else ""
        parts.append(f"── {message.get('role', '?')}{name} ──\n{text}".rstrip())
    return "\n\n".join(parts)


def render_response(response: Mapping[str, Any]) -> str:
    """A reply: the verified text, tool calls, stripped reasoning, then one line of accounting."""
    text = response.get("text") or ""
    parts = [text if text else "(empty reply)"]
    if response.get("tool_calls"):
        parts.append("── tool calls ──\n" + json.dumps(response["tool_calls"], indent=1, ensure_ascii=False,
                                                    default=str))
    if response.get("reasoning"):
        parts.append("── reasoning (stripped before verification) ──\n" + str(response["reasoning"]))
    facts = [f"model: {response.get('model') or '?'}",
             f"tokens in/out: {response.get('prompt_tokens', 0)}/{response.get('completion_tokens', 0)}"]
    if response.get("latency"):
        facts.append(f"latency: {response['latency']:.2f} s")
    if response.get("finish_reason"):
        facts.append(f"finish: {response['finish_reason']}")
    if response.get("cached"):
        facts.append("cached")
    if (response.get("attempts") or 1) > 1:
        facts.append(f"attempts: {response['attempts']}")
    parts.append("── " + " · ".join(facts) + " ──")
    return "\n\n".join(parts)


def render_trajectory(turns: Sequence[Mapping[str, Any]]) -> str:
    """A multi-turn dialogue: the opening messages, then each turn's user message and reply."""
    if not turns:
        return ""
    first = list(turns[0].get("messages") or [])
    parts = [render_messages(first)]
    parts.append(f"══ turn {turns[0].get('index', 1)}: reply ══\n" + render_response(turns[0].get("response") or {}))
    for turn in turns[1:]:
        messages = list(turn.get("messages") or [])
        parts.append(f"══ turn {turn.get('index')} ══\n" + render_messages(messages[-1:]))
        parts.append(f"══ turn {turn.get('index')}: reply ══\n" + render_response(turn.get("response") or {}))
    return "\n\n".join(parts)


def render_judges(checks: Sequence[Mapping[str, Any]]) -> str:
    """Every judged check's verdict per judge, with the judges' reasoning."""
    blocks = []
    for check in checks:
        details = (check.get("verdict") or {}).get("details") or {}
        judges = details.get("judges")
        if not judges and not (check.get("error") and "judge" in str(check.get("error"))):
            continue
        votes = sum(1 for j in judges or [] if j.get("passed"))
        head = f"{check['id']}: {'pass' if check.get('passed') else 'FAIL'}"
        if judges:
            head += f" ({votes} of {len(judges)} judge(s))"
        lines = [head]
        if check.get("description"):
            lines.append(f"  criterion: {check['description']}")
        for judge in judges or []:
            said = judge.get("result") or {True: "pass", False: "fail", None: "not_applicable"}.get(judge.get("passed"))
            lines.append(f"  [{judge.get('judge')}] {said}: {judge.get('reasoning', '')}")
        lines += [f"  [{name}] left this check out; the others decided it" for name in details.get("omitted") or ()]
        if check.get("error"):
            lines.append(f"  error: {check['error']}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def render_evidence(outcome: CheckOutcome) -> str:
    """Everything known about one failed check: the failure message, then its details."""
    from .._collect import failure_message

    text = failure_message(outcome)
    verdict = outcome.verdict
    if verdict is not None and verdict.details:
        details = {k: v for k, v in verdict.details.items() if k != "judges"}  # judges: in the evidence
        if details:
            text += "\n  details:\n    " + json.dumps(details, indent=1, ensure_ascii=False, default=str
                                                    ).replace("\n", "\n    ")
    return text


def spec_prompt(instance: Any) -> str:
    """What an instance would send (for errored instances, which have no recorded turns)."""
    messages: list[Mapping[str, Any]] = []
    if instance.system:
        messages.append({"role": "system", "content": instance.system})
    messages.extend(instance.messages)
    if instance.prompt is not None:
        messages.append({"role": "user", "content": instance.prompt})
    text = render_messages(messages)
    for index, turn in enumerate(instance.turns, start=1):
        text += f"\n\n══ turn {index} ══\n" + render_messages([{"role": "user", "content": turn.user}])
    return text.strip()


def _properties_escape(text: str, key: bool = False) -> str:
    out = str(text).replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    if key:
        out = re.sub(r"([ :=#!])", r"\\\1", out)
    return out


def environment_properties(values: Mapping[str, str]) -> str:
    return "".join(f"{_properties_escape(k, key=True)}={_properties_escape(v)}\n" for k, v in values.items())


def categories() -> list[dict[str, Any]]:
    """Allure categories (``categories.json`` entries; Allure 3 takes the same list in its config).

    Allure 2 matches the whole message with Java regexes, Allure 3 searches it with
    JavaScript ones: ``[\\s\\S]*`` (any text, newlines included) reads the same to both.
    """
    return [
        {"name": c["name"], "description": c["description"], "matchedStatuses": c["matchedStatuses"],
         "messageRegex": r"\[" + c["tag"] + r"\][\s\S]*"}
        for c in CATEGORIES
    ]


def allurerc(model: str) -> dict[str, Any]:
    """An Allure 3 config (``allure generate --config``): report name and the categories."""
    return {"name": f"pytest-ifbench: {model}", "categories": categories()}


def step_title(name: str, outcomes: Sequence[CheckOutcome], grouped: bool) -> str:
    """A check's step title; ``grouped`` (a per-turn subtest): how many of its checks were met."""
    if grouped:
        failed = sum(1 for o in outcomes if not o.passed)
        return f"{name}: {len(outcomes) - failed} of {len(outcomes)} checks met"
    return check_title(outcomes[0])


def check_title(outcome: CheckOutcome) -> str:
    """A check's step title: ``id: description`` (``[kind points]`` first unless a plain check), cut short."""
    check = outcome.check
    title = f"{check.id}: {check.description}" if check.description else check.id
    if check.kind != "check":
        title = f"[{check.kind} {check.points:g}] {title}"
    return title if len(title) <= _TITLE_MAX else title[:_TITLE_MAX - 1] + "…"


def timing_steps(record: Mapping[str, Any], generation: float) -> list[tuple[str, float, list[tuple[str, str]]]]:
    """The split of an instance's real time, as (step name, seconds, parameters): its generation (or agent
    run, with the model's and the tools' share) and its verification, in that order."""
    agent = record.get("agent") or {}
    params = [("seconds", f"{generation:.3f}")]
    if agent:
        params += [("model seconds", f"{agent.get('model_seconds') or 0.0:.3f}"),
                   ("tool seconds", f"{agent.get('tool_seconds') or 0.0:.3f}"),
                   ("steps", str(agent.get("steps"))), ("stopped", str(agent.get("stop_reason")))]
    samples = record.get("samples") or 1
    if samples > 1:
        params.append(("samples", f"{samples} (concurrent: the longest)"))
    steps = [("agent run" if agent else "generation", generation, params)]
    verification = (record.get("durations") or {}).get("verification")
    if verification is not None:
        steps.append(("verification", float(verification), [("seconds", f"{float(verification):.3f}")]))
    return steps
