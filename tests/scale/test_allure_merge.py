"""Allure result folders of shards merge by copying them into one folder (docs/scale.md says so)."""

from __future__ import annotations

import json
import shutil
from collections import Counter

from tests._support import stub_args
from tests.scale import _suite


def _results(folder) -> Counter:
    """What the report shows: each result's test and status, and the attachments it links."""
    found = Counter()
    for path in folder.glob("*-result.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        found[(data["fullName"], data["status"], len(data.get("attachments") or []),
               len(data.get("steps") or []))] += 1
    return found


def test_shard_allure_folders_merge_by_copying(pytester, stub_server):
    _suite.write(pytester.path)
    pytester.runpytest("suites", *stub_args(stub_server, f"--alluredir={pytester.path / 'single'}"))
    merged = pytester.path / "merged"
    merged.mkdir()
    for index in (1, 2, 3):
        folder = pytester.path / f"shard-{index}"
        pytester.runpytest("suites", *stub_args(stub_server, f"--ifbench-shard={index}/3", f"--alluredir={folder}"))
        for path in folder.iterdir():
            if (merged / path.name).exists():  # results and attachments have unique names; the run's
                assert (merged / path.name).read_bytes() == path.read_bytes(), path.name  # environment is the same
            shutil.copy2(path, merged / path.name)
    single = pytester.path / "single"
    assert _results(merged) == _results(single) and len(_results(single)) == _suite.INSTANCES
    for pattern in ("*-result.json", "*-attachment*"):  # containers: one per suite file and shard (Allure joins them)
        assert len(list(merged.glob(pattern))) == len(list(single.glob(pattern))), pattern
    for path in merged.glob("*-result.json"):  # every attachment a result links is in the merged folder
        for attachment in json.loads(path.read_text())["attachments"]:
            assert (merged / attachment["source"]).is_file()
