"""EvolIF end to end against the stub server: patience, per-turn subtests, judged turns, metrics."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_ifbench._composition import default_registry
from pytest_ifbench._protocols import PROTOCOLS, Runtime
from pytest_ifbench._types import CheckSpec, Instance, Turn
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.testing import Reply
from tests._support import run_closing, stub_args, write_suite

HELLO = "{id: startwith, verifier: evolif.startwith, params: {mode: keyword, value: hello}}"
LOWER = "{id: case, verifier: evolif.case, params: {mode: all_lower}}"
HAPPY = "{id: emotion, verifier: evolif.emotion, params: {emotion: happy}}"

SUITE = f"""
ifbench: 1
benchmark: evolif
defaults:
  system: Follow every requirement.
  protocol: multi_turn
  protocol_options: {{patience: 2, subtests: turn}}
  generation: {{max_tokens: 50}}
instances:
  - id: dlg
    metadata: {{patience: 2}}
    turns:
      - user: "T1: start with hello"
        checks: [{HELLO}]
      - user: "T2: and all lowercase"
        checks: [{HELLO}, {LOWER}]
      - user: "T3: and happy"
        checks: [{HELLO}, {LOWER}, {HAPPY}]
      - user: "T4: continue"
        checks: [{HELLO}, {LOWER}, {HAPPY}]
      - user: "T5: continue"
        checks: [{HELLO}, {LOWER}, {HAPPY}]
      - user: "T6: never sent"
        checks: [{HELLO}]
