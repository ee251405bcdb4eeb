"""Run settings of official ManyIH files: the paper's budget and the authors' evaluator defaults."""

from __future__ import annotations

import json

from pytest_ifbench.benchmarks.manyih.assemble import AUTHORS_GENERATION, official_suite
from tests._support import shared_sample


def test_official_files_default_to_the_authors_generation_settings():
    data = json.loads(shared_sample("manyih-coding-sample.json").read_text(encoding="utf-8"))
    generation = official_suite(data)["defaults"]["generation"]
    assert generation == {"temperature": 0.0, "max_tokens": 40960, "reasoning_effort": "high"} == AUTHORS_GENERATION
    assert official_suite(data, max_tokens=2048)["defaults"]["generation"]["max_tokens"] == 2048
