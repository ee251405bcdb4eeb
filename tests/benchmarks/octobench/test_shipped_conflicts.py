"""The shipped conflict suite fills Table 4 through the same conflict-attribution path as official rows:
pairs spelled as the official ``"UQ vs SP"``, sides decided by ``octobench.conflict_attribution``."""

from __future__ import annotations

import subprocess
import sys

import yaml

from pytest_ifbench.benchmarks.octobench.metrics import conflict_table
from pytest_ifbench.benchmarks.octobench.taxonomy import CONFLICT_PAIRS
from pytest_ifbench.benchmarks.octobench.verifiers import attribution
from tests._support import ROOT

SUITE = ROOT / "suites" / "octobench" / "conflicts.yaml"


def test_every_conflict_instance_uses_the_official_pair_and_the_attribution_check():
    instances = yaml.safe_load(SUITE.read_text(encoding="utf-8"))["instances"]
    assert len(instances) == 9
    for instance in instances:
        conflict = instance["metadata"]["conflict"]
        assert conflict["pair"] in CONFLICT_PAIRS, instance["id"]
        sides = [c for c in instance["checks"] if (c.get("metadata") or {}).get("conflict_side")]
        assert [c["verifier"] for c in sides] == ["octobench.conflict_attribution"] * 2, instance["id"]
        assert [c["params"]["side"] for c in sides] == ["A", "B"] and not any(c.get("scored", True) for c in sides)
        assert all(c["params"]["pair"] == conflict["pair"] and c["params"]["a"] == conflict["sources"]["A"]
                   and c["params"]["b"] == conflict["sources"]["B"] for c in sides)


def test_the_shipped_conflicts_fill_table_4():
    records = []
    for instance in yaml.safe_load(SUITE.read_text(encoding="utf-8"))["instances"]:
        checks = [{**c, "passed": c["params"]["side"] == "A", "error": None,
                   "verdict": {"passed": c["params"]["side"] == "A", "details": {}}}
                  for c in instance["checks"] if c["verifier"] == "octobench.conflict_attribution"]
        records.append({"instance": instance["id"], "status": "passed", "metadata": instance["metadata"],
                        "checks": checks})
    assert {attribution(r) for r in records} == {"A"}
    table = conflict_table(records)
    assert table is not None and [row[:2] for row in table.rows] == [(pair, 3) for pair in CONFLICT_PAIRS]


def test_the_conflict_suite_collects():
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                             str(SUITE), "--ifbench-recorded-trajectories=/nonexistent"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "9 tests collected" in result.stdout, result.stdout[-2000:] + result.stderr[-2000:]


def test_the_summary_lists_the_version_named_and_the_version_run_per_scaffold():
    from pytest_ifbench.benchmarks.octobench.metrics import scaffold_versions, tables

    def record(scaffold, runner, named, ran):
        return {"instance": "x", "status": "passed", "scaffold": scaffold, "checks": [],
                "agent": {"runner": runner, "version_named": named, "runner_version": ran}}

    records = [record("claude_code", "claude_code", "2.0.69", "2.1.330"),
               record("claude_code", "claude_code", "2.0.69", "2.1.330"),
               record("droid", "droid", None, "0.215.0"), record("kilo", "loop", "0.10.2", None)]
    table = scaffold_versions(records)
    assert table.rows == (("claude_code", "claude_code", "2.0.69", "2.1.330", 2), ("droid", "droid", "-", "0.215.0", 1),
                          ("kilo", "loop", "0.10.2", "-", 1))
    assert table.notes == ("warning: claude_code instances name claude_code 2.0.69 but 2.1.330 ran (install it "
                           "beside the pinned one: ifbench agents install claude_code@2.0.69)",)
    assert table.title in [t.title for t in tables(records)]
