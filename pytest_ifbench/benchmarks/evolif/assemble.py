"""EvolIF generator, suite assembly: seed data, dialogues as instances, suite YAML.

``plan_dialogue`` picks a dialogue's persona and script (retrying until the
paper's triviality filter passes), ``build_instance`` realises its turns into
a ``multi_turn`` instance, ``build_suite`` gathers them under
``suite_defaults`` (shared with the importer of official files) and
``dump_suite`` writes the YAML text. The same seed gives the same file, byte
for byte.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .catalog import PAPER_GROUPS
from .realise import LLMSynthesizer, TemplateRealiser
from .tracking import ScriptTurn, TrackerConfig, build_script

#: The system prompt of generated and imported suites: it states the task's rules (cf. the paper's appendix F).
SYSTEM_PROMPT = (
    "You are a helpful assistant in a long conversation with one user. The user may discuss several topics, "
    "switch between them and come back to earlier ones. Each topic has its own requirements for your replies "
    "(format, length, wording, tone and so on). A requirement the user sets for a topic stays in force for "
    "every later reply on that topic until the user changes or removes it; requirements of other topics do "
    "not apply. When the user returns to an earlier topic, that topic's requirements apply again. Follow every "
    "requirement in force exactly, in every reply."
)

# --------------------------------------------------------------------------- seed data


def load_data(name: str) -> list[dict[str, Any]]:
    import yaml

    path = Path(__file__).resolve().parent / "data" / name
    with path.open(encoding="utf-8") as handle:
        return yaml.load(handle, Loader=yaml.CSafeLoader)


# --------------------------------------------------------------------------- dialogues and suites


@dataclass(kw_only=True)
class SynthConfig:
    seed: int = 0
    dialogues: int = 30
    start: int = 1
    turns: int = 50
    patience: int = 3
    max_tokens: int | None = 1024
    id_prefix: str = "evolif"
    markers: tuple[str, ...] = ()
    system: bool = True
    groups: tuple[str, ...] = PAPER_GROUPS
    min_average_constraints: float = 2.0
    description: str = ""


def _check(name: str, args: Any) -> dict[str, Any]:
    return {"id": name, "verifier": f"evolif.{name}", "params": args}


def dialogue_rng(seed: int, index: int, attempt: int = 0) -> random.Random:
    return random.Random(f"evolif:{seed}:{index}:{attempt}")


def plan_dialogue(config: SynthConfig, index: int, topics: Sequence[Mapping[str, Any]],
                  personas: Sequence[Mapping[str, Any]]) -> tuple[random.Random, Mapping[str, Any], list[ScriptTurn]]:
    """The script of dialogue ``index``: the first attempt whose first 20 turns average
    ``min_average_constraints`` or more (the paper's triviality filter)."""
    tracker_config = TrackerConfig(groups=config.groups)
    for attempt in range(50):
        rng = dialogue_rng(config.seed, index, attempt)
        persona = rng.choice(list(personas))
        script = build_script(rng, topics, config.turns, tracker_config)
        head = script[:20]
        if sum(len(t.constraints) for t in head) / len(head) >= config.min_average_constraints:
            return rng, persona, script
    return rng, persona, script


def build_instance(config: SynthConfig, index: int, topics: Sequence[Mapping[str, Any]],
                   personas: Sequence[Mapping[str, Any]], synthesizer: LLMSynthesizer | None = None,
                   runner: Any = None) -> dict[str, Any]:
    rng, persona, script = plan_dialogue(config, index, topics, personas)
    realiser = TemplateRealiser(rng, persona)
    turns, flagged = [], []
    for turn in script:
        text = realiser.realise(turn)
        if synthesizer is not None:
            text, info = runner.run(synthesizer.realise(turn, persona, text, seed=config.seed * 100_000 + index * 100
                                                        + turn.index))
            if info.get("flagged"):
                flagged.append(turn.index)
        turns.append({"user": text, "checks": [_check(n, _params(n, a)) for n, a in turn.constraints.items()]})
    metadata: dict[str, Any] = {
        "patience": config.patience, "seed": config.seed, "persona": persona["id"],
        "topics": list(dict.fromkeys(t.state.topic["id"] for t in script)),
        "script": [f"{t.move} {t.state.topic['id']} {' '.join(op.label() for op in t.operations)}".strip()
                   for t in script],
    }
    if synthesizer is not None:
        metadata["synthesizer"] = getattr(synthesizer.client, "model", "llm")
        metadata["flagged_turns"] = flagged
    return {"id": f"{config.id_prefix}-{index:03d}", "metadata": metadata, "turns": turns}


def _params(name: str, args: Any) -> Any:
    return {"keywords": list(args)} if isinstance(args, list) else args


def suite_defaults(*, patience: int, max_tokens: int | None, system: bool, markers: Sequence[str]) -> dict[str, Any]:
    defaults: dict[str, Any] = {}
    if system:
        defaults["system"] = SYSTEM_PROMPT
    defaults["protocol"] = "multi_turn"
    defaults["protocol_options"] = {"patience": patience, "subtests": "turn"}
    defaults["generation"] = {"temperature": 0.0, "max_tokens": max_tokens}
    if markers:
        defaults["markers"] = list(markers)
    return defaults


def build_suite(config: SynthConfig, synthesizer: LLMSynthesizer | None = None) -> dict[str, Any]:
    import asyncio

    topics, personas = load_data("topics.yaml"), load_data("personas.yaml")
    description = config.description or (
        f"{config.dialogues} EvolIF-style dialogues of {config.turns} scripted turns (seed {config.seed}): "
        "topics are continued, opened and revisited, each topic's constraints evolve turn by turn, and the "
        "dialogue ends when the model exhausts the user's patience.")
    runner = asyncio.Runner() if synthesizer is not None else None
    try:
        instances = [build_instance(config, index, topics, personas, synthesizer, runner)
                     for index in range(config.start, config.start + config.dialogues)]
    finally:
        if runner is not None:
            from pytest_ifbench import close_sessions

            runner.run(close_sessions())  # the model client's connections live on this loop
            runner.close()
    return {
        "ifbench": 1, "benchmark": "evolif", "description": description,
        "defaults": suite_defaults(patience=config.patience, max_tokens=config.max_tokens, system=config.system,
                                   markers=config.markers),
        "instances": instances,
    }


class _Flow(dict):
    """A mapping written in YAML flow style (one line)."""


def dump_suite(data: Mapping[str, Any], header: str = "") -> str:
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(_Flow, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v.items(),
                                                                   flow_style=True))

    def flow(value: Any, depth: int = 0) -> Any:
        if isinstance(value, dict):
            if {"id", "verifier"} <= set(value) or depth and all(not isinstance(v, (dict, list))
                                                                 for v in value.values()):
                return _Flow({k: flow(v, depth + 1) for k, v in value.items()})
            return {k: flow(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [flow(v, depth + 1) for v in value]
        return value

    body = yaml.dump(flow(dict(data)), Dumper=Dumper, sort_keys=False, allow_unicode=True, width=110,
                     default_flow_style=False)
    return header + body
