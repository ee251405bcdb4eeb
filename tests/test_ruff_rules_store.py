"""Rule expansions kept on disk per ruff binary: reused, never trusted when damaged, switchable off."""

from __future__ import annotations

import json
import subprocess
import sys

from pytest_ifbench.ruff.check import _ask_ruff_for_codes, ruff_binary
from pytest_ifbench.ruff.rules_store import RuleStore

KEY = (("E501", "D2"), (("line-length", 100),))


def test_an_expansion_is_read_back_by_the_next_process(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    codes = _ask_ruff_for_codes(*KEY)
    assert "E501" in codes and "D200" in codes
    RuleStore(ruff_binary()).put(KEY, codes)
    [stored] = (tmp_path / "pytest-ifbench").glob("ruff-rules-*.json")
    assert json.loads(stored.read_text())[repr(KEY)] == sorted(codes)
    assert RuleStore(ruff_binary()).get(KEY) == codes
    # A fresh interpreter answers from the file without asking ruff (ruff's path is made unusable).
    script = (f"import pytest_ifbench.ruff.check as r; r._BINARY.append({ruff_binary()!r}); "
              f"r._ask_ruff_for_codes = None; print(sorted(r.enabled_codes(*{KEY!r})))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env={"XDG_CACHE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}).stdout
    assert out.strip() == str(sorted(codes))


def test_a_damaged_file_is_an_empty_store(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    store = RuleStore(ruff_binary())
    store.put(KEY, frozenset({"E501"}))
    [stored] = (tmp_path / "pytest-ifbench").glob("ruff-rules-*.json")
    for damage in ("{not json", '["a", "list"]', json.dumps({repr(KEY): "E501"}), json.dumps({repr(KEY): [1, 2]})):
        stored.write_text(damage)
        assert RuleStore(ruff_binary()).get(KEY) is None


def test_the_store_can_be_switched_off(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PYTEST_IFBENCH_RUFF_RULES", "0")
    store = RuleStore(ruff_binary())
    store.put(KEY, frozenset({"E501"}))
    assert store.get(KEY) == frozenset({"E501"})  # still answered within the process
    assert not (tmp_path / "pytest-ifbench").exists()
