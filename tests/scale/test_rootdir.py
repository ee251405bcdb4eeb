"""The run's root (and so every node id and a shard's split) does not move with how an option is spelled:
pytest reads ``--ifbench-cache DIR`` as a path to test when DIR exists, before the plugin adds the option
(found by a user whose re-run shard ran other shards' instances once its cache directory existed)."""

from __future__ import annotations

import pytest

from tests._support import write_suite

SUITE = """
ifbench: 1
benchmark: roots
instances:
  - {id: a, prompt: one, checks: [{id: c, verifier: ifbench.word_count, params: {min: 1}}]}
  - {id: b, prompt: two, checks: [{id: c, verifier: ifbench.word_count, params: {min: 1}}]}
"""


@pytest.fixture
def outside(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> str:
    """A project run from its own directory, and an existing cache directory beside it."""
    write_suite(pytester.path / "proj", "suites/roots.yaml", SUITE)
    cache = pytester.path / "cache"
    cache.mkdir()
    monkeypatch.chdir(pytester.path / "proj")
    return str(cache)


def test_a_shard_whose_root_an_option_moved_is_refused_with_the_fix(pytester, outside):
    result = pytester.runpytest("suites", "--collect-only", "-q", "--ifbench-shard=1/2", "--ifbench-cache", outside)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*pytest rooted this run at {pytester.path} instead of {pytester.path / 'proj'}*"
                                 f"`--ifbench-cache {outside}` was taken for a path to test*"
                                 f"write `--ifbench-cache={outside}`*this shard would not run the instances*"])


def test_the_same_option_with_an_equals_sign_keeps_the_root_and_the_node_ids(pytester, outside):
    result = pytester.runpytest("suites", "--collect-only", "-q", "--ifbench-shard=1/1", f"--ifbench-cache={outside}")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["suites/roots.yaml::a", "suites/roots.yaml::b"])
    assert "rooted this run" not in result.stdout.str() + result.stderr.str()


def test_an_unsharded_run_is_warned_that_its_node_ids_moved(pytester, outside):
    result = pytester.runpytest("suites", "--collect-only", "-q", "--ifbench-cache", outside)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["proj/suites/roots.yaml::a", "*PytestConfigWarning*rooted this run at*"
                                 "these results pair with no run rooted at*"])
