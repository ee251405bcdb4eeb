"""The composition root: benchmark plugins from entry points, and the verifier registry.

Benchmarks -- the shipped ones and third-party packages alike -- are pluggy
plugins published under the ``pytest_ifbench.benchmarks`` entry-point group
(``name = "package.module"``). The pytest plugin registers them under their
entry-point names (so ``-p no:<name>`` switches one off); the ``ifbench``
command builds its own plugin manager from the same group. Both then build
the registry the same way: the core's ``ifbench.*`` verifiers, then every
plugin's ``pytest_ifbench_register_verifiers``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import pluggy

from . import _hookspecs
from ._registry import Registry

#: The entry-point group a benchmark package publishes its plugin module under.
ENTRY_POINT_GROUP = "pytest_ifbench.benchmarks"

#: ``ifbench generate NAME`` commands: ``main(argv) -> exit status``.
Generator = Callable[[list[str]], int]


def benchmark_entry_points() -> list[EntryPoint]:
    """The installed benchmark plugins, by name (a name published twice keeps the first)."""
    seen: dict[str, EntryPoint] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        seen.setdefault(point.name, point)
    return [seen[name] for name in sorted(seen)]


class BenchmarkLoadWarning(UserWarning):
    """An installed benchmark plugin could not be imported; the others still run."""


def register_benchmarks(manager: pluggy.PluginManager) -> list[str]:
    """Register every installed benchmark plugin that is not blocked; the names registered.

    A plugin that fails to import is reported with a :class:`BenchmarkLoadWarning` naming it and
    the error (its suites then fail to collect with "unknown verifier"), so one broken package
    does not take every other benchmark down.
    """
    import warnings

    registered = []
    for point in benchmark_entry_points():
        if manager.is_blocked(point.name) or manager.has_plugin(point.name):
            continue
        try:
            plugin = point.load()
        except Exception as exc:  # noqa: BLE001 - any import failure of a third-party package
            warnings.warn(BenchmarkLoadWarning(
                f"pytest-ifbench: benchmark plugin {point.name!r} ({point.value}) could not be loaded: "
                f"{type(exc).__name__}: {exc}"), stacklevel=2)
            continue
        manager.register(plugin, point.name)
        registered.append(point.name)
    return registered


def build_registry(hook: Any) -> Registry:
    """The core verifiers plus every registered plugin's (historic: late plugins add theirs too)."""
    from .verifiers import register_builtins

    registry = Registry()
    register_builtins(registry)
    hook.pytest_ifbench_register_verifiers.call_historic(kwargs={"registry": registry})
    return registry


def generators(hook: Any) -> dict[str, Generator]:
    """``ifbench generate`` commands contributed by the plugins, by benchmark name."""
    found: dict[str, Generator] = {}
    hook.pytest_ifbench_generators(generators=found)
    return dict(sorted(found.items()))


class _CommandPluginManager(pluggy.PluginManager):
    """Outside pytest: a plugin's plain ``pytest_ifbench_*`` functions are its hooks, as under pytest."""

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith("pytest_ifbench_") and callable(getattr(plugin, name, None)):
            opts = {}
        return opts


def command_plugin_manager(modules: Iterable[Any] = (), *, blocked: Iterable[str] = ()) -> pluggy.PluginManager:
    """A plugin manager for the ``ifbench`` command: the hook specs, the installed benchmarks
    (less ``blocked``), then ``modules`` (e.g. ``--plugin`` modules)."""
    manager = _CommandPluginManager("pytest")
    manager.add_hookspecs(_hookspecs)
    for name in blocked:
        manager.set_blocked(name)
    register_benchmarks(manager)
    for module in modules:
        if not manager.is_registered(module):
            manager.register(module)
    return manager


def default_registry() -> Registry:
    """Every installed verifier: the core's and each installed benchmark's (no conftest hooks)."""
    return build_registry(command_plugin_manager().hook)
