"""The EvolIF generator: three-layer tracking, exclusivity, realisation, checkers, determinism."""

from __future__ import annotations

import json
import shlex
from collections import Counter
from pathlib import Path

import pytest
import yaml

from pytest_ifbench._composition import default_registry
from pytest_ifbench.benchmarks.evolif import assemble as A
from pytest_ifbench.benchmarks.evolif import generate as G
from pytest_ifbench.benchmarks.evolif import realise as R
from pytest_ifbench.benchmarks.evolif import sampling as S
from pytest_ifbench.benchmarks.evolif import tracking as T
from pytest_ifbench.benchmarks.evolif.catalog import GROUPS, PAPER_GROUPS, group_of
from pytest_ifbench.suite.format import parse_suite
from tests._support import run_closing

ROOT = Path(__file__).resolve().parents[3]
SUITES = ROOT / "suites" / "evolif"
TOPICS = A.load_data("topics.yaml")
PERSONAS = A.load_data("personas.yaml")


def scripts(seed: int = 3, dialogues: int = 12, turns: int = 50, **kw):
    config = A.SynthConfig(seed=seed, dialogues=dialogues, turns=turns, **kw)
    for index in range(1, dialogues + 1):
        yield A.plan_dialogue(config, index, TOPICS, PERSONAS)


def test_same_seed_same_suite_different_seed_different_suite():
    config = A.SynthConfig(seed=7, dialogues=3, turns=20)
    first = A.dump_suite(A.build_suite(config))
    assert first == A.dump_suite(A.build_suite(config))
    assert first != A.dump_suite(A.build_suite(A.SynthConfig(seed=8, dialogues=3, turns=20)))
    # Dialogue k does not depend on how many dialogues come before it in the file.
    later = A.build_suite(A.SynthConfig(seed=7, dialogues=1, start=3, turns=20))
    assert later["instances"][0] == A.build_suite(config)["instances"][2]


def test_groups_are_exclusive_and_combinations_satisfiable():
    registry = default_registry()
    for _, _, script in scripts():
        for turn in script:
            assert set(turn.constraints) <= set(PAPER_GROUPS)  # a dict: at most one constraint per group
            assert S.conflict(turn.constraints) is None, turn.constraints
            for name, args in turn.constraints.items():  # every constraint is valid for its checker
                registry.get(f"evolif.{name}").validate(A._params(name, args))


def test_conflict_rules():
    assert S.conflict({"format": {"mode": "json"}, "startwith": {"mode": "letter", "value": "A"}})
    assert S.conflict({"format": {"mode": "csv"}, "punctuation": {"mode": "must_not_include", "value": ","}})
    assert S.conflict({"forbidden": {"keywords": ["rail pass"]}, "existence": {"rail pass": 2}})
    assert S.conflict({"forbidden": {"keywords": ["rail"]}, "startwith": {"mode": "keyword", "value": "rail pass"}})
    assert S.conflict({"countableItems": {"num": 5}, "length": {"mode": "sentence", "relation": "less_than",
                                                                 "number": 4}})
    assert S.conflict({"format": {"mode": "markdown"}, "startwith": {"mode": "letter", "value": "A"},
                       "countableItems": {"num": 3}}) is None


def test_three_layers_topic_moves_operations_and_state_per_topic():
    moves, ops = Counter(), Counter()
    for _, _, script in scripts():
        states: dict[str, dict] = {}
        active = None
        for turn in script:
            moves[turn.move] += 1
            topic = turn.state.topic["id"]
            if turn.move == "new":
                assert topic not in states and turn.operations and all(o.kind == "add" for o in turn.operations)
                before: dict = {}
            else:
                assert topic in states
                assert (topic == active) == (turn.move == "continue")
                before = states[topic]
                assert len(turn.operations) == 1  # one instruction-layer change per turn
            after = dict(before)
            for op in turn.operations:
                ops[op.kind] += 1
                if op.kind == "add":
                    assert op.name not in after
                    after[op.name] = op.after
                elif op.kind == "modify":  # the constraint layer: same constraint, new parameters
                    assert after[op.name] == op.before and op.after != op.before
                    after[op.name] = op.after
                else:
                    assert after.pop(op.name) == op.before
            assert after == turn.constraints, "each topic keeps its own instruction state"
            states[topic] = after
            active = topic
    assert moves["new"] and moves["continue"] and moves["backtrack"]
    assert ops["add"] and ops["modify"] and ops["remove"]


