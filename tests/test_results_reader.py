"""The results reader: a results file or journal read one record at a time, whatever the buffer cuts."""

from __future__ import annotations

import io
import json

import pytest

from pytest_ifbench.reports import results_reader
from pytest_ifbench.reports.results_reader import ResultsReader, read_results_text

RECORDS = [{"nodeid": f"s.yaml::q{i}", "status": "passed" if i % 2 else "failed", "score": 12345 + i,
            "turns": [{"response": {"raw_text": "x" * (40 * i) + "\u2028 \u00e9 \"quoted\""}}], "ok": True}
           for i in range(6)]

DOCUMENTS = {
    "compact, as a run writes it": json.dumps({"format": 1, "model": "m", "instances": RECORDS},
                                              separators=(",", ":"), ensure_ascii=False),
    "indented": json.dumps({"format": 1, "model": "m", "instances": RECORDS}, indent=2),
    "metadata after the records": json.dumps({"instances": RECORDS, "format": 1, "n": 123456, "none": None,
                                              "flag": False}),
    "no records": '{"format": 1, "instances": [ ] }\n',
    "numbers and literals the buffer cuts": '{"format":1,"n":123456789,"f":-1.5e10,"t":true,"x":null,"instances":[]}',
    "no metadata": json.dumps({"instances": RECORDS}),
}


@pytest.mark.parametrize("chunk", [1, 3, 17, 4096, results_reader.CHUNK], ids=lambda c: f"buffer-{c}")
@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_every_document_reads_as_json_does_wherever_the_buffer_cuts_it(monkeypatch, chunk, name):
    monkeypatch.setattr(results_reader, "CHUNK", chunk)
    text = DOCUMENTS[name]
    assert read_results_text(text) == json.loads(text)
    reader = ResultsReader(io.StringIO(text))
    texts = [part for _, part in reader]
    assert [json.loads(part) for part in texts] == json.loads(text)["instances"]  # each record's exact text
    assert reader.meta == {k: v for k, v in json.loads(text).items() if k != "instances"} and not reader.journal


def test_a_buffer_of_any_size_cuts_no_value(monkeypatch):
    text = DOCUMENTS["numbers and literals the buffer cuts"]
    for chunk in range(1, len(text) + 1):
        monkeypatch.setattr(results_reader, "CHUNK", chunk)
        assert read_results_text(text) == json.loads(text), f"a buffer of {chunk}"


@pytest.mark.parametrize("chunk", [1, 5, results_reader.CHUNK], ids=lambda c: f"buffer-{c}")
def test_a_journal_is_read_record_by_record_and_its_cut_last_line_is_skipped(monkeypatch, chunk):
    monkeypatch.setattr(results_reader, "CHUNK", chunk)
    lines = [json.dumps({"format": 1, "partial": True, "model": "m"})]
    lines += [json.dumps(r, ensure_ascii=False) for r in RECORDS] + [json.dumps({**RECORDS[0], "status": "rerun"})]
    text = "\n".join(lines) + '\n{"nodeid": "s.yaml::q9", "sta'  # the run was killed mid-write
    reader = ResultsReader(io.StringIO(text, newline=""))
    got = [record for record, _ in reader]
    assert reader.journal and reader.meta == {"format": 1, "model": "m"}
    assert got == [*RECORDS, {**RECORDS[0], "status": "rerun"}]  # in the file's order, the rerun too
    data = read_results_text(text)
    assert [r["nodeid"] for r in data["instances"]] == sorted(r["nodeid"] for r in RECORDS)
    assert data["instances"][0]["status"] == "rerun"  # the later record of a node id counts


@pytest.mark.parametrize("text, words", [
    ('{"format": 1, "instances": [{"nodeid": "a"}, {"nodeid": "b"', "at character"),  # a truncated file
    ('{"format": 1, "instances": []} {"more": 1}', "extra data after the JSON document"),
    ('{"format": 1, "instances": [{"nodeid": "a"} {"nodeid": "b"}]}', "expected ',' or ']'"),
    ('[1, 2]', "neither a JSON document nor a JSON Lines results journal"),
    ('', "neither a JSON document"),
    ('{"format": 1, "partial": true}\n{"nodeid": "a"}\nnot json\n{"nodeid": "b"}\n', "line 3 of the journal"),
])
def test_text_that_is_not_a_results_file_is_a_value_error_saying_where(monkeypatch, text, words):
    monkeypatch.setattr(results_reader, "CHUNK", 4)
    with pytest.raises(ValueError, match=words):
        read_results_text(text)


def test_a_record_longer_than_the_buffer_is_read_whole_without_rereading_the_file(monkeypatch):
    monkeypatch.setattr(results_reader, "CHUNK", 1024)
    big = {"nodeid": "s.yaml::big", "reply": "y" * 3_000_000}
    text = json.dumps({"format": 1, "instances": [RECORDS[0], big, RECORDS[1]]})
    handle = io.StringIO(text)
    reads: list[int] = []
    original = handle.read

    def read(size: int = -1) -> str:
        chunk = original(size)
        reads.append(len(chunk))
        return chunk

    handle.read = read  # type: ignore[method-assign]
    assert [r["nodeid"] for r, _ in ResultsReader(handle)] == ["s.yaml::q0", "s.yaml::big", "s.yaml::q1"]
    assert sum(reads) == len(text)  # every character read once
    assert len(reads) < 20  # the buffer doubled: ~12 reads for 3 MB from 1 KiB, not 3,000
