"""The composition root: benchmark plugins from entry points, and the verifier registry.

Benchmarks -- the shipped ones and third-party packages alike -- are pluggy
plugins published under the ``pytest_ifbench.benchmarks`` entry-point group
(``name = "package.module"``). The pytest plugin registers them under their
entry-point names (so ``-p no:<name>`` switches one off); the ``ifbench``
command builds its own plugin manager from the same group. Both then build
the registry the same way: the core's ``ifbench.*`` verifiers, then every
plugin's ``pytest_ifbench_register_verifiers``.

A plugin module that holds a :class:`~._benchmark.Benchmark` declaration has
the declaration registered as its hooks, under the entry-point name; the
module itself, under its module name, keeps any hook functions of its own.
The same goes for a ``conftest.py`` or ``-p`` module (``register_declared``).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

from . import _hookspecs
from ._benchmark import Benchmark
from ._registry import Registry

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

#: The entry-point group a benchmark package publishes its plugin module under.
ENTRY_POINT_GROUP = "pytest_ifbench.benchmarks"

#: ``ifbench generate NAME`` commands: ``main(argv) -> exit status``.
Generator = Callable[[list[str]], int]


def benchmark_entry_points() -> list[EntryPoint]:
    """The installed benchmark plugins, by name (a name published twice keeps the first)."""
    from importlib.metadata import entry_points  # ~10 ms: only when a benchmark is looked up

    seen: dict[str, EntryPoint] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        seen.setdefault(point.name, point)
    return [seen[name] for name in sorted(seen)]


class BenchmarkLoadWarning(UserWarning):
    """An installed benchmark plugin could not be imported; the others still run."""


def register_benchmarks(manager: pluggy.PluginManager, only: Container[str] | None = None) -> list[str]:
    """Register every installed benchmark plugin that is not blocked (of ``only``, when given); the
    names registered.

    A plugin that fails to import is reported with a :class:`BenchmarkLoadWarning` naming it and
    the error (its suites then fail to collect with "unknown verifier"), so one broken package
    does not take every other benchmark down.
    """
    import warnings

    registered = []
    for point in benchmark_entry_points():
        if (only is not None and point.name not in only) or manager.is_blocked(point.name) \
                or manager.has_plugin(point.name):
            continue
        try:
            plugin = point.load()
        except Exception as exc:  # noqa: BLE001 - any import failure of a third-party package
            warnings.warn(BenchmarkLoadWarning(
                f"pytest-ifbench: benchmark plugin {point.name!r} ({point.value}) could not be loaded: "
                f"{type(exc).__name__}: {exc}"), stacklevel=2)
            continue
        register_plugin(manager, plugin, point.name)
        registered.append(point.name)
    return registered


def declared_benchmarks(module: Any) -> list[Benchmark]:
    """The :class:`Benchmark` declarations a module holds at its top level."""
    found: list[Benchmark] = []
    for value in vars(module).values() if isinstance(module, ModuleType) else ():
        if isinstance(value, Benchmark) and all(value is not other for other in found):
            found.append(value)
    return found


def register_plugin(manager: pluggy.PluginManager, module: Any, name: str) -> None:
    """Register a benchmark plugin module under ``name``; a module declaring a :class:`Benchmark`
    gives that name to the declaration (its hooks), and is itself registered under its module name
    (its own hook functions, if any)."""
    declared = [b for b in declared_benchmarks(module) if not manager.is_registered(b)]
    if not declared:
        manager.register(module, name)
        return
    manager.register(declared[0], name)
    register_declared(manager, module)
    if not manager.is_registered(module):
        manager.register(module, module.__name__)


def register_declared(manager: pluggy.PluginManager, module: Any) -> None:
    """Register the :class:`Benchmark` declarations of a plugin module registered some other way
    (a ``conftest.py``, ``-p module``): each under its benchmark name, or ``<module>:<name>`` if taken."""
    for benchmark in declared_benchmarks(module):
        if not manager.is_registered(benchmark):
            name = benchmark.name
            if manager.is_blocked(name):  # -p no:<name>
                continue
            if manager.has_plugin(name):
                name = f"{getattr(module, '__name__', module)}:{benchmark.name}"
            manager.register(benchmark, name)


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


def command_plugin_manager(modules: Iterable[Any] = (), *, blocked: Iterable[str] = (),
                           benchmarks: bool = True) -> pluggy.PluginManager:
    """A plugin manager for the ``ifbench`` command: the hook specs, the installed benchmarks
    (less ``blocked``; none when ``benchmarks`` is false: the caller registers those it needs with
    ``register_benchmarks(manager, only=...)``), then ``modules`` (e.g. ``--plugin`` modules)."""
    manager = _CommandPluginManager("pytest")
    manager.add_hookspecs(_hookspecs)
    for name in blocked:
        manager.set_blocked(name)
    if benchmarks:
        register_benchmarks(manager)
    for module in modules:
        if not manager.is_registered(module):
            manager.register(module)
        register_declared(manager, module)
    return manager


def default_registry() -> Registry:
    """Every installed verifier: the core's and each installed benchmark's (no conftest hooks)."""
    return build_registry(command_plugin_manager().hook)