def test_triviality_filter_first_20_turns_average_two_constraints():
    for _, _, script in scripts(seed=11):
        head = script[:20]
        assert sum(len(t.constraints) for t in head) / len(head) >= 2


def test_template_messages_pass_the_topic_and_constraint_checkers():
    for rng, persona, script in scripts(seed=5, dialogues=8):
        realiser = R.TemplateRealiser(rng, persona)
        for turn in script:
            text = realiser.realise(turn)
            assert R.constraint_checker(text, turn.operations), (turn.operations, text)
            if turn.move == "backtrack" or (turn.move == "new" and turn.index > 1):
                assert R.topic_checker(text, turn.state.topic), text


def test_checkers_reject_incomplete_messages():
    topic = TOPICS[0]
    op = T.Operation(kind="add", name="countableItems", after={"num": 7})
    assert R.constraint_checker("Please use exactly seven bullet points.", [op])
    assert R.constraint_checker("Please use 7 bullet points.", [op])
    assert not R.constraint_checker("Please use a few bullet points.", [op])
    words = T.Operation(kind="modify", name="existence", before={"a": 1}, after={"rail pass": 2})
    assert not R.constraint_checker("Mention rail pass a couple of times.", [words])
    assert R.constraint_checker("Mention 'rail pass' exactly twice.", [words])
    assert R.constraint_checker("Drop that.", [T.Operation(kind="remove", name="case", before={"mode": "all_upper"})])
    assert R.topic_checker("Back to the rail pass question.", topic)
    assert not R.topic_checker("Back to the earlier topic, please.", topic)


def test_personas_colour_the_messages():
    config = A.SynthConfig(seed=1, dialogues=24, turns=3)
    data = A.build_suite(config)
    assert len({i["metadata"]["persona"] for i in data["instances"]}) > 5
    openers = {o for p in PERSONAS for o in p["openers"]}
    assert any(t["user"].startswith(tuple(openers)) for i in data["instances"] for t in i["turns"])


def test_generated_suite_is_valid_and_checks_use_official_ids():
    data = A.build_suite(A.SynthConfig(seed=4, dialogues=2, turns=30, markers=("full",), patience=2))
    suite = parse_suite(Path("x.yaml"), yaml.load(A.dump_suite(data), Loader=yaml.CSafeLoader), default_registry())
    instance = suite.instances[0]
    assert instance.protocol == "multi_turn"
    assert instance.protocol_options == {"patience": 2, "subtests": "turn"}
    assert "full" in instance.markers and instance.system == A.SYSTEM_PROMPT
    assert instance.metadata["patience"] == 2 and len(instance.metadata["script"]) == 30
    for turn in instance.turns:
        groups = [group_of(c.verifier) for c in turn.checks]
        assert len(groups) == len(set(groups)) and None not in groups
        assert all(c.id.split(".", 1)[1] in GROUPS for c in turn.checks)


def _header_argv(path: Path) -> list[str]:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    command = first.removeprefix("# Generated by: ifbench generate evolif ")
    argv = shlex.split(command)
    assert argv[-2:] == ["--out", "FILE"]
    return argv[:-2]


