"""Edges of shards and their merge a user found: a merge of journals only, ``--collect-only`` in a shard,
an engine's index without the number of shards."""

from __future__ import annotations

import json

import pytest

from pytest_ifbench.cli.main import main as ifbench
from pytest_ifbench.scale.shard import shard_from
from tests._support import stub_args
from tests.scale import _suite

#: The variables a shard is read from (docs/scale.md); a test sets the ones it needs.
_ENGINE_VARIABLES = ("IFBENCH_SHARD", "IFBENCH_SHARDS", "JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID",
                     "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN")


def _run(pytester, stub, *extra: str):
    return pytester.runpytest("suites", *stub_args(stub), *extra)


def test_a_merge_of_killed_shards_journals_only_is_incomplete(tmp_path, stub_env, capsys):
    """Both shards of 2, run under -n 2, killed (SIGKILL, as CI jobs out of time) after their first records:
    their journals' shard entries have no assignment, so no file says how many instances the run had. The
    merge exited 0 with nothing listed as not run; it is incomplete, names each file that did not finish and
    says that the instances not run cannot be listed (it does not write an empty ``not_run``)."""
    import os
    import subprocess
    import sys

    from pytest_ifbench.reports.results_reader import read_results_text
    from pytest_ifbench.testing import Reply
    from tests._support import FAKE_KEY, bulk_suite, write_suite

    stub_env.add_rule("", Reply(content="hello there", latency=0.3))
    write_suite(tmp_path, "suites/bulk.yaml", bulk_suite(20))
    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY, PYTEST_ADDOPTS="")
    journals = []
    for index in (1, 2):
        shard = subprocess.Popen([sys.executable, "-m", "pytest", "suites", *stub_args(stub_env),
                                  f"--ifbench-shard={index}/2", f"--ifbench-results=shard-{index}.json",
                                  "--ifbench-concurrency=1", "-q", "-n", "2"], cwd=tmp_path, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        journal = tmp_path / f"shard-{index}.partial.jsonl"
        header = _suite.kill_after_records(shard, journal)
        assert header["shard"]["index"] == index and "assignment" not in header["shard"]
        journals.append(journal)
    finished = {r["nodeid"] for j in journals for r in read_results_text(j.read_text(encoding="utf-8"))["instances"]}
    assert 0 < len(finished) < 20

    out = tmp_path / "merged.json"
    code = ifbench(["merge", "--out", str(out), *map(str, journals)])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "shard-1.partial.jsonl (shard 1/2) did not finish" in err
    assert "shard-2.partial.jsonl (shard 2/2) did not finish" in err
    assert "cannot list the instances not run: no file holds the run's split" in err
    merged = json.loads(out.read_text())
    assert {r["nodeid"] for r in merged["instances"]} == finished
    assert "not_run" not in merged, "an empty not_run would say every other instance ran"
    assert [part.get("unfinished") for part in merged["merged_from"]] == [True, True]


def test_a_journal_without_a_shard_entry_is_incomplete_and_says_so(tmp_path, capsys):
    """An unsharded run's journal (or an older version's shard): nothing says which instances it did not reach."""
    journal = tmp_path / "ifbench-results.partial.jsonl"
    record = {"nodeid": "s.yaml::x", "benchmark": "b", "model": "m", "judges": ["m"], "status": "passed",
              "checks": []}
    journal.write_text("\n".join(json.dumps(line) for line in (
        {"format": 1, "partial": True, "model": "m", "judges": ["m"]}, record)) + "\n")
    assert ifbench(["merge", "--out", str(tmp_path / "merged.json"), str(journal)]) == 1
    err = capsys.readouterr().err
    assert f"{journal} did not finish" in err
    assert f"cannot list the instances not run: {journal} has no shard entry" in err


def test_collect_only_in_a_shard_leaves_its_results_file_alone(pytester, stub_server):
    """``--collect-only`` runs nothing: it replaced the shard's results file with an empty one. As in an
    unsharded run, it writes none, and leaves the one there untouched."""
    _suite.write(pytester.path)
    _run(pytester, stub_server, "--ifbench-shard=2/3", "--ifbench-results=shard-2.json")
    results = pytester.path / "shard-2.json"
    before = results.read_bytes()
    assert json.loads(before)["instances"]
    stub_server.reset()
    for extra in ([], ["--ifbench-shard=3/3", "--ifbench-results=shard-3.json"]):
        result = _run(pytester, stub_server, "--ifbench-shard=2/3", "--ifbench-results=shard-2.json",
                      "--collect-only", *extra)
        assert result.ret == pytest.ExitCode.OK
    assert results.read_bytes() == before
    assert not (pytester.path / "shard-3.json").exists(), "a collect-only shard wrote a results file"
    assert not list(pytester.path.glob("*.partial.jsonl")) and stub_server.calls == 0


@pytest.mark.parametrize("env, names", [
    ({"JOB_COMPLETION_INDEX": "1"}, ("JOB_COMPLETION_INDEX", "IFBENCH_SHARDS")),
    ({"SLURM_ARRAY_TASK_ID": "1"}, ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT")),
], ids=["k8s", "slurm"])
def test_an_engine_s_index_without_the_number_of_shards_is_a_usage_error(pytester, stub_server, monkeypatch,
                                                                         env, names):
    """``JOB_COMPLETION_INDEX`` without ``IFBENCH_SHARDS`` ran every instance in every pod (each pod paying
    for the whole run), while ``IFBENCH_SHARD`` without it was refused: every index the plugin reads is
    refused without its count, naming both and what to set; ``--ifbench-shard`` still wins."""
    for name in _ENGINE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    index, count = names
    with pytest.raises(ValueError, match=f"{index} is set but {count} .* is not: set {count} to"):
        shard_from(None, env)
    assert shard_from("1/1", env).label == "1/1"
    _suite.write(pytester.path)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = _run(pytester, stub_server, "--ifbench-results=all.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*pytest-ifbench: {index} is set but {count} (the number of shards) is not: "
                                 f"set {count} to * or give --ifbench-shard=1/1 to run every instance*"])
    assert stub_server.calls == 0 and not (pytester.path / "all.json").exists()


def test_a_journal_pattern_that_matches_nothing_does_not_refuse_a_complete_merge(pytester, stub_server, capsys):
    """``ifbench merge --out merged.json shard-*.json shard-*.partial.jsonl`` merges a killed shard from its
    journal; when no shard was killed, a shell without nullglob passes the pattern on as it is, and the merge
    was refused ("cannot read: No such file or directory", nothing written)."""
    _suite.write(pytester.path)
    for index in (1, 2):
        assert _run(pytester, stub_server, f"--ifbench-shard={index}/2",
                    f"--ifbench-results=shard-{index}.json").ret in (0, 1)  # (some instances fail their checks)
    out, pattern = pytester.path / "merged.json", str(pytester.path / "shard-*.partial.jsonl")
    shards = [str(pytester.path / f"shard-{index}.json") for index in (1, 2)]
    capsys.readouterr()
    assert ifbench(["merge", "--out", str(out), *shards, pattern, "--expect", "2"]) == 0
    assert f"ifbench merge: note: {pattern} matched no file" in capsys.readouterr().err
    assert out.is_file()
    assert ifbench(["merge", "--out", str(out), pattern]) == 2, "a pattern alone: nothing to merge"
    assert f"no file to merge: {pattern} matched nothing" in capsys.readouterr().err
    missing = str(pytester.path / "shard-3.json")
    assert ifbench(["merge", "--out", str(out), *shards, missing]) == 2, "a file named outright must be there"
    assert "cannot read" in capsys.readouterr().err
