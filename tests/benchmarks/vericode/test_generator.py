"""Vibe Checker augmentation, suite generation and importers."""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from pathlib import Path

import pytest

from pytest_ifbench._composition import default_registry
from pytest_ifbench.benchmarks.vericode import generate as gen
from pytest_ifbench.benchmarks.vericode.augment import (
    RELEVANCE,
    RuleSelector,
    augment,
    features,
    permutation,
    validated_params,
)
from pytest_ifbench.benchmarks.vericode.instructions import BY_ID, conflicting
from pytest_ifbench.benchmarks.vericode.tasks import TaskFormatError, detect_source, load_tasks
from pytest_ifbench.suite.format import load_suite, parse_suite

ROOT = Path(__file__).resolve().parents[3]
REGISTRY = default_registry()
TASKS = load_tasks("builtin")


def outputs(*argv: str) -> dict[Path, str]:
    return gen.generate(gen._parser().parse_args(list(argv)))


def suite_data(text: str) -> dict:
    import yaml

    return yaml.load(text, Loader=yaml.CSafeLoader)


def test_same_seed_same_suite_and_other_seed_differs(tmp_path):
    first = outputs("--tasks", "rw_001,st_003,fn_002", "--out", str(tmp_path))
    again = outputs("--tasks", "rw_001,st_003,fn_002", "--out", str(tmp_path))
    other = outputs("--tasks", "rw_001,st_003,fn_002", "--out", str(tmp_path), "--seed", "1")
    assert first == again
    assert first[tmp_path / "bigvibe.yaml"] != other[tmp_path / "bigvibe.yaml"]


def test_a_task_is_augmented_the_same_whatever_else_is_generated():
    alone = outputs("--tasks", "fn_002", "--no-quick")
    together = outputs("--tasks", "fn_001,fn_002,fn_003", "--no-quick")
    (path,) = alone
    ids = [i["id"] for i in suite_data(alone[path])["instances"]]
    mixed = {i["id"]: i for i in suite_data(together[path])["instances"]}
    assert [i for i in suite_data(alone[path])["instances"]] == [mixed[i] for i in ids]


