"""Shards as separate pytest runs against the stub, merged with ``ifbench merge``: the same run as one."""

from __future__ import annotations

import json

import pytest

from pytest_ifbench.cli.main import main as ifbench
from tests._support import stub_args
from tests.scale import _suite


def _run(pytester, stub, *extra: str):
    return pytester.runpytest("suites", *stub_args(stub), *extra)


@pytest.fixture
def single(pytester, stub_server):
    """One run over the whole suite: its results, summary, terminal lines and the calls it made."""
    _suite.write(pytester.path)
    result = _run(pytester, stub_server, "--ifbench-results=single.json", "--ifbench-summary=single-summary.md",
                  "--ifbench-cache=cache-single")
    assert stub_server.calls == _suite.CALLS
    stub_server.reset()
    return result


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_merged_shards_equal_a_single_run(pytester, stub_server, single, count, capsys):
    sizes = []
    for index in range(1, count + 1):
        result = _run(pytester, stub_server, f"--ifbench-shard={index}/{count}",
                      f"--ifbench-results=shard-{index}.json", f"--ifbench-cache=cache-{count}")
        data = json.loads((pytester.path / f"shard-{index}.json").read_text())
        assert data["shard"]["index"] == index and data["shard"]["count"] == count
        sizes.append(len(data["instances"]))
        assert result.ret in (0, 1)
    assert sum(sizes) == _suite.INSTANCES and max(sizes) - min(sizes) <= 1
    assert stub_server.calls == _suite.CALLS, "every instance ran in exactly one shard, every sample and turn once"

    capsys.readouterr()
    shards = [str(pytester.path / f"shard-{i}.json") for i in range(1, count + 1)]
    assert ifbench(["merge", "--out", str(pytester.path / "merged.json"), *shards, "--expect", str(count)]) == 0
    printed = capsys.readouterr().out.splitlines()

    merged, one = pytester.path / "merged.json", pytester.path / "single.json"
    assert _suite.verdicts_of(merged) == _suite.verdicts_of(one)
    assert _suite.summary_tables(pytester.path / "merged-summary.md") == \
        _suite.summary_tables(pytester.path / "single-summary.md")
    assert (pytester.path / "merged-summary" / "scaled" / "isr_csr_by_category.png").is_file()
    assert _suite.terminal_tables(printed) == _suite.terminal_tables(single.outlines)
    tokens = [sum(r["tokens"]["prompt"] + r["tokens"]["completion"] for r in json.loads(p.read_text())["instances"])
              for p in (merged, one)]
    assert tokens[0] == tokens[1] > 0


def test_xdist_inside_a_shard(pytester, stub_server):
    _suite.write(pytester.path)
    alone = _run(pytester, stub_server, "--ifbench-shard=2/3", "--ifbench-results=plain.json", "--ifbench-cache=c1")
    with_workers = _run(pytester, stub_server, "--ifbench-shard=2/3", "--ifbench-results=xdist.json",
                        "--ifbench-cache=c2", "-n", "2")
    assert alone.ret == with_workers.ret
    plain = json.loads((pytester.path / "plain.json").read_text())
    xdist = json.loads((pytester.path / "xdist.json").read_text())
    assert xdist["shard"] == plain["shard"], "the controller stamps the split its workers computed"
    assert _suite.verdicts_of(pytester.path / "xdist.json") == _suite.verdicts_of(pytester.path / "plain.json")


def test_shard_from_the_engines_variables(pytester, stub_server, monkeypatch):
    _suite.write(pytester.path)
    _run(pytester, stub_server, "--ifbench-shard=3/3", "--ifbench-results=option.json", "--ifbench-cache=c")
    for name, env in {
        "ifbench": {"IFBENCH_SHARD": "3", "IFBENCH_SHARDS": "3"},
        "k8s": {"JOB_COMPLETION_INDEX": "2", "IFBENCH_SHARDS": "3"},
        "slurm": {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "1"},
    }.items():
        with monkeypatch.context() as patch:
            for key, value in env.items():
                patch.setenv(key, value)
            _run(pytester, stub_server, f"--ifbench-results={name}.json", "--ifbench-cache=c")
        data = json.loads((pytester.path / f"{name}.json").read_text())
        assert data["shard"]["index"] == 3 and data["shard"]["count"] == 3, name
        assert _suite.verdicts_of(pytester.path / f"{name}.json") == _suite.verdicts_of(pytester.path / "option.json")


def test_bad_shard_is_a_usage_error(pytester, stub_server, monkeypatch):
    _suite.write(pytester.path)
    result = _run(pytester, stub_server, "--ifbench-shard=4/3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ifbench-shard: shard 4 of 3 is out of range*"])
    monkeypatch.setenv("IFBENCH_SHARD", "2")
    result = _run(pytester, stub_server)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*IFBENCH_SHARD is set but IFBENCH_SHARDS (the number of shards) is not: set "
                                 "IFBENCH_SHARDS to the number of jobs to run one shard per task, or give "
                                 "--ifbench-shard=1/1 to run every instance*"])


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "n2"])
def test_an_empty_shard_still_writes_its_results_file_and_succeeds(pytester, stub_server, xdist):
    """A shard the split gave no instance ran and had nothing to do: it exited 5 (no tests ran), which the
    CI examples (``|| [ $? -eq 1 ]``) took for a failed job. It exits 0; a selection with no instance at all
    (``-k`` matching none, an empty directory) is not the split's doing and keeps pytest's 5."""
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "one.yaml").write_text(_suite.suite_text(1).split("  - id: dialogue")[0])
    result = _run(pytester, stub_server, "--ifbench-shard=2/2", "--ifbench-results=empty.json", *xdist)
    assert result.ret == pytest.ExitCode.OK
    data = json.loads((pytester.path / "empty.json").read_text())
    assert data["instances"] == [] and data["shard"]["assignment"] == {"suites/one.yaml::q0": 1}
    result = _run(pytester, stub_server, "--ifbench-shard=1/2", "-k", "no_such_instance", *xdist)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    (pytester.path / "nothing").mkdir()
    result = pytester.runpytest("nothing", *stub_args(stub_server), "--ifbench-shard=1/2", *xdist)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert stub_server.calls == 0


