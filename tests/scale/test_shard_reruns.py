"""A shard that drew instances and recorded none (interrupted before its first instance finished, or its items
deselected after the split) wrote an empty results file: over an earlier complete attempt's, losing its
results. Only a shard whose split gave it no instance writes an empty file (tests/scale/test_shards.py)."""

from __future__ import annotations

import json
import textwrap

import pytest

from pytest_ifbench.cli.main import main as ifbench
from tests._support import stub_args
from tests.scale import _suite

#: conftest.py texts that make a shard record no instance of those it drew, and the exit status they give.
_RECORDING_NONE = {
    "interrupted": ("""
        def pytest_runtest_setup(item):
            raise KeyboardInterrupt  # Ctrl-C before the first instance finished
        """, pytest.ExitCode.INTERRUPTED),
    "deselected-after-split": ("""
        import pytest

        @pytest.hookimpl(wrapper=True, tryfirst=True)  # outside the shard's own wrapper: after the split
        def pytest_collection_modifyitems(config, items):
            result = yield
            config.hook.pytest_deselected(items=list(items))
            items[:] = []
            return result
        """, pytest.ExitCode.NO_TESTS_COLLECTED),
}


def _shard(pytester, stub, index: int):
    """Run shard ``index`` of 3 in this process (pytester re-raises a Ctrl-C of the run unless told not to)."""
    return pytester.runpytest("suites", *stub_args(stub), f"--ifbench-shard={index}/3",
                              f"--ifbench-results=shard-{index}.json", "--ifbench-cache=cache", no_reraise_ctrlc=True)


def _merge(pytester, *indices: int) -> int:
    files = [str(pytester.path / f"shard-{index}.json") for index in indices]
    return ifbench(["merge", "--out", str(pytester.path / "merged.json"), "--expect", "3", *files])


@pytest.mark.parametrize("how", sorted(_RECORDING_NONE))
def test_a_shard_that_recorded_none_of_its_instances_writes_no_results_file(pytester, stub_server, capsys, how):
    """First attempt of shard 2 records nothing: no file (the merge names shard 2 missing and lists its
    instances, not a shard present with nothing run). Second attempt completes. A third records nothing again:
    the second's results file is left as it was, no journal is left, and the merge is complete."""
    conftest, status = _RECORDING_NONE[how]
    _suite.write(pytester.path)
    for index in (1, 3):
        assert _shard(pytester, stub_server, index).ret in (0, 1)
    split = json.loads((pytester.path / "shard-1.json").read_text())["shard"]["assignment"]
    drawn = sorted(nodeid for nodeid, index in split.items() if index == 2)
    assert drawn

    pytester.makeconftest(textwrap.dedent(conftest))
    assert _shard(pytester, stub_server, 2).ret == status
    assert not (pytester.path / "shard-2.json").exists(), "a shard that drew instances wrote an empty file"
    assert not (pytester.path / "shard-2.partial.jsonl").exists()
    capsys.readouterr()
    assert _merge(pytester, 1, 3) == 1
    assert "ifbench merge: shard 2 is missing" in capsys.readouterr().err
    assert json.loads((pytester.path / "merged.json").read_text())["not_run"] == drawn

    (pytester.path / "conftest.py").unlink()
    assert _shard(pytester, stub_server, 2).ret in (0, 1)
    complete = (pytester.path / "shard-2.json").read_bytes()
    assert sorted(r["nodeid"] for r in json.loads(complete)["instances"]) == drawn

    pytester.makeconftest(textwrap.dedent(conftest))
    assert _shard(pytester, stub_server, 2).ret == status
    assert (pytester.path / "shard-2.json").read_bytes() == complete, "the re-run replaced the complete results"
    assert not (pytester.path / "shard-2.partial.jsonl").exists()
    capsys.readouterr()
    assert _merge(pytester, 1, 2, 3) == 0, capsys.readouterr().err
    assert _suite.INSTANCES == len(json.loads((pytester.path / "merged.json").read_text())["instances"])