def test_committed_suites_are_up_to_date(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert gen.main(["--check"]) == 0


def test_selection_is_relevant_non_conflicting_and_in_permuted_order():
    for task in TASKS:
        selection = augment(task, RuleSelector(), seed=0, max_k=5)
        chosen = [inst.id for inst, _ in selection.chosen]
        assert len(chosen) == 5, task.id
        order = permutation(0, task)
        assert chosen == sorted(chosen, key=order.index)
        feats = features(task)
        assert all(RELEVANCE[i](feats) for i in chosen)
        assert not any(conflicting(a, b) for a in chosen for b in chosen if a != b)
        # the scan is greedy: every skipped earlier instruction was irrelevant or conflicting
        for skipped in order[: order.index(chosen[-1])]:
            if skipped not in chosen:
                kept_before = [c for c in chosen if order.index(c) < order.index(skipped)]
                assert not RELEVANCE[skipped](feats) or any(conflicting(skipped, c) for c in kept_before)
        for inst, params in selection.chosen:
            assert inst.validate(params) == params


def test_relevance_rules_follow_the_task():
    by_id = {t.id: t for t in TASKS}
    assert features(by_id["rw_005"]).datetime and not features(by_id["rw_002"]).datetime
    assert features(by_id["rw_001"]).file_io and not features(by_id["st_001"]).file_io
    assert RELEVANCE["library_1"](features(by_id["rw_003"]))
    assert not RELEVANCE["library_2"](features(by_id["fn_001"]))
    assert not RELEVANCE["error_4"](features(by_id["fn_002"]))


def test_parameter_validation_reverts_to_defaults():
    params, problems = validated_params(BY_ID["style_3"], {"line_length": 500, "bogus": 1})
    assert params == {"line_length": 79}
    assert len(problems) == 2 and "bogus" in problems[0] + problems[1]
    params, problems = validated_params(BY_ID["doc_4"], {"keys": ["summary", "nonsense"]})
    assert params == {"keys": ["summary", "complexity"]} and problems
    params, _ = validated_params(BY_ID["doc_6"], {"heading": "Summary", "max_words": "many"})
    assert params == {"heading": "Summary", "max_words": 100}
    assert validated_params(BY_ID["logic_3"], "two")[0] == {"max_branches": 2}


def test_suite_structure():
    text = outputs("--tasks", "rw_005", "--no-quick")[gen.DEFAULT_OUT / "bigvibe.yaml"]
    data = suite_data(text)
    suite = parse_suite(Path("bigvibe.yaml"), data, REGISTRY, protocols={"single_turn", "multi_turn"})
    instances = {i.id: i for i in suite.instances}
    assert sorted(instances) == sorted(["rw_005-k0"] + [f"rw_005-k{k}-{p}" for k in range(1, 6)
                                                        for p in ("single", "multi")])
    assert "full" in instances["rw_005-k0"].markers and "vericode" == suite.benchmark
    five = [c.id for c in instances["rw_005-k5-single"].checks if c.metadata.get("role") == "instruction"]
    for k in range(1, 6):
        single, multi = instances[f"rw_005-k{k}-single"], instances[f"rw_005-k{k}-multi"]
        for instance in (single, multi):
            instructions = [c for c in instance.checks if c.metadata.get("role") == "instruction"]
            assert [c.id for c in instructions] == five[:k]  # nested: k uses the first k of the five
            assert [c.metadata["position"] for c in instructions] == list(range(1, k + 1))
            assert [c.verifier for c in instructions] == [f"vericode.{i}" for i in five[:k]]
            assert instance.checks[-1].id == "functional" and instance.checks[-1].metadata == {"role": "functional"}
            assert all(c.turn is None for c in instance.checks)
            assert f"k_{k}" in instance.markers and "bigvibe" in instance.markers
            assert {f"category_{BY_ID[i].category}" for i in five[:k]} <= set(instance.markers)
            assert instance.category == "realworld" and instance.metadata["k"] == k
        assert single.protocol == "single_turn" and multi.protocol == "multi_turn"
        assert len(multi.turns) == k + 1
        assert multi.turns[0].user == instances["rw_005-k0"].prompt  # the bare query first
        for n, instruction_id in enumerate(five[:k], start=1):
            params = next(c.params for c in single.checks if c.id == instruction_id)
            assert f"\n{n}. {BY_ID[instruction_id].render('generation', params)}" in single.prompt
            assert multi.turns[n].user == BY_ID[instruction_id].render("edit", params)
    assert instances["rw_005-k0"].generation.temperature == 0.0


def test_livevibe_prompts_and_quick_subset():
    out = outputs("--tasks", "st_008,fn_004,rw_012")
    live = suite_data(out[gen.DEFAULT_OUT / "livevibe.yaml"])
    assert "complete Python functions" in live["defaults"]["system"]
    assert live["defaults"]["generation"]["temperature"] == 0.2
    by_id = {i["id"]: i for i in live["instances"]}
    assert "must be named `solve()`" in by_id["fn_004-k0"]["prompt"]
    assert "reads all the input it needs from standard input" in by_id["st_008-k0"]["prompt"]
    assert by_id["st_008-k0"]["checks"][0]["verifier"] == "ifbench.stdio_tests"
    quick = suite_data(out[gen.DEFAULT_OUT / "quick.yaml"])
    assert len(quick["instances"]) == len(gen.QUICK)
    assert "markers" not in quick["defaults"] and quick["defaults"]["generation"]["max_tokens"] == 400
    protocols = {i.get("protocol", "single_turn") for i in quick["instances"]}
    assert protocols == {"single_turn", "multi_turn"}
    assert {i["metadata"]["testbed"] for i in quick["instances"]} == {"quick"}
    assert all("system" in i for i in quick["instances"])


def test_cli_help_and_errors(capsys, tmp_path):
    from pytest_ifbench.cli.main import main

    assert main(["generate", "vericode", "--help"]) == 0
    assert "--selector" in capsys.readouterr().out
    assert gen.main(["--source", "mbpp"]) == 2
    assert "needs --input" in capsys.readouterr().err
    assert gen.main(["--tasks", "nope"]) == 2


# --------------------------------------------------------------------------- importers (original fixtures)

BCB_TEST = '''import unittest
from unittest.mock import patch


class TestCases(unittest.TestCase):
    def test_counts(self):
        self.assertEqual(task_func("a b a"), {"a": 2, "b": 1})

    def test_empty(self):
        self.assertEqual(task_func(""), {})
'''

BCB = [
    {"task_id": "BigCodeBench/7", "instruct_prompt": "Count the words of a text.\nYou should write self-contained "
     "code starting with:\n```\nfrom collections import Counter\ndef task_func(text):\n```", "test": BCB_TEST,
     "entry_point": "task_func", "code_prompt": "from collections import Counter\ndef task_func(text):\n",
     "canonical_solution": "    return dict(Counter(text.split()))\n", "libs": "['collections']"},
    {"task_id": "BigCodeBench/8", "instruct_prompt": "Read the first line of a file and return it stripped.",
     "test": "import unittest\nfrom unittest.mock import mock_open, patch\n\n\nclass TestCases(unittest.TestCase):\n"
             "    def test_line(self):\n        with patch('builtins.open', mock_open(read_data='hi\\n')):\n"
             "            self.assertEqual(task_func('x.txt'), 'hi')\n",
     "code_prompt": "def task_func(path):\n",
     "canonical_solution": "    with open(path) as fh:\n        return fh.readline().strip()\n", "libs": []},
]


def _compressed(cases) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases)))).decode()


