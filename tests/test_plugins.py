"""The composition root: benchmark plugins from entry points, the CLI's plugin manager, the registry."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from pytest_ifbench import _composition as _plugins
from pytest_ifbench._composition import (
    BenchmarkLoadWarning,
    build_registry,
    command_plugin_manager,
    generators,
    register_benchmarks,
)


def test_the_shipped_benchmarks_are_entry_points_like_any_other():
    names = {p.name for p in _plugins.benchmark_entry_points()}
    assert {"vericode", "manyih", "evolif"} <= names
    registry = build_registry(command_plugin_manager().hook)
    assert {"vericode.style_3", "manyih.blank_internal_none", "ifbench.case"} <= {v.id for v in registry}
    assert {"vericode", "manyih", "evolif"} <= set(generators(command_plugin_manager().hook))


def test_a_blocked_benchmark_is_left_out():
    manager = command_plugin_manager(blocked=["manyih"])
    registry = build_registry(manager.hook)
    assert not any(v.id.startswith("manyih.") for v in registry)
    assert any(v.id.startswith("vericode.") for v in registry)


def test_a_broken_benchmark_package_is_a_named_warning(monkeypatch):
    good = [p for p in _plugins.benchmark_entry_points() if p.name == "vericode"]
    broken = EntryPoint(name="broken", value="no_such_module_for_ifbench.plugin", group=_plugins.ENTRY_POINT_GROUP)
    monkeypatch.setattr(_plugins, "benchmark_entry_points", lambda: [broken, *good])
    manager = _plugins._CommandPluginManager("pytest")
    manager.add_hookspecs(_plugins._hookspecs)
    with pytest.warns(BenchmarkLoadWarning, match=r"'broken' \(no_such_module_for_ifbench.plugin\) could not be "
                                                  r"loaded: ModuleNotFoundError"):
        assert register_benchmarks(manager) == ["vericode"]
