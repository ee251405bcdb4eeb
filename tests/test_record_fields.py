"""Every record carries the fields docs/results-format.md's Record table documents: a reader can index them.

A record that was not an error had no ``error_kind`` key, though the table documents ``error``, ``error_kind``
as ``str | null`` on every record (a reader's ``record["error_kind"]`` raised KeyError).
"""

from __future__ import annotations

import json
import re

import pytest

from pytest_ifbench.cli.main import main as ifbench
from pytest_ifbench.reports.results_reader import read_results_text
from pytest_ifbench.testing import Fault, Reply
from tests._support import ROOT, demo_suite, stub_args, write_suite

_ANY = {"id": "any", "verifier": "ifbench.word_count", "params": {"min": 1}}
_SUITE = demo_suite(
    {"id": "passes", "prompt": "say anything", "checks": [_ANY]},
    {"id": "fails", "prompt": "say it loud", "checks": [{"id": "upper", "verifier": "ifbench.case",
                                                          "params": {"mode": "upper"}}]},
    {"id": "model-error", "prompt": "boom", "checks": [_ANY]},
    {"id": "judge-error", "prompt": "be polite", "checks": [
        _ANY, {"id": "polite", "verifier": "ifbench.judge", "params": {"criterion": "is polite"}}]},
)
_STATUS = {"passes": ("passed", None), "fails": ("failed", None), "model-error": ("error", "model"),
           "judge-error": ("error", "judge")}


def _record_table() -> tuple[set[str], str]:
    """The fields of a record the table documents (file-level and nested rows left out), and the text after it."""
    text = (ROOT / "docs" / "results-format.md").read_text(encoding="utf-8")
    section = text.split("## Record (one per instance)", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    fields = set()
    for row in rows:
        first = row.split(" | ")[0]
        if "(top level)" in first:
            continue
        fields |= {name for name in re.findall(r"`([^`]+)`", first) if "." not in name and "[" not in name}
    after = section.split(rows[-1], 1)[1]
    return fields, " ".join(after.split())


def _names(sentence: str) -> set[str]:
    return set(re.findall(r"`([a-z_]+)`", sentence))


def _expected_absent(record: dict, after_table: str) -> set[str]:
    """The fields the text after the table says this record may lack."""
    only_as_rows_say = _names(after_table.split("which are there only as their rows say", 1)[0])
    absent = only_as_rows_say
    if record["status"] == "error" and not record["turns"]:
        before_a_turn = after_table.split("errored before it had a turn to score", 1)[1].split(".", 1)[0]
        absent |= _names(before_a_turn.split(" has no ", 1)[1]) - {"error_kind"}
    return absent


def _check(records: list[dict], where: str) -> None:
    documented, after_table = _record_table()
    assert {"error", "error_kind", "errored_checks", "paid_calls", "ended", "samples"} <= documented
    by_id = {r["instance"]: r for r in records}
    assert set(by_id) == set(_STATUS), where
    for instance, (status, kind) in _STATUS.items():
        record = by_id[instance]
        assert (record["status"], record["error_kind"]) == (status, kind), (where, instance)
        missing = documented - set(record) - _expected_absent(record, after_table)
        assert not missing, f"{where}: {instance}'s record lacks the documented {sorted(missing)}"
    assert by_id["passes"]["error"] is None and by_id["fails"]["error"] is None
    assert by_id["judge-error"]["errored_checks"], "an instance that ran and then errored names its checks"


def _run(pytester, stub_env, *extra: str):
    stub_env.add_rule("REQUIREMENTS", Reply(content="no json here"))  # the judge answers garbage
    stub_env.add_rule("", Reply(content="hello there"))
    stub_env.inject_faults(Fault(kind="status", status=400, message="bad request"), match="^boom$")
    return pytester.runpytest("suites", *stub_args(stub_env), "--judge-model=openai/stub", *extra)


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "n2"])
def test_every_record_has_every_documented_field(pytester, stub_env, xdist):
    """A passed, a failed, a model-errored and a judge-errored instance: in the results file (assembled from the
    journal, whose lines are the same records) and in a merge of shards."""
    write_suite(pytester.path, "suites/demo.yaml", _SUITE)
    _run(pytester, stub_env, "--ifbench-results=run.json", *xdist)
    _check(json.loads((pytester.path / "run.json").read_text())["instances"], "results file")
    for index in (1, 2):
        _run(pytester, stub_env, f"--ifbench-shard={index}/2", f"--ifbench-results=shard-{index}.json", *xdist)
    shards = [str(pytester.path / f"shard-{i}.json") for i in (1, 2)]
    assert ifbench(["merge", "--out", str(pytester.path / "merged.json"), *shards, "--expect", "2"]) == 0
    _check(json.loads((pytester.path / "merged.json").read_text())["instances"], "merged file")


def test_a_journal_line_has_every_documented_field(pytester, stub_env):
    """The journal's lines are the records as they finish (what ``ifbench merge`` reads of a killed run): a
    conftest copies it before the run's end assembles the results file from it and removes it."""
    write_suite(pytester.path, "suites/demo.yaml", _SUITE)
    pytester.makeconftest('''
import pathlib, shutil, time, pytest
from pytest_ifbench.reports import results_stream
results_stream.FLUSH_SECONDS = 0.0

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    journal = pathlib.Path("run.partial.jsonl")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(journal.read_text().splitlines()) < 5:
        time.sleep(0.05)
    shutil.copy(journal, "journal-copy.jsonl")
''')
    _run(pytester, stub_env, "--ifbench-results=run.json")
    _check(read_results_text((pytester.path / "journal-copy.jsonl").read_text())["instances"], "journal")


def test_older_files_without_error_kind_are_still_read_and_merged(tmp_path, capsys):
    """Files written before every record had ``error_kind``: the reader and ``ifbench merge`` take them."""
    record = {"nodeid": "s.yaml::x", "suite": "s.yaml", "benchmark": "b", "instance": "x", "model": "m",
              "judges": ["m"], "status": "passed", "error": None, "turns": [], "checks": [],
              "tokens": {"prompt": 1, "completion": 1}, "cost": None, "durations": {}}
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": 1, "model": "m", "judges": ["m"], "instances": [record]}))
    assert "error_kind" not in read_results_text(old.read_text())["instances"][0]
    assert ifbench(["merge", "--out", str(tmp_path / "merged.json"), str(old)]) == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "merged.json").read_text())["instances"][0]["nodeid"] == "s.yaml::x"