LCB = [
    {"question_id": "abc100_a", "question_title": "Sum", "question_content": "Read two integers and print their sum.",
     "platform": "atcoder", "starter_code": "",
     "public_test_cases": json.dumps([{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]),
     "private_test_cases": _compressed([{"input": "5 7\n", "output": "12\n", "testtype": "stdin"}]),
     "metadata": "{}"},
    {"question_id": "3001", "question_title": "Max pair", "question_content": "Return the largest element of nums.",
     "platform": "leetcode", "starter_code": "class Solution:\n    def maxElement(self, nums: List[int]) -> int:\n",
     "public_test_cases": json.dumps([{"input": "[1, 5, 2]", "output": "5", "testtype": "functional"}]),
     "private_test_cases": json.dumps([{"input": "[-3]", "output": "-3", "testtype": "functional"}]),
     "metadata": json.dumps({"func_name": "maxElement"})},
]

MBPP = [
    {"task_id": 901, "text": "Write a function to double every item of a list.",
     "code": "def double_all(items):\n    return [2 * x for x in items]\n",
     "test_list": ["assert double_all([1, 2]) == [2, 4]", "assert double_all([]) == []"], "test_setup_code": ""},
    {"task_id": 902, "prompt": "Write a function that reverses a string.",
     "test_list": ["assert reverse_text('ab') == 'ba'"]},
]


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _run_functional(suite, instance_id, code):
    from pytest_ifbench._types import CheckSpec
    from pytest_ifbench._verify import VerifyContext, evaluate

    instance = next(i for i in suite.instances if i.id == instance_id)
    check: CheckSpec = next(c for c in instance.checks if c.id == "functional")
    (outcome,) = evaluate([check], f"```python\n{code}```", VerifyContext(registry=REGISTRY))
    return outcome


@pytest.mark.parametrize(("source", "records", "detected"), [
    ("bigcodebench", BCB, "bigcodebench"), ("livecodebench", LCB, "livecodebench"), ("mbpp", MBPP, "mbpp")])
def test_importers_write_valid_suites(tmp_path, source, records, detected):
    path = write_jsonl(tmp_path / f"{source}.jsonl", records)
    assert detect_source(path) == detected
    out = tmp_path / "imported.yaml"
    assert gen.main(["--input", str(path), "--out", str(out), "--max-k", "3"]) == 0
    suite = load_suite(out, REGISTRY, protocols={"single_turn", "multi_turn"})
    assert len(suite.instances) == len(records) * 7
    assert all("full" in i.markers for i in suite.instances)
    assert gen.main(["--input", str(path), "--out", str(out), "--max-k", "3", "--check"]) == 0


def test_bigcodebench_tests_run_as_unittest(tmp_path):
    out = tmp_path / "bcb.yaml"
    gen.main(["--source", "bigcodebench", "--input", str(write_jsonl(tmp_path / "b.jsonl", BCB)), "--out", str(out)])
    suite = load_suite(out, REGISTRY)
    reference = BCB[0]["code_prompt"] + BCB[0]["canonical_solution"]
    assert _run_functional(suite, "bcb_7-k0", reference).passed
    wrong = _run_functional(suite, "bcb_7-k0", "def task_func(text):\n    return {}\n")
    assert not wrong.passed and "test_counts" in wrong.verdict.evidence
    tasks = load_tasks("bigcodebench", tmp_path / "b.jsonl")
    assert tasks[1].mocks_open and not RELEVANCE["library_1"](features(tasks[1]))
    assert tasks[0].libraries == ("collections",) and tasks[0].query == BCB[0]["instruct_prompt"]


def test_livecodebench_stdio_and_functional(tmp_path):
    tasks = load_tasks("livecodebench", write_jsonl(tmp_path / "l.jsonl", LCB))
    stdio, functional = tasks
    assert stdio.kind == "stdio" and [c["output"] for c in stdio.cases] == ["3\n", "12\n"]  # private tests decoded
    assert functional.kind == "functional" and functional.entry_point == "solve"
    assert "def solve(nums: List[int]) -> int:" in functional.query
    out = tmp_path / "lcb.yaml"
    gen.main(["--source", "livecodebench", "--input", str(tmp_path / "l.jsonl"), "--out", str(out)])
    suite = load_suite(out, REGISTRY)
    assert _run_functional(suite, "lcb_abc100_a-k0", "a, b = map(int, input().split())\nprint(a + b)\n").passed
    assert _run_functional(suite, "lcb_3001-k0", "def solve(nums):\n    return max(nums)\n").passed
    assert not _run_functional(suite, "lcb_3001-k0", "def solve(nums):\n    return nums[0]\n").passed


def test_livecodebench_refuses_pickled_objects(tmp_path):
    import os

    evil = base64.b64encode(zlib.compress(pickle.dumps(os.getcwd))).decode()
    record = dict(LCB[0], private_test_cases=evil)
    with pytest.raises(TaskFormatError, match="private_test_cases"):
        load_tasks("livecodebench", write_jsonl(tmp_path / "l.jsonl", [record]))


def test_mbpp_entry_points_and_tests(tmp_path):
    tasks = load_tasks("mbpp", write_jsonl(tmp_path / "m.jsonl", MBPP))
    assert [t.entry_point for t in tasks] == ["double_all", "reverse_text"]
    assert [t.testbed for t in tasks] == ["mbpp", "mbpp"]
    assert "Your code should pass these tests:" in tasks[0].query and tasks[0].tests == tuple(MBPP[0]["test_list"])


@pytest.mark.parametrize(("records", "message"), [
    ([{"task_id": "BigCodeBench/1", "instruct_prompt": "x"}], "missing field 'test'"),
    ([{"task_id": 1, "text": "x", "test_list": []}], "test_list"),
    ([{"question_id": "q", "question_content": "x"}], "no test cases"),
])
def test_importer_errors_name_file_line_and_field(tmp_path, records, message):
    path = write_jsonl(tmp_path / "bad.jsonl", records)
    with pytest.raises(TaskFormatError, match=message) as info:
        load_tasks(detect_source(path), path)
    assert "bad.jsonl:1" in str(info.value)


def test_llm_selector_through_the_judge_model(stub_env, tmp_path, capsys):
    from pytest_ifbench.benchmarks.vericode.augment import scan
    from pytest_ifbench.testing import Reply

    wanted = ["doc_5", "doc_4", "bogus", "style_3", "logic_3", "style_2"]
    stub_env.add_rule("Candidate instructions", Reply(content=json.dumps({"selected": wanted})))
    stub_env.add_rule("Choose parameter values", Reply(content="Sure: " + json.dumps({"params": {
        "style_3": {"line_length": 999, "color": "red"}, "logic_3": {"max_branches": 3},
        "doc_5": {"num_bullets": 4}, "doc_4": {"keys": ["approach"]}, "style_2": {"quote_style": "single"}}})))
    argv = ["--tasks", "fn_004", "--selector", "llm", "--judge-model", "openai/stub", "--api-base", stub_env.url,
            "--no-cache", "--out", str(tmp_path), "--no-quick", "--max-k", "3"]
    assert gen.main(argv) == 0
    task = next(t for t in TASKS if t.id == "fn_004")
    expected = scan(permutation(0, task), lambda i: i in wanted, 3)  # permuted order, doc_4/doc_5 conflict
    assert expected == ["doc_4", "style_3", "logic_3"]  # doc_5 conflicts with doc_4, which comes first
    suite = load_suite(tmp_path / "livevibe.yaml", REGISTRY)
    k3 = next(i for i in suite.instances if i.id == "fn_004-k3-single")
    assert [c.id for c in k3.checks[:-1]] == expected
    assert k3.metadata["selector"] == "llm"
    params = {c.id: dict(c.params) for c in k3.checks[:-1]}
    assert params == {"doc_4": {"keys": ["approach"]}, "style_3": {"line_length": 79},  # 999: out of range
                      "logic_3": {"max_branches": 3}}
    err = capsys.readouterr().err
    assert "line_length" in err and "'color'" in err
    bodies = [r.body for r in stub_env.requests]
    assert len(bodies) == 2
    assert all(b["response_format"]["type"] == "json_schema" and b["temperature"] == 0.0 for b in bodies)
