"""``ifbench merge`` refusals, each naming both files, and missing shards."""

from __future__ import annotations

import json

import pytest

from pytest_ifbench.cli.main import main as ifbench
from tests._support import small_disk, stub_args
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
    summary = (pytester.path / "merged-summary.md").read_text()
    assert "**shard 2 is missing**" in summary and f"**{len(absent)} instance(s) not run**" in summary
    assert _merge(pytester, shards["one"], shards["two"], expect=3) == 2
    assert "--expect 3, but" in capsys.readouterr().err


def test_not_a_results_file_is_refused(pytester, capsys):
    (pytester.path / "x.json").write_text('{"a": 1}')
    assert _merge(pytester, str(pytester.path / "x.json")) == 2
    assert "not a pytest-ifbench results file" in capsys.readouterr().err


def test_a_refused_merge_leaves_no_spool_behind(pytester, shards):
    assert _merge(pytester, shards["one"], shards["other"]) == 2
    assert not list(pytester.path.glob(".*merging*")) and not (pytester.path / "merged.json").exists()


def test_an_indented_shard_file_merges_as_its_compact_self(pytester, shards):
    assert _merge(pytester, shards["one"], shards["two"]) == 0
    compact = (pytester.path / "merged.json").read_bytes()
    indented = pytester.path / "two-indented.json"
    indented.write_text(json.dumps(json.loads((pytester.path / "two.json").read_text()), indent=2))
    assert _merge(pytester, shards["one"], str(indented)) == 0
    merged = json.loads((pytester.path / "merged.json").read_text())
    assert merged["instances"] == json.loads(compact)["instances"]
    assert b"\n" not in (pytester.path / "merged.json").read_bytes()  # records re-encoded on one line


def _journal(path, *records: dict) -> str:
    lines = [json.dumps({"format": 1, "partial": True, "model": "m", "judges": ["m"]})]
    path.write_text("\n".join([*lines, *map(json.dumps, records)]) + "\n")
    return str(path)


def _plain(nodeid: str, status: str) -> dict:
    return {"nodeid": nodeid, "benchmark": "b", "model": "m", "judges": ["m"], "status": status, "checks": []}


def test_a_journal_s_later_record_of_an_instance_is_the_one_compared_with_other_files(pytester, capsys):
    """A killed run's journal may hold an instance twice (a rerun): its last record counts, in the merge
    as when the journal is read whole, and only that one must agree with another file's."""
    a = _journal(pytester.path / "a.partial.jsonl", _plain("s::x", "passed"), _plain("s::y", "failed"))
    b = _journal(pytester.path / "b.partial.jsonl", _plain("s::x", "failed"), _plain("s::x", "passed"),
                 _plain("s::z", "passed"), _plain("s::z", "failed"))
    assert _merge(pytester, a, b) == 1, "journals: the run did not finish"
    merged = json.loads((pytester.path / "merged.json").read_text())
    assert [(r["nodeid"], r["status"]) for r in merged["instances"]] == \
        [("s::x", "passed"), ("s::y", "failed"), ("s::z", "failed")]
    assert [f["instances"] for f in merged["merged_from"]] == [2, 2]
    c = _journal(pytester.path / "c.partial.jsonl", _plain("s::x", "passed"), _plain("s::x", "failed"))
    assert _merge(pytester, a, c) == 2
    assert "both hold s::x with different records" in capsys.readouterr().err


def test_a_later_attempt_s_journal_beside_a_finished_file_of_the_shard(pytester, capsys):
    """The CI example's glob (``shard-*.json shard-*.partial.jsonl``) takes a finished attempt's file and a
    later attempt's journal (killed while writing its file). The same verdicts: the merge said the run was
    incomplete, though every instance was there; it is complete, with a note. Different verdicts: the
    refusal did not say which file was which, nor what to do."""
    finished = pytester.path / "shard-1.json"
    finished.write_text(json.dumps({"format": 1, "model": "m", "judges": ["m"],
                                    "instances": [_plain("s::x", "passed"), _plain("s::y", "failed")]}))
    later = _journal(pytester.path / "shard-1.partial.jsonl", _plain("s::x", "passed"))
    assert _merge(pytester, str(finished), later) == 0
    err = capsys.readouterr().err
    assert "shard-1.partial.jsonl did not finish, but finished files hold every instance it holds" in err, err
    later = _journal(pytester.path / "shard-1.partial.jsonl", _plain("s::y", "passed"))
    assert _merge(pytester, str(finished), later) == 2
    err = capsys.readouterr().err
    assert "both hold s::y with different records (shard-1.json: a finished run, " in err, err
    assert ("shard-1.partial.jsonl: a run that did not finish, " in err
            and "two attempts of one shard? Give the merge only the attempt to keep" in err), err


