"""paper vs reference: one case per class of difference (docs/evolif.md), and how compat is set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ifbench import ReadOptions
from pytest_ifbench._composition import build_registry, command_plugin_manager
from pytest_ifbench._verify import verify_one
from pytest_ifbench.benchmarks.evolif.compat import apply_compat
from pytest_ifbench.benchmarks.evolif.official import suite_data
from pytest_ifbench.benchmarks.evolif.plugin import BENCHMARK
from pytest_ifbench.benchmarks.evolif.settings import authors_system_prompt

REGISTRY = build_registry(command_plugin_manager([]).hook)

#: (verifier, params, reply, paper verdict, reference verdict) -- the rows of docs/evolif.md.
CLASSES = [
    ("case", {"mode": "all_upper"}, "1234 !!", False, True),                      # no letters
    ("case", {"mode": "all_upper"}, "ÉCOLE é", False, True),                       # only ASCII counted
    ("case", {"mode": "min_upper", "min": 50}, "12 34", False, True),              # min_upper without letters
    ("case", {"mode": "min_upper", "min": 0.5}, "ABCd", True, True),               # float min: not checked
    ("case", {"mode": "min_upper", "min": 0.5}, "abcd", False, True),
    ("startwith", {"mode": "letter", "value": "h"}, "123 hello", False, True),     # first ASCII letter
    ("startwith", {"mode": "keyword", "value": "machine"}, "Machinery works", False, True),  # prefix, not word
    ("startwith", {"mode": "keyword", "value": "hello"}, "**Hello** there", True, True),
    ("startwith", {"mode": "keyword", "value": "hello"}, "# Hello", True, False),   # the space after # stays
    ("startwith", {"mode": "keyword", "value": "hello"}, "(Hello) there", False, True),  # leading ( dropped
    ("endwith", {"mode": "keyword", "value": "happy"}, "so unhappy", False, True),  # suffix, not word
    ("endwith", {"mode": "keyword", "value": "the end"}, "That is the end .", True, False),  # space before "."
    ("endwith", {"mode": "letter", "value": "y"}, "so happy :)", False, True),      # last ASCII letter
    ("endwith", {"mode": "emoji", "value": "😀"}, "Great 😀.", False, True),         # trailing punctuation dropped
    ("format", {"mode": "json"}, "42", False, True),                               # bare JSON scalar
    ("format", {"mode": "markdown"}, "plain text", False, True),                   # any text without a broken fence
    ("format", {"mode": "csv"}, "single", False, True),                            # one column, one row
    ("format", {"mode": "csv"}, 'a,b"c\n1,2', False, True),                        # loose quoting
    ("format", {"mode": "html"}, "Hi <b>there</b> friend", False, True),           # text outside elements
    ("countableItems", {"num": 2}, "+ a\n+ b", True, False),                       # + is not a marker
    ("countableItems", {"num": 1}, "---", False, True),                            # a rule counts
    ("countableItems", {"num": 1}, "-5 degrees", False, True),                     # any line starting with -
    ("length", {"mode": "word", "relation": "exactly", "number": 2}, "don't", False, True),  # \w+ words
    ("length", {"mode": "characters", "relation": "exactly", "number": 5}, " abc ", False, True),  # not stripped
    ("length", {"mode": "paragraph", "relation": "exactly", "number": 2}, "a\n\n---\n\nb", True, False),  # divider
    ("length", {"mode": "sentence", "relation": "exactly", "number": 1}, "- item one\n- item two", False, True),
    ("length", {"mode": "sentence", "relation": "exactly", "number": 2}, "# Heading\nText follows.", True, False),
    ("existence", {"machine learning": 1}, "machine learnings", False, True),       # substring for phrases
    ("existence", {"apple": 0}, "apple", False, True),                              # count 0 ignored
    ("forbidden", {"keywords": ["learning"]}, "machine-learning", False, False),
    ("forbidden", {"keywords": ["machine learning"]}, "machine learnings", True, False),
    ("language", {"lang": "en"}, "This is plainly English text here.", True, False),  # unknown to eval.py
]


def _verdict(name: str, params: dict, reply: str, compat: str) -> bool:
    verifier = REGISTRY.get(f"evolif.{name}")
    return verify_one(REGISTRY, verifier.id, verifier.validate(params | {"compat": compat}), reply).passed


@pytest.mark.parametrize(("name", "params", "reply", "paper", "reference"), CLASSES)
def test_paper_vs_reference(name, params, reply, paper, reference) -> None:
    assert _verdict(name, params, reply, "paper") is paper
    assert _verdict(name, params, reply, "reference") is reference


def test_compat_is_validated_and_judged_verifiers_take_it() -> None:
    from pytest_ifbench._params import ParamError

    with pytest.raises(ParamError, match="paper, reference"):
        REGISTRY.get("evolif.case").validate({"mode": "all_upper", "compat": "strict"})
    assert REGISTRY.get("evolif.emotion").validate({"emotion": "happy", "compat": "reference"})["compat"] == "reference"
    assert REGISTRY.get("evolif.existence").validate({"apple": 1, "compat": "reference"})["compat"] == "reference"


def test_flag_overrides_and_option_fills_in() -> None:
    data = {"instances": [{"turns": [{"checks": [
        {"verifier": "evolif.case", "params": {"mode": "all_upper"}},
        {"verifier": "evolif.case", "params": {"mode": "all_lower", "compat": "paper"}},
        {"verifier": "ifbench.regex", "params": {"pattern": "x"}},
    ]}]}]}
    apply_compat(data, flag=None, default="reference")
    checks = data["instances"][0]["turns"][0]["checks"]
    assert [c["params"].get("compat") for c in checks] == ["reference", "paper", None]
    apply_compat(data, flag="reference", default=None)
    assert [c["params"].get("compat") for c in checks] == ["reference", "reference", None]


OFFICIAL_TURN = {"turn": 1, "active_topic": 1, "user_query_verified": "Hi, all caps please.", "user_query": "x",
                 "instructions": [{"id": "case", "args": {"mode": "all_upper"}}], "style": {}}


def test_official_file_gets_the_authors_run_settings(tmp_path: Path) -> None:
    path = tmp_path / "dialog_1.jsonl"
    path.write_text(json.dumps(OFFICIAL_TURN) + "\n", encoding="utf-8")
    data = suite_data(path)
    assert data["defaults"]["generation"] == {"temperature": 1.0, "max_tokens": None}  # no limit, as eval.py
    assert data["defaults"]["system"] == authors_system_prompt()
    assert authors_system_prompt().startswith("\nYou are a helpful assistant in a multi-task conversation.")
    assert "compat" not in data["instances"][0]["turns"][0]["checks"][0]["params"]
    flagged = suite_data(path, "reference")
    assert flagged["instances"][0]["turns"][0]["checks"][0]["params"]["compat"] == "reference"


def test_suite_options_set_compat_and_system_prompt(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "ifbench: 1\nbenchmark: evolif\noptions: {compat: reference, system_prompt: none}\n"
        "defaults: {system: ours, protocol: multi_turn}\n"
        "instances:\n- id: d\n  turns:\n  - user: hi\n    checks:\n"
        "    - {id: c, verifier: evolif.case, params: {mode: all_upper}}\n",
        encoding="utf-8")
    data = BENCHMARK.read(path, ReadOptions())  # the reader (system prompt), then the core's compat
    assert "system" not in data["defaults"]
    assert data["instances"][0]["turns"][0]["checks"][0]["params"]["compat"] == "reference"
    path.write_text(path.read_text().replace("system_prompt: none", "system_prompt: authors"), encoding="utf-8")
    assert BENCHMARK.read(path, ReadOptions())["defaults"]["system"] == authors_system_prompt()


def test_official_files_send_no_token_limit_end_to_end(tmp_path: Path) -> None:
    """The parsed instances carry no max_tokens (not the core's 1,024), so none is sent; an import does the same."""
    from pytest_ifbench.benchmarks.evolif.generate import main as generate
    from pytest_ifbench.suite.format import load_suite, parse_suite

    path = tmp_path / "dialog_1.jsonl"
    path.write_text(json.dumps(OFFICIAL_TURN) + "\n", encoding="utf-8")
    suite = parse_suite(path, suite_data(path), REGISTRY, protocols={"multi_turn", "single_turn"}, root=tmp_path)
    [instance] = suite.instances
    assert instance.generation.max_tokens is None and "max_tokens" not in instance.generation.litellm_kwargs()
    out = tmp_path / "imported.yaml"
    assert generate(["import", str(path), "--max-tokens", "0", "--out", str(out)]) == 0
    [imported] = load_suite(out, REGISTRY, protocols={"multi_turn", "single_turn"}).instances
    assert imported.generation.max_tokens is None
