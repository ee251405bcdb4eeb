"""Official EvolIF dialogue files: sniffing, conversion, `pytest file.jsonl`, `ifbench generate evolif import`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pytest_ifbench._composition import default_registry
from pytest_ifbench.benchmarks.evolif import official as I
from pytest_ifbench.benchmarks.evolif import plugin
from pytest_ifbench.suite.format import SuiteError, parse_suite
from tests._support import shared_sample


@pytest.fixture
def SAMPLE():  # noqa: N802 - reads like the constant it replaces
    return shared_sample("evolif-dialog-sample.jsonl")


def turn(n: int, query: str, instructions: list, *, verified: bool = True, topic: int = 1) -> dict:
    return {"turn": n, "active_topic": topic, "user_query_verified": query if verified else "",
            "user_query": query, "instructions": instructions,
            "style": {"uuid": "u1", "persona": "p", "styles": ["warm"]},
            "instruction_success": verified, "topic_success": True}


FORBID = {"id": "forbidden", "args": ["mental health", "grades"], "description": "stale text"}
LENGTH = {"id": "length", "args": {"mode": "word", "relation": "less_than", "number": 5}, "description": ""}
EXIST = {"id": "existence", "args": {"focus": 1}, "description": ""}


def write_official(path: Path, dialogues: list[list[dict]]) -> Path:
    path.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for d in dialogues for t in d),
                    encoding="utf-8")
    return path


def test_sniff_only_official_files(tmp_path):
    official = write_official(tmp_path / "dialog_1.jsonl", [[turn(1, "q", [LENGTH])]])
    assert I.is_official(official)
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "x", "response": "y"}\n', encoding="utf-8")
    assert not I.is_official(other)
    yaml_file = tmp_path / "x.yaml"
    yaml_file.write_text("turn: 1\ninstructions: []\n", encoding="utf-8")
    assert not I.is_official(yaml_file)
    assert plugin.BENCHMARK.pytest_ifbench_suite_data(other, None) is None


def test_conversion(tmp_path):
    path = write_official(tmp_path / "dialog 7.jsonl", [
        [turn(1, "Write about focus.", [LENGTH]), turn(2, "Also avoid words.", [LENGTH, FORBID], verified=False)],
        [turn(1, "Another one.", [EXIST], topic=9)],
    ])
    data = I.suite_from_files([path])
    assert [i["id"] for i in data["instances"]] == ["dialog-7.1", "dialog-7.2"]
    first = data["instances"][0]
    assert first["turns"][1]["user"] == "Also avoid words."  # user_query stands in for an empty verified query
    assert first["metadata"]["unverified_turns"] == [2] and first["metadata"]["patience"] == 3
    assert first["turns"][1]["checks"][1] == {"id": "forbidden", "verifier": "evolif.forbidden",
                                              "params": {"keywords": ["mental health", "grades"]}}
    assert data["defaults"]["protocol_options"] == {"patience": 3, "subtests": "turn"}
    suite = parse_suite(path, data, default_registry())
    assert [len(i.turns) for i in suite.instances] == [2, 1]


def test_malformed_files_name_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(turn(1, "q", [LENGTH])) + "\nnot json\n", encoding="utf-8")
    with pytest.raises(SuiteError, match=r"bad.jsonl: line 2: not JSON"):
        plugin.BENCHMARK.pytest_ifbench_suite_data(path, None)
    path.write_text(json.dumps(turn(1, "q", [{"args": {}}])) + "\n", encoding="utf-8")
    with pytest.raises(SuiteError, match="needs an 'id'"):
        plugin.BENCHMARK.pytest_ifbench_suite_data(path, None)


def test_official_sample_converts_unchanged(SAMPLE):
    data = I.suite_from_files([SAMPLE])
    (instance,) = data["instances"]
    raw = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    assert len(instance["turns"]) == len(raw) == 20
    for record, converted in zip(raw, instance["turns"]):
        assert converted["user"] == record["user_query_verified"]
        assert [c["verifier"] for c in converted["checks"]] == [f"evolif.{i['id']}" for i in record["instructions"]]
        for check, inst in zip(converted["checks"], record["instructions"]):
            expected = {"keywords": inst["args"]} if isinstance(inst["args"], list) else inst["args"]
            assert check["params"] == expected
    suite = parse_suite(SAMPLE, data, default_registry())
    assert len(suite.instances[0].turns[-1].checks) == 8
    assert instance["metadata"]["topics"] == [3506, 1548]


def test_import_command_writes_an_equivalent_suite(tmp_path, SAMPLE):
    from pytest_ifbench.cli.main import main

    out = tmp_path / "sample.yaml"
    assert main(["generate", "evolif", "import", str(SAMPLE), "--patience", "2", "--max-tokens", "300",
                 "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Imported by: ifbench generate evolif import")
    data = yaml.load(text, Loader=yaml.CSafeLoader)
    assert data["defaults"]["protocol_options"]["patience"] == 2
    assert data["defaults"]["generation"]["max_tokens"] == 300
    assert data["instances"] == I.suite_from_files([SAMPLE], patience=2)["instances"]
    assert parse_suite(out, data, default_registry()).instances[0].metadata["patience"] == 2


def test_import_command_errors(tmp_path, capsys):
    from pytest_ifbench.benchmarks.evolif.generate import main

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"turn": 1, "instructions": [], "user_query": "x"}\n{oops\n', encoding="utf-8")
    assert main(["import", str(bad), "--out", str(tmp_path / "o.yaml")]) == 2
    assert "line 2" in capsys.readouterr().err


def test_a_json_array_of_turns_is_accepted(tmp_path):
    path = tmp_path / "dialog.json"
    path.write_text(json.dumps([turn(1, "q1", [LENGTH]), turn(2, "q2", [LENGTH, EXIST])]), encoding="utf-8")
    assert I.is_official(path)
    data = plugin.BENCHMARK.pytest_ifbench_suite_data(path, None)
    assert [t["user"] for t in data["instances"][0]["turns"]] == ["q1", "q2"]
    other = tmp_path / "list.json"
    other.write_text(json.dumps([{"a": 1}]), encoding="utf-8")
    assert not I.is_official(other)


@pytest.mark.parametrize("field, value, said", [
    ("turn", "one", "line 1: turn: expected a turn number (1, 2, ...), got 'one'"),
    ("active_topic", {"a": 1}, "line 1: active_topic: expected an integer or a string, got {'a': 1}"),
    ("user_query_verified", 5, "line 1: user_query_verified: expected a string, got 5"),
    ("style", [1], "line 1: style: expected an object, got [1]"),
])
def test_a_turn_field_of_the_wrong_type_is_a_collection_error_naming_it(pytester, SAMPLE, field, value, said):  # noqa: N803
    """A ``turn`` that is not a number split the dialogue silently; a topic that is an object crashed the importer
    (a warning, the file left alone, then pytest's "not found")."""
    records = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    records[0][field] = value
    path = pytester.path / "dialog.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    result = pytester.runpytest("dialog.jsonl", "--collect-only", "-q")
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED and said in text and "SuiteImportWarning" not in text, text[-1500:]
