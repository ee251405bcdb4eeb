"""The run's id in each shard's entry, and ``ifbench merge`` refusing shards of two runs: a stale file of last
night's run with the same split (same model, settings, number of shards) was merged with tonight's."""

from __future__ import annotations

import json

import pytest

from pytest_ifbench.cli.main import main as ifbench
from tests._support import stub_args
from tests.scale import _suite

#: Every variable a shard or its run id is read from (docs/scale.md): a test sets only the ones it names, even
#: when the tests themselves run in a CI job that sets some.
_VARIABLES = ("IFBENCH_SHARD", "IFBENCH_SHARDS", "JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID",
              "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "IFBENCH_RUN_ID", "GITHUB_RUN_ID", "CI_PIPELINE_ID",
              "SLURM_ARRAY_JOB_ID")


@pytest.fixture
def engine(monkeypatch):
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _shard(pytester, stub, engine, index: int, count: int, env: dict[str, str], *extra: str) -> dict:
    """Run shard ``index``/``count`` with only ``env`` of the engines' variables set; its results file."""
    with engine.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        result = pytester.runpytest("suites", *stub_args(stub), f"--ifbench-shard={index}/{count}",
                                    f"--ifbench-results=shard-{index}.json", "--ifbench-cache=cache", *extra)
    assert result.ret in (0, 1), result.outlines[-5:]
    return json.loads((pytester.path / f"shard-{index}.json").read_text())


def _merge(pytester, *indices: int) -> int:
    files = [str(pytester.path / f"shard-{index}.json") for index in indices]
    return ifbench(["merge", "--out", str(pytester.path / "merged.json"), *files])


@pytest.mark.parametrize("env, extra, run, source", [
    ({"GITHUB_RUN_ID": "9001"}, [], "9001", "GITHUB_RUN_ID"),
    ({"GITHUB_RUN_ID": "9001", "GITHUB_RUN_ATTEMPT": "2"}, ["-n", "2"], "9001", "GITHUB_RUN_ID"),
    ({"CI_PIPELINE_ID": "4242"}, [], "4242", "CI_PIPELINE_ID"),
    ({"SLURM_ARRAY_JOB_ID": "777"}, [], "777", "SLURM_ARRAY_JOB_ID"),
    ({"IFBENCH_RUN_ID": "nightly-12", "GITHUB_RUN_ID": "9001"}, [], "nightly-12", "IFBENCH_RUN_ID"),
    ({"IFBENCH_RUN_ID": "nightly-12"}, ["--ifbench-run-id=by-hand"], "by-hand", "--ifbench-run-id"),
    ({}, [], None, None),
], ids=["github", "github-xdist", "gitlab", "slurm", "ifbench-over-engine", "option-over-all", "none"])
def test_the_shard_entry_records_the_run_id_and_where_it_came_from(pytester, stub_server, engine, env, extra,
                                                                   run, source):
    """The option wins, then IFBENCH_RUN_ID, then an engine's id that every shard of one run shares; under -n
    the controller writes what its workers computed. Without any, the entry has no run id."""
    _suite.write(pytester.path)
    shard = _shard(pytester, stub_server, engine, 1, 2, env, *extra)["shard"]
    assert (shard.get("run"), shard.get("run_source")) == (run, source)
    assert shard["index"] == 1 and shard["assignment"]



@pytest.mark.parametrize("env, extra, said", [
    ({"GITHUB_RUN_ID": "9001"}, [], "run '9001' (from GITHUB_RUN_ID)"),
    ({"GITHUB_RUN_ID": "9001"}, ["-n", "2"], "run '9001' (from GITHUB_RUN_ID)"),
    ({}, [], "no run id: give every shard of the run the same IFBENCH_RUN_ID"),
], ids=["github", "github-xdist", "none"])
def test_a_shard_says_which_shard_of_which_run_it_was(pytester, stub_server, engine, env, extra, said):
    """The shard's terminal says what it ran and of which run; without an id it says how to give one (a team
    learnt it had none only from the merge, after every shard had run)."""
    _suite.write(pytester.path)
    with engine.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        result = pytester.runpytest("suites", *stub_args(stub_server), "--ifbench-shard=2/2",
                                    "--ifbench-results=shard-2.json", "--ifbench-cache=cache", *extra)
    drawn = sum(index == 2 for index in json.loads((pytester.path / "shard-2.json").read_text())["shard"]
                ["assignment"].values())
    (line,) = [line for line in result.outlines if line.startswith("ifbench: shard ")]
    assert line.startswith(f"ifbench: shard 2/2 (from --ifbench-shard): {drawn} of ") and said in line

def test_a_slurm_array_s_shards_carry_its_job_id(pytester, stub_server, engine):
    """A SLURM array task's shard and run id both come from the engine: the array's job id, not the task's."""
    _suite.write(pytester.path)
    env = {"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "2", "SLURM_ARRAY_TASK_MIN": "3",
           "SLURM_ARRAY_JOB_ID": "5150", "SLURM_JOB_ID": "5152"}
    with engine.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        pytester.runpytest("suites", *stub_args(stub_server), "--ifbench-results=task.json")
    shard = json.loads((pytester.path / "task.json").read_text())["shard"]
    assert (shard["index"], shard["count"], shard["run"], shard["run_source"]) == (2, 2, "5150", "SLURM_ARRAY_JOB_ID")


