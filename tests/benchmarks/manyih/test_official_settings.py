"""Run settings of official ManyIH files: the paper's budget and the authors' evaluator defaults."""

from __future__ import annotations

import json

import pytest

from pytest_ifbench.benchmarks.manyih.assemble import AUTHORS_GENERATION, official_suite
from tests._support import shared_sample


def test_official_files_default_to_the_authors_generation_settings():
    data = json.loads(shared_sample("manyih-coding-sample.json").read_text(encoding="utf-8"))
    generation = official_suite(data)["defaults"]["generation"]
    assert generation == {"temperature": 0.0, "max_tokens": 40960, "reasoning_effort": "high"} == AUTHORS_GENERATION
    assert official_suite(data, max_tokens=2048)["defaults"]["generation"]["max_tokens"] == 2048


@pytest.mark.parametrize("edit, said", [
    (lambda sample: sample.pop("id"), "data[2].id: required (a string or an integer), got None"),
    (lambda sample: sample["instructions"][0].update(privilege="high"),
     "data[2].instructions[0].privilege: expected a number, got 'high'"),
    (lambda sample: sample.update(metadata="oops"), "data[2].metadata: expected a mapping, got 'oops'"),
], ids=["no-id", "privilege-as-text", "metadata-as-text"])
def test_a_malformed_official_sample_is_a_collection_error_naming_file_sample_and_field(pytester, edit, said):
    """A sample without an id was collected silently as ``coding-None-ordinal``; a privilege given as text
    crashed the importer (a warning, the file left alone, then "not found")."""
    data = json.loads(shared_sample("manyih-coding-sample.json").read_text(encoding="utf-8"))
    edit(data["data"][2])
    (pytester.path / "coding.json").write_text(json.dumps(data), encoding="utf-8")
    result = pytester.runpytest("coding.json", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    text = result.stdout.str()
    assert "coding.json" in text and said in text and "SuiteImportWarning" not in text, text[-1500:]

