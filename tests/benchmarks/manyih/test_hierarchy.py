"""ManyIH privilege prompt interfaces and winner resolution (official sample when ../shared exists)."""

from __future__ import annotations

import json
import random

import pytest

from pytest_ifbench.benchmarks.manyih.assemble import official_coding_instructions
from pytest_ifbench.benchmarks.manyih.compose import Instruction, expected_styles
from pytest_ifbench.benchmarks.manyih.ppi import (
    coding_system_prompt,
    coding_user_prompt,
    meta_prompt,
    ordinal_ranks,
    parse_tags,
    perturb,
    resolve,
    split_test_code,
    tag,
)
from pytest_ifbench.benchmarks.manyih.styles import conflicts
from tests._support import shared_sample


@pytest.fixture(scope="module")
def official():
    return json.loads(shared_sample("manyih-coding-sample.json").read_text(encoding="utf-8"))


def test_winner_resolution_reproduces_expected_styles(official):
    for sample in official["data"]:
        instructions, _, _ = official_coding_instructions(sample)  # raises on any mismatch
        resolved = expected_styles(instructions)
        assert list(resolved.items()) == list(sample["metadata"]["expected_styles"].items()), sample["id"]


def test_a_stricter_rule_would_not_match(official):
    """Rejecting every instruction that conflicts with *any* higher one disagrees with the data."""
    differs = 0
    for sample in official["data"]:
        by_id = {i["id"]: i for i in sample["instructions"]}
        for group, ids in sample["metadata"]["style_group_mappings"].items():
            strict = [by_id[i]["style_id"] for i in sorted(ids, key=lambda i: -by_id[i]["privilege"])
                      if not any(c in by_id[i]["conflicts_with"] and by_id[c]["privilege"] > by_id[i]["privilege"]
                                 for c in ids)]
            differs += sorted(strict) != sorted(sample["metadata"]["expected_styles"][group])
    assert differs > 0


def test_style_conflict_table_matches_the_data(official):
    for sample in official["data"]:
        for a in sample["instructions"]:
            for b in sample["instructions"]:
                if a is not b:
                    assert conflicts(a["style_id"], b["style_id"]) == (b["id"] in a["conflicts_with"])


def test_ordinal_rendering_reproduces_the_official_prompt(official):
    for sample in official["data"]:
        instructions = sorted(sample["instructions"], key=lambda i: i["id"])
        prompt = coding_user_prompt(sample["original_prompt"],
                                    [(i["description"], i["privilege"]) for i in instructions], "ordinal")
        assert prompt == sample["prompt"]


def test_paper_example_f1():
    """Appendix F.1: the hexagonal-number sample's winners, from its scalar privileges."""
    items = {"quotes_docstring_triple_double": 46, "types_none": 1, "license_apache": 91, "var_single": 37,
             "quotes_double": 73, "var_min5": 64, "types_full": 28, "quotes_single": 55, "license_mit": 100,
             "license_none": 19, "var_max2": 10, "var_min3": 82}
    instructions = [Instruction(number=n, style=s, group=s.split("_")[0], privilege=p, winner=False,
                                conflicts_with=tuple(m for m, o in enumerate(items, 1) if conflicts(s, o)))
                    for n, (s, p) in enumerate(items.items(), 1)]
    winners = expected_styles(instructions)
    assert winners == {"quotes": ["quotes_double", "quotes_docstring_triple_double"], "types": ["types_full"],
                       "license": ["license_mit"], "var": ["var_min3", "var_min5"]}
    ranks = ordinal_ranks(list(items.values()))
    assert ranks[100] == 1 and ranks[1] == 12 and ranks[82] == 3


def test_same_privilege_later_instruction_wins():
    always = lambda a, b: True  # noqa: E731
    assert resolve([("first", 5, 0), ("second", 5, 1)], always) == ["second"]
    assert resolve([("first", 7, 0), ("second", 5, 1)], always) == ["first"]
    one_way = lambda a, b: (a, b) == ("low", "high")  # noqa: E731 - a conflict listed on one side only
    assert resolve([("high", 9, 0), ("low", 1, 1)], one_way) == ["high"]


def test_prompt_interfaces():
    assert tag("Use tabs.", "ordinal", 91, {91: 2}) == "[[Privilege 2]]Use tabs.[[/Privilege]]"
    assert tag("Use tabs.", "scalar", 91) == "[[z=91]]Use tabs.[[/z]]"
    prompt = coding_user_prompt("Write f.", [("A.", 10), ("B.", 90), ("C.", 10)], "ordinal")
    assert parse_tags(prompt) == [("ordinal", 2.0, "A."), ("ordinal", 1.0, "B."), ("ordinal", 2.0, "C.")]
    assert "lower privilege number" in meta_prompt("ordinal", "coding")
    assert "higher privilege level (z value)" in meta_prompt("scalar", "if")
    assert meta_prompt("scalar", "if").startswith("IMPORTANT: Some instructions in this prompt are tagged")
    for interface in ("ordinal", "scalar"):
        system = coding_system_prompt(interface)
        assert system.startswith("You are an expert Python programmer.")
        assert meta_prompt(interface, "coding") in system
        assert "preserve the function name exactly as given" in system
        assert "appears later in the prompt" in system


def test_perturbation_keeps_the_order():
    rng = random.Random(3)
    for _ in range(200):
        values = rng.sample(range(1, 101), 12)
        shifted = perturb(values, rng)
        assert shifted != values
        assert all(abs(a - b) <= 3 for a, b in zip(values, shifted))
        assert sorted(range(12), key=values.__getitem__) == sorted(range(12), key=shifted.__getitem__)
        assert len(set(shifted)) == 12 and min(shifted) >= 1
    assert perturb([1, 2, 3], random.Random(0)) == perturb([1, 2, 3], random.Random(0))


def test_split_test_code():
    tests, setup = split_test_code("import math\nassert f(1) == math.pi\nassert f(2) == 3\n")
    assert tests == ["assert f(1) == math.pi", "assert f(2) == 3"] and setup == "import math"