def test_a_merge_holds_a_view_per_instance_not_the_records(pytester, monkeypatch):
    """The shards of a run whose records carry 60 KB of prompt each: the merge reads them one at a time
    and keeps each one's compact view, as a run does (it held every record: ~4x the files' size); what
    it holds besides is a buffer and a batch of records on their way to the spool (~6 MB)."""
    import tracemalloc

    files = []
    for shard in range(3):
        records = [{**_plain(f"s::q{shard}-{i:03d}", "passed"), "checks": [{"id": "c", "passed": True}],
                    "turns": [{"index": 1, "messages": [{"role": "user", "content": f"{i} " + "p" * 60_000}],
                               "response": {"text": "ok", "raw_text": "ok"}}]} for i in range(150)]
        path = pytester.path / f"s{shard}.json"
        path.write_text(json.dumps({"format": 1, "model": "m", "judges": ["m"], "instances": records}))
        files.append(str(path))
    size = sum((pytester.path / f"s{shard}.json").stat().st_size for shard in range(3))
    assert _merge(pytester, files[0]) == 0  # what a merge imports (matplotlib for the plots) is not counted
    tracemalloc.start()
    try:
        assert _merge(pytester, *files) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(json.loads((pytester.path / "merged.json").read_text())["instances"]) == 450
    assert size > 27_000_000 and peak < 12_000_000, f"peak {peak:,} bytes for {size:,} bytes of shards"


@pytest.mark.parametrize("padding", [100_000, 30_000], ids=["while-spooling", "while-writing-the-file"])
def test_a_full_disk_under_the_merged_file_is_said_and_leaves_nothing_behind(pytester, shards, capsys, padding):
    """A real filesystem too small for the merged records (a 256 KiB tmpfs): exit 2 naming the file it
    could not write, no spool and no half-written file left (it was an internal error with a traceback,
    or a misleading "cannot read" of the shard being read)."""
    import os

    with small_disk(pytester.path / "small") as small:
        data = json.loads((pytester.path / "one.json").read_text())
        for record in data["instances"]:
            record["metadata"] = {"padding": "x" * padding}
        (pytester.path / "big.json").write_text(json.dumps(data))
        code = ifbench(["merge", "--out", str(small / "merged.json"), str(pytester.path / "big.json")])
        err = capsys.readouterr().err
        assert code == 2 and "ifbench merge: cannot write: " in err and "No space left on device" in err, err
        assert str(small) in err and "cannot read" not in err and "internal error" not in err
        assert os.listdir(small) == [], "nothing left behind"


@pytest.fixture
def parts(pytester, stub_server):
    """The suite run in parts without shard entries (``-k``, as a user splits a run by hand): ``sampled``
    alone (it sets its own temperature, 0.7), the rest, and q1 again under ``--ifbench-temperature=0.9``."""
    _suite.write(pytester.path)

    def run(name: str, *extra: str) -> str:
        result = pytester.runpytest("suites", *stub_args(stub_server, f"--ifbench-results={name}", *extra))
        assert (pytester.path / name).is_file(), result.stdout.str()[-3000:]
        assert "shard" not in json.loads((pytester.path / name).read_text())
        return str(pytester.path / name)

    return {"own": run("own.json", "-k", "sampled"), "rest": run("rest.json", "-k", "not sampled"),
            "hot": run("hot.json", "-k", "q1", "--ifbench-temperature=0.9")}


def test_an_instance_with_settings_of_its_own_is_no_difference(pytester, parts, capsys):
    """The part holding ``sampled`` has a setting the other part's instances do not: each instance's own
    settings are in its record, so the parts merge (it was "differ in generation settings for scaled")."""
    assert _merge(pytester, parts["own"], parts["rest"]) == 0, capsys.readouterr().err
    merged = json.loads((pytester.path / "merged.json").read_text())
    assert len(merged["instances"]) == _suite.INSTANCES
    (sampled,) = [r for r in merged["instances"] if r["instance"] == "sampled"]
    assert sampled["generation"]["temperature"] == 0.7


def test_an_instance_run_with_other_settings_is_refused_by_name(pytester, parts, capsys):
    """q1 is in both files, once at the suite's temperature and once under ``--ifbench-temperature=0.9``
    (the stub's replies are the same, so its verdicts agree): refused, naming it and only what differs."""
    assert _merge(pytester, parts["rest"], parts["hot"]) == 2
    error = capsys.readouterr().err
    assert "differ in generation settings for suites/scaled.yaml::q1: temperature 0.0 vs 0.9" in error, error
    assert "rest.json" in error and "hot.json" in error
    assert not (pytester.path / "merged.json").exists()
