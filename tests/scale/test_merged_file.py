"""The merged results file reads as a run's own: the same ``metrics`` entry an unsharded run of the same
instances writes, and ``ifbench compare`` takes it as a run."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_ifbench.cli.main import main as ifbench
from tests._support import stub_args
from tests.scale import _suite


def test_a_merged_file_has_the_metrics_of_one_run_over_its_instances(pytester, stub_server, monkeypatch, capsys):
    _suite.write(pytester.path)
    pytester.runpytest("suites", *stub_args(stub_server, "--ifbench-results=single.json"))
    monkeypatch.setenv("IFBENCH_SHARDS", "2")
    shards = []
    for index in (1, 2):
        monkeypatch.setenv("IFBENCH_SHARD", str(index))
        pytester.runpytest("suites", *stub_args(stub_server, f"--ifbench-results=shard-{index}.json"))
        shards.append(str(pytester.path / f"shard-{index}.json"))
    assert all(json.loads(Path(path).read_text())["shard"]["count"] == 2 for path in shards)
    merged_path = pytester.path / "merged.json"
    assert ifbench(["merge", "--out", str(merged_path), *shards, "--expect", "2"]) == 0, capsys.readouterr().err

    single = json.loads((pytester.path / "single.json").read_text())
    merged = json.loads(merged_path.read_text())
    assert single["metrics"]["scaled"]["items"] == _suite.INSTANCES
    assert "metrics" in merged, "the merged file had no metrics entry"
    assert merged["metrics"] == single["metrics"]
    capsys.readouterr()
    assert ifbench(["compare", str(pytester.path / "single.json"), str(merged_path)]) == 0, capsys.readouterr().err