def test_a_shard_writes_its_entry_with_the_results_file_and_never_reads_it_back(pytester, stub_server,
                                                                                 monkeypatch):
    """The shard entry goes in as the journal is assembled (``pytest_ifbench_results_meta``): the file
    was read back whole and written again to put it first, ~3x the file in memory at a run's end."""
    import pathlib

    _suite.write(pytester.path)
    read_back = []
    original = pathlib.Path.read_text

    def read_text(self, *args, **kwargs):
        if self.name == "shard.json":
            read_back.append(str(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "read_text", read_text)
    _run(pytester, stub_server, "--ifbench-shard=1/2", "--ifbench-results=shard.json")
    assert read_back == [], "the run read its results file back"
    monkeypatch.undo()
    data = json.loads((pytester.path / "shard.json").read_text())
    assert data["shard"]["index"] == 1 and data["shard"]["count"] == 2 and data["instances"]
    assert list(data)[:4] == ["format", "plugin_version", "shard", "model"]


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "n2"])
def test_a_killed_shard_s_journal_merges_its_finished_instances(tmp_path, stub_env, xdist, capsys):
    """Shard 2 of 3 killed (SIGKILL, as a CI job out of time) after its first records: its journal says which
    shard it is, so the merge takes the instances it finished and lists only the others as not run (it
    named shard 2 as missing, every instance of it not run). Under -n the controller learns the split only
    at the end: the journal's entry has no assignment and the merge takes it from the other shards."""
    import os
    import subprocess
    import sys

    from pytest_ifbench.reports.results_reader import read_results_text
    from pytest_ifbench.testing import Reply
    from tests._support import FAKE_KEY, bulk_suite, write_suite

    stub_env.add_rule("", Reply(content="hello there", latency=0.3))
    write_suite(tmp_path, "suites/bulk.yaml", bulk_suite(30))
    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY, PYTEST_ADDOPTS="")

    def shard(index: int, *extra: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "pytest", "suites", *stub_args(stub_env),
                                 f"--ifbench-shard={index}/3", f"--ifbench-results=shard-{index}.json",
                                 "--ifbench-concurrency=1", "-q", *extra], cwd=tmp_path, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    for index in (1, 3):
        assert shard(index).wait(timeout=300) in (0, 1)
    killed = shard(2, *xdist)
    journal = tmp_path / "shard-2.partial.jsonl"
    header = _suite.kill_after_records(killed, journal)
    assert header["shard"]["index"] == 2 and header["shard"]["count"] == 3
    assert ("assignment" in header["shard"]) == (not xdist)
    finished = {r["nodeid"] for r in read_results_text(journal.read_text(encoding="utf-8"))["instances"]}
    split = json.loads((tmp_path / "shard-1.json").read_text())["shard"]["assignment"]
    unfinished = sorted(n for n, i in split.items() if i == 2 and n not in finished)
    assert finished and unfinished

    out = tmp_path / "merged.json"
    code = ifbench(["merge", "--out", str(out), str(tmp_path / "shard-1.json"), str(journal),
                    str(tmp_path / "shard-3.json"), "--expect", "3"])
    err = capsys.readouterr().err
    assert code == 1 and "did not finish" in err and "is missing" not in err, err
    merged = json.loads(out.read_text())
    assert merged["not_run"] == unfinished
    assert len(merged["instances"]) == len(split) - len(unfinished)
    assert [part.get("unfinished", False) for part in merged["merged_from"]] == [False, True, False]
    summary = (tmp_path / "merged-summary.md").read_text()  # what the merge job publishes says it too
    assert "**shard-2.partial.jsonl did not finish**" in summary
    assert f"**{len(unfinished)} instance(s) not run**: `{unfinished[0]}`" in summary
    if xdist:
        return
    # The GitHub Actions example's merge step, run by bash on the artifacts as download-artifact lays them out
    import shutil

    import yaml

    from tests._support import ROOT

    workflow = yaml.safe_load((ROOT / "examples" / "scale" / "github-actions.yml").read_text())
    script = next(step["run"] for step in workflow["jobs"]["merge"]["steps"] if "ifbench merge" in step.get("run", ""))
    ci = tmp_path / "ci"
    for index, name in ((1, "shard-1.json"), (2, "shard-2.partial.jsonl"), (3, "shard-3.json")):
        (ci / "shards" / f"shard-{index}" / "allure-results").mkdir(parents=True)
        shutil.copy(tmp_path / name, ci / "shards" / f"shard-{index}" / name)
    bin_dir = os.path.dirname(sys.executable)
    done = subprocess.run(["bash", "-e", "-c", script], cwd=ci, capture_output=True, text=True,
                          env={**env, "SHARDS": "3", "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert done.returncode == 1 and "did not finish" in done.stderr, done.stderr  # named, and published after
    assert json.loads((ci / "merged.json").read_text())["not_run"] == unfinished
    assert (ci / "merged-summary.md").is_file()