def test_merge_refuses_a_stale_shard_of_another_run(pytester, stub_server, engine, capsys):
    """Tonight's shard 1 and last night's shard 2 (its upload failed tonight: the shared folder still holds the
    old one) have the same split and settings: the merge mixed two runs. It refuses, naming both files, both ids
    and what to do, and writes nothing; the re-run attempt of tonight's failed job (same GITHUB_RUN_ID) merges,
    and the merged file carries the run id."""
    _suite.write(pytester.path)
    _shard(pytester, stub_server, engine, 2, 2, {"GITHUB_RUN_ID": "199"})  # last night
    _shard(pytester, stub_server, engine, 1, 2, {"GITHUB_RUN_ID": "200"})  # tonight
    capsys.readouterr()
    assert _merge(pytester, 1, 2) == 2
    err = capsys.readouterr().err
    assert "shard-1.json (shard 1/2) and " in err and "shard-2.json (shard 2/2) are parts of different runs" in err
    assert "run id '200' (from GITHUB_RUN_ID) vs run id '199' (from GITHUB_RUN_ID)" in err
    assert "is one of them left from another run" in err
    assert "set IFBENCH_RUN_ID (or --ifbench-run-id) to one value for every shard of the run" in err
    assert not (pytester.path / "merged.json").exists()

    _shard(pytester, stub_server, engine, 2, 2, {"GITHUB_RUN_ID": "200", "GITHUB_RUN_ATTEMPT": "2"})
    capsys.readouterr()
    assert _merge(pytester, 1, 2) == 0, capsys.readouterr().err
    merged = json.loads((pytester.path / "merged.json").read_text())
    assert merged["run"] == "200" and len(merged["instances"]) == _suite.INSTANCES
    assert [part["run"] for part in merged["merged_from"]] == ["200", "200"]
    assert "ifbench merge: note" not in capsys.readouterr().err


def test_a_resubmitted_slurm_task_is_refused_until_the_run_id_is_given(pytester, stub_server, engine, capsys):
    """A SLURM task re-submitted on its own is a new array (a new SLURM_ARRAY_JOB_ID): refused, saying so; with
    IFBENCH_RUN_ID set to one value for every task, the same shards merge."""
    _suite.write(pytester.path)
    _shard(pytester, stub_server, engine, 1, 2, {"SLURM_ARRAY_JOB_ID": "5150"})
    _shard(pytester, stub_server, engine, 2, 2, {"SLURM_ARRAY_JOB_ID": "5188"})
    capsys.readouterr()
    assert _merge(pytester, 1, 2) == 2
    err = capsys.readouterr().err
    assert "run id '5150' (from SLURM_ARRAY_JOB_ID) vs run id '5188' (from SLURM_ARRAY_JOB_ID)" in err
    assert "a re-submitted SLURM task a new SLURM_ARRAY_JOB_ID" in err

    for index, job in ((1, "5150"), (2, "5188")):
        _shard(pytester, stub_server, engine, index, 2, {"SLURM_ARRAY_JOB_ID": job, "IFBENCH_RUN_ID": "exp-3"})
    assert _merge(pytester, 1, 2) == 0, capsys.readouterr().err
    assert json.loads((pytester.path / "merged.json").read_text())["run"] == "exp-3"


def test_files_without_a_run_id_are_not_compared_and_are_noted(pytester, stub_server, engine, capsys):
    """A file without a run id (an older version's, or a shard re-run by hand where no engine gives one) is not
    refused: the merge says it could not check it, on its output and in the merged summary. Files that have
    one are still compared with each other, wherever a file without one stands among them."""
    _suite.write(pytester.path)
    _shard(pytester, stub_server, engine, 1, 3, {})  # re-run by hand
    _shard(pytester, stub_server, engine, 2, 3, {"CI_PIPELINE_ID": "31"})
    _shard(pytester, stub_server, engine, 3, 3, {"CI_PIPELINE_ID": "31"})
    capsys.readouterr()
    assert _merge(pytester, 1, 2, 3) == 0
    said = capsys.readouterr()  # a note is a warning: on stderr, not in the merged run's summary on stdout
    assert ("ifbench merge: note: " + str(pytester.path / "shard-1.json") + " (shard 1/3): no run id, so not "
            "checked against the others' (run id '31' (from CI_PIPELINE_ID))") in said.err
    assert "IFBENCH_RUN_ID=31" in said.err and "ifbench merge: note" not in said.out
    merged = json.loads((pytester.path / "merged.json").read_text())
    assert merged["run"] == "31"
    assert ["run" in part for part in merged["merged_from"]] == [False, True, True]
    assert "no run id, so not checked" in (pytester.path / "merged-summary.md").read_text()

    _shard(pytester, stub_server, engine, 3, 3, {"CI_PIPELINE_ID": "30"})  # a stale file after the one without
    capsys.readouterr()
    assert _merge(pytester, 1, 2, 3) == 2
    assert "run id '31' (from CI_PIPELINE_ID) vs run id '30' (from CI_PIPELINE_ID)" in capsys.readouterr().err
