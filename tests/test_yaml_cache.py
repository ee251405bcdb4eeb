"""Parsed suite files kept between runs: same data back, nothing trusted that could run code."""

from __future__ import annotations

import datetime
import os
import pickle

import pytest

from pytest_ifbench.suite import yaml_cache as _yaml_cache
from pytest_ifbench.suite.safe_yaml import YamlLimitError, load_yaml, within_limits

SUITE = b"ifbench: 1\nwhen: 2024-05-01\nat: 2024-05-01 10:00:00+02:00\nshared: &a [1, 2.5, x, null, true]\n" \
        b"again: *a\nblob: !!binary aGVsbG8=\nset: !!set {a, b}\n"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("PYTEST_IFBENCH_YAML_CACHE", raising=False)
    return tmp_path / "pytest-ifbench" / "yaml"


def test_a_second_load_is_served_from_the_cache_with_the_same_data(private_cache, monkeypatch):
    first = load_yaml(SUITE)
    assert len(list(private_cache.glob("*.pickle"))) == 1 and _yaml_cache.known(SUITE)
    monkeypatch.setattr("pytest_ifbench.suite.safe_yaml.check_shape", None)  # a hit skips both passes
    monkeypatch.setattr("pytest_ifbench.suite.safe_yaml.yaml", None)
    second = load_yaml(SUITE)
    assert second == first and second is not first
    assert second["when"] == datetime.date(2024, 5, 1) and second["at"].utcoffset() == datetime.timedelta(hours=2)
    assert second["again"] is second["shared"]  # aliases stay shared, as the loader builds them
    assert second["blob"] == b"hello" and second["set"] == {"a", "b"}


def test_a_damaged_or_planted_entry_is_ignored(private_cache, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    load_yaml(SUITE)
    [entry] = private_cache.glob("*.pickle")

    class Evil:
        def __reduce__(self):
            return (os.system, ("touch planted",))

    for content in (b"not a pickle", pickle.dumps(Evil()), b""):
        entry.write_bytes(content)
        assert _yaml_cache.get(SUITE) is _yaml_cache.MISS
        assert load_yaml(SUITE)["shared"] == [1, 2.5, "x", None, True]  # parsed again, and kept again
    assert not os.path.exists("planted")


def test_documents_over_the_limits_are_never_kept(private_cache):
    bomb = b"a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + b"".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n".encode() for i in range(1, 10))
    for _ in range(2):
        with pytest.raises(YamlLimitError):
            load_yaml(bomb)
        with pytest.raises(YamlLimitError):
            within_limits(bomb)
    assert not private_cache.exists()


def test_the_cache_can_be_switched_off_and_is_pruned(private_cache, monkeypatch):
    monkeypatch.setenv("PYTEST_IFBENCH_YAML_CACHE", "0")
    load_yaml(SUITE)
    assert not private_cache.exists()
    monkeypatch.delenv("PYTEST_IFBENCH_YAML_CACHE")
    monkeypatch.setattr(_yaml_cache, "MAX_ENTRIES", 3)
    for n in range(6):
        load_yaml(b"ifbench: 1\nn: %d\n" % n)
    assert len(list(private_cache.glob("*.pickle"))) == 3


@pytest.mark.parametrize("deep", [
    b"x: " + b"[" * 100_000 + b"]" * 100_000 + b"\n",  # flow: libyaml >= 0.2.6 refuses it while scanning ahead
    b"x:\n" + b"".join(b"  " * i + b"k:\n" for i in range(1, 1_500)),  # block
    b"x: " + b"[" * 101 + b"]" * 101 + b"\n",  # over our limit, under libyaml's
], ids=["flow-100k", "block-1500", "flow-101"])
def test_deep_nesting_is_refused_as_over_the_limit_whatever_libyaml_version(private_cache, deep):
    """PyYAML 6.0.4's libyaml has its own nesting limit (1,000): its scanner error is our limit error too."""
    for check in (load_yaml, within_limits):
        with pytest.raises(YamlLimitError, match="nested more than 100 levels deep"):
            check(deep)
    assert not private_cache.exists()


def test_equal_strings_are_held_once_parsed_and_from_the_cache(private_cache):
    text = b"ifbench: 1\ninstances:\n" + b"".join(
        b"  - {id: i%d, prompt: same words, checks: [{id: c, verifier: ifbench.case, params: {mode: upper}}]}\n" % n
        for n in range(3))
    for _ in range(2):  # parsed, then read back from the cache
        first, second, third = load_yaml(text)["instances"]
        assert first["prompt"] is second["prompt"] is third["prompt"]
        assert first["checks"][0]["verifier"] is third["checks"][0]["verifier"]
        assert list(first["checks"][0]["params"])[0] is list(second["checks"][0]["params"])[0]  # keys too
        assert first["id"] == "i0" and third["id"] == "i2"