"""

REPLIES = {"T1": "Hello there.", "T2": "Hello There", "T3": "hello, so happy!", "T4": "Nope", "T5": "Nope"}


def judge(body):
    """Scores every requirement it is asked about 8/10 (passes: above 6)."""
    prompt = body["messages"][-1]["content"]
    ids = re.findall(r"- id: (\S+)", prompt)
    return Reply(content=json.dumps({"checks": [
        {"id": i, "verdict": "pass", "score": 8, "reasoning": "cheerful"} for i in ids]}))


def script(server):
    server.add_rule("REQUIREMENTS:", judge)
    for key, text in REPLIES.items():
        server.add_rule(f"^{key}:", Reply(content=text))


OFFICIAL = [  # an official EvolIF file: one JSON line per turn, forbidden's args a bare list
    {"turn": 1, "active_topic": 5, "user_query_verified": "Write about sleep in under five words.",
     "user_query": "x", "instructions": [{"id": "length", "args": {"mode": "word", "relation": "less_than",
                                                                    "number": 5}, "description": ""}],
     "style": {"uuid": "u", "persona": "p", "styles": []}, "instruction_success": True, "topic_success": True},
    {"turn": 2, "active_topic": 5, "user_query_verified": "Also never say 'answer'.", "user_query": "x",
     "instructions": [{"id": "length", "args": {"mode": "word", "relation": "less_than", "number": 5}},
                      {"id": "forbidden", "args": ["answer"]}],
     "style": {}, "instruction_success": True, "topic_success": True},
]


def test_generated_suite_and_official_file_end_to_end(pytester, stub_env):
    """One pytest run: a suite dialogue (patience 2, judged turns) and an official file run unchanged."""
    script(stub_env)
    stub_env.add_rule("", Reply(content="short answer"))
    write_suite(pytester.path, "suites/evolif/d.yaml", SUITE)
    (pytester.path / "dialog_3.jsonl").write_text("".join(json.dumps(t) + "\n" for t in OFFICIAL))
    result = pytester.runpytest("dialog_3.jsonl", "suites",
                                *stub_args(stub_env, "-v", "--ifbench-results=results.json"))
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*dialog_3 SUBPASSED[[]turn1[]]*",
        "*dialog_3 SUBFAILED[[]turn2[]]*",
        "*dlg SUBPASSED[[]turn1[]]*",
        "*dlg SUBFAILED[[]turn2[]]*",
        "*dlg SUBPASSED[[]turn3[]]*",
        "*dlg SUBFAILED[[]turn4[]]*",
        "*dlg SUBFAILED[[]turn5[]]*",
        "*forbidden: 'answer' x1*",
        "*turn2: 1 of 2 checks unmet: turn2.case*",
        "*Every letter of the response is lower case.*",
        "*turn4: 2 of 3 checks unmet: turn4.startwith, turn4.case*",
        "*evolif: process metrics per turn (P=2/3;*",
        # dlg: 5 turns, 1 + .5 + 1 + 1/3 + 1/3 = 3.17, 2 successes, LSS 1, REC 1/2, ISR 2/5;
        # dialog_3: 2 turns, 1 + .5, 1 success, LSS 1, REC 0/0 (left out), ISR 1/2
        "*all*2*3.50*2.33*1.50*1.00*66.67%*42.86%*50.00%*45.00%*",
        "*dialog_3*2*completed*1.50*1*1*75.00%*50.00%*-*",
        "*dlg*5*patience_exhausted*3.17*2*1*63.33%*40.00%*1/2*",
        "*evolif: endurance by patience (Table 3)*",
        "*P=1*2.00*1.50*",  # both dialogues stop at their first failure (turn 2)
        "*evolif: satisfaction rate by constraint group (Table 7)*",
        "*EMO*Emotion*3*3*100.00%*",
    ])
    assert "turn6" not in out
    records = {r["instance"]: r for r in json.loads((pytester.path / "results.json").read_text())["instances"]}
    assert records["dlg"]["ended"] == "patience_exhausted" and len(records["dlg"]["turns"]) == 5
    assert records["dialog_3"]["ended"] == "completed"
    # 7 model calls and one batched judge call per turn that had a judged constraint (dlg T3, T4, T5)
    asked = [r.body["messages"][-1]["content"] for r in stub_env.requests]
    assert sum("REQUIREMENTS:" in a for a in asked) == 3 and stub_env.calls == 10
    fifth = next(r.body["messages"] for r in stub_env.requests if r.body["messages"][-1]["content"].startswith("T5"))
    assert [m["role"] for m in fifth] == ["system"] + ["user", "assistant"] * 4 + ["user"]
    assert fifth[2]["content"] == "Hello there." and fifth[0]["content"] == "Follow every requirement."
    official = next(r.body["messages"] for r in stub_env.requests if "sleep" in r.body["messages"][-1]["content"])
    assert official[0]["role"] == "system"


def test_the_protocol_stops_when_patience_runs_out(stub_env):
    """The core protocol with EvolIF checks, without pytest in between."""
    registry = default_registry()
    caps = CheckSpec(id="case", verifier="evolif.case", params={"mode": "all_upper"})
    instance = Instance(id="d", benchmark="evolif", suite=Path("x.yaml"), protocol="multi_turn",
                        protocol_options={"patience": 3}, turns=tuple(Turn(user=f"u{i}", checks=(caps,))
                                                                         for i in range(1, 8)))
    # S F F S F F F -> ends at turn 7 with patience 3
    for index, outcome in enumerate("SFFSFFF", start=1):
        stub_env.add_rule(f"^u{index}$", Reply(content="OK" if outcome == "S" else "no"))
    client = ModelClient(model="openai/stub", api_base=stub_env.url,
                         retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_total_wait=1, timeout=5))
    episode = run_closing(PROTOCOLS["multi_turn"](instance, Runtime(registry=registry, model=client)))
    assert [t.outcomes[0].passed for t in episode.turns] == [c == "S" for c in "SFFSFFF"]
    assert episode.ended == "patience_exhausted"


@pytest.mark.parametrize(("patience", "turns", "ended"), [(1, 2, "patience_exhausted"), (2, 3, "patience_exhausted"),
                                                           (3, 7, "completed")])
def test_patience_is_configurable_per_suite(stub_env, patience, turns, ended):
    registry = default_registry()
    caps = CheckSpec(id="case", verifier="evolif.case", params={"mode": "all_upper"})
    instance = Instance(id="d", benchmark="evolif", suite=Path("x.yaml"), protocol="multi_turn",
                        protocol_options={"patience": patience},
                        turns=tuple(Turn(user=f"u{i}", checks=(caps,)) for i in range(1, 8)))
    for index, outcome in enumerate("SFFSFFS", start=1):
        stub_env.add_rule(f"^u{index}$", Reply(content="OK" if outcome == "S" else "no"))
    client = ModelClient(model="openai/stub", api_base=stub_env.url,
                         retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_total_wait=1, timeout=5))
    episode = run_closing(PROTOCOLS["multi_turn"](instance, Runtime(registry=registry, model=client)))
    assert (len(episode.turns), episode.ended) == (turns, ended)