@pytest.mark.parametrize("path", sorted(SUITES.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_suites_regenerate_byte_for_byte(path, tmp_path):
    out = tmp_path / path.name
    assert G.main([*_header_argv(path), "--out", str(out)]) == 0
    assert out.read_bytes() == path.read_bytes()


def test_shipped_suites_sizes_and_markers():
    quick, full = [], []
    for path in sorted(SUITES.glob("*.yaml")):
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
        marked = "full" in data["defaults"].get("markers", [])
        (full if marked else quick).extend(data["instances"])
    assert len(full) >= 30 and all(len(i["turns"]) == 50 for i in full)
    assert 3 <= len(quick) <= 4 and all(len(i["turns"]) <= 8 for i in quick)


def test_cli_errors(tmp_path, capsys):
    assert G.main(["synth", "--out", str(tmp_path / "x.yaml"), "--groups", "nope"]) == 2
    assert "unknown constraint id" in capsys.readouterr().err
    assert G.main(["synth", "--out", str(tmp_path / "x.yaml"), "--patience", "0"]) == 2
    assert G.main(["bogus"]) == 2


def test_ifbench_generate_dispatch(tmp_path):
    from pytest_ifbench.cli.main import main

    out = tmp_path / "s.yaml"
    assert main(["generate", "evolif", "synth", "--seed", "1", "--dialogues", "1", "--turns", "4",
                 "--groups", "format,length,language", "--out", str(out)]) == 0
    data = yaml.load(out.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    used = {c["id"] for t in data["instances"][0]["turns"] for c in t["checks"]}
    assert used <= {"format", "length", "language"}


# --------------------------------------------------------------------------- LLM synthesizer (stub server)


def _synth_reply(replies):
    from pytest_ifbench.testing import Reply

    queue = list(replies)

    def reply(body):
        text = queue.pop(0) if queue else replies[-1]
        if body["messages"][-1]["content"].startswith("Message:"):  # the LLM topic check
            return Reply(content=json.dumps({"related": True}))
        return Reply(content=json.dumps({"user_query": text}))
    return reply


def _first_turn_with(kind: str):
    for _, persona, script in scripts(seed=9, dialogues=4):
        for turn in script:
            if turn.operations and turn.operations[0].kind == kind and turn.operations[0].name == "length":
                return persona, turn
    raise AssertionError("no such turn")


def _synthesizer(server, attempts=3, **kw):
    from pytest_ifbench.models.client import ModelClient, RetryPolicy

    client = ModelClient(model="openai/synth", api_base=server.url,
                         retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_total_wait=1, timeout=5))
    return R.LLMSynthesizer(client=client, attempts=attempts, **kw)


def test_llm_synthesizer_retries_until_the_checkers_pass(stub_env):
    persona, turn = _first_turn_with("add")
    op = turn.operations[0]
    good = f"Hmm, could you {R.request(op.name, op.after)}? {turn.state.topic['keywords'][0]}"
    stub_env.add_rule("", _synth_reply(["Could you make it a different length?", good]))
    synth = _synthesizer(stub_env)
    text, info = run_closing(synth.realise(turn, persona, "draft", seed=1))
    assert text == good and info == {"attempts": 2}
    prompt = stub_env.requests[0].body["messages"][-1]["content"]
    assert persona["persona"] in prompt and R.request(op.name, op.after) in prompt
    assert stub_env.requests[0].body["response_format"]["type"] == "json_schema"


def test_llm_synthesizer_falls_back_to_the_template_and_flags(stub_env):
    persona, turn = _first_turn_with("modify")
    stub_env.add_rule("", _synth_reply(["Something vague."]))
    synth = _synthesizer(stub_env, attempts=2)
    text, info = run_closing(synth.realise(turn, persona, "the template draft", seed=1))
    assert text == "the template draft" and info == {"attempts": 2, "flagged": True}
    assert stub_env.calls == 2


def test_synth_command_with_a_model(stub_env, tmp_path):
    stub_env.add_rule("", _synth_reply(["nothing useful"]))
    out = tmp_path / "s.yaml"
    assert G.main(["synth", "--seed", "1", "--dialogues", "1", "--turns", "2", "--attempts", "1",
                   "--synthesizer-model", "openai/synth", "--api-base", stub_env.url, "--out", str(out)]) == 0
    data = yaml.load(out.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    meta = data["instances"][0]["metadata"]
    assert meta["synthesizer"] == "openai/synth" and meta["flagged_turns"] == [1, 2]
