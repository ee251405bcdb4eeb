"""``ifbench merge`` refusals, each naming both files, and missing shards."""

from __future__ import annotations

import json

import pytest

from pytest_ifbench.cli.main import main as ifbench
from tests._support import stub_args
from tests.scale import _suite


@pytest.fixture
def shards(pytester, stub_server):
    """Shards 1/2 and 2/2 of the suite, and a shard 2/2 run with another temperature and another model."""
    _suite.write(pytester.path)

    def run(name: str, shard: str, *extra: str) -> str:
        pytester.runpytest("suites", *stub_args(stub_server, f"--ifbench-shard={shard}",
                                                f"--ifbench-results={name}", *extra))
        return str(pytester.path / name)

    return {"one": run("one.json", "1/2"), "two": run("two.json", "2/2"),
            "hot": run("hot.json", "2/2", "--ifbench-temperature=0.9"),
            "other": run("other.json", "2/2", "--model=openai/other-model"),
            "three": run("three.json", "1/3")}


def _merge(pytester, *files: str, expect: int | None = None) -> int:
    extra = ["--expect", str(expect)] if expect else []
    return ifbench(["merge", "--out", str(pytester.path / "merged.json"), *files, *extra])


@pytest.mark.parametrize("other, words", [
    ("other", "differ in model: 'openai/stub' vs 'openai/other-model'"),
    ("hot", "differ in generation settings"),
    ("three", "shards of different splits"),
])
def test_refusals_name_both_files(pytester, shards, capsys, other, words):
    assert _merge(pytester, shards["one"], shards[other]) == 2
    error = capsys.readouterr().err
    assert words in error and "one.json (shard 1/2)" in error and f"{other}.json" in error
    assert not (pytester.path / "merged.json").exists(), "a refused merge writes nothing"


def test_an_instance_twice_with_different_records_is_refused(pytester, shards, capsys):
    data = json.loads((pytester.path / "two.json").read_text())
    data["instances"][0]["status"] = "passed" if data["instances"][0]["status"] != "passed" else "failed"
    (pytester.path / "copy.json").write_text(json.dumps(data))
    assert _merge(pytester, shards["one"], shards["two"], str(pytester.path / "copy.json")) == 2
    error = capsys.readouterr().err
    assert f"both hold {data['instances'][0]['nodeid']} with different records" in error
    assert "two.json" in error and "copy.json" in error
    # the same records twice (a shard's file given twice) merge fine
    assert _merge(pytester, shards["one"], shards["two"], shards["two"]) == 0


def test_a_missing_shard_is_named_with_its_instances(pytester, shards, capsys):
    assert _merge(pytester, shards["one"], expect=2) == 1
    captured = capsys.readouterr()
    assert "shard 2 is missing" in captured.err
    split = json.loads((pytester.path / "one.json").read_text())["shard"]["assignment"]
    absent = sorted(nodeid for nodeid, index in split.items() if index == 2)
    assert all(f"  {nodeid}" in captured.err for nodeid in absent)
    merged = json.loads((pytester.path / "merged.json").read_text())
    assert merged["not_run"] == absent and len(merged["instances"]) == len(split) - len(absent)
    assert _merge(pytester, shards["one"], shards["two"], expect=3) == 2
    assert "--expect 3, but" in capsys.readouterr().err


def test_not_a_results_file_is_refused(pytester, capsys):
    (pytester.path / "x.json").write_text('{"a": 1}')
    assert _merge(pytester, str(pytester.path / "x.json")) == 2
    assert "not a pytest-ifbench results file" in capsys.readouterr().err
