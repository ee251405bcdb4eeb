"""``--plugin MODULE``: the verifier registry of a subcommand, with each named module's verifiers added."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .errors import UsageError

if TYPE_CHECKING:
    from .._registry import Registry


def add_plugin_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plugin", dest="plugins", action="append", default=[], metavar="MODULE",
                        help="import MODULE and call its pytest_ifbench_register_verifiers(registry); repeatable")


def plugin_modules(names: Sequence[str], hook: str, signature: str, *, declarations: bool = False) -> list[ModuleType]:
    """Each ``--plugin`` module, imported; :class:`UsageError` for one that cannot be imported or lacks
    ``hook`` (shown as ``signature``) -- a ``Benchmark`` declaration stands in for it when
    ``declarations`` is true."""
    from importlib import import_module

    from .._composition import declared_benchmarks

    modules = []
    for name in names:
        try:
            module = import_module(name)
        except ImportError as exc:
            raise UsageError(f"--plugin {name}: cannot import: {exc}") from None
        if not callable(getattr(module, hook, None)) and not (declarations and declared_benchmarks(module)):
            raise UsageError(f"--plugin {name}: the module has no {signature} function")
        modules.append(module)
    return modules


def registry_with_plugins(plugins: Sequence[str], *, on_demand: bool = False) -> Registry:
    """The core's and the installed benchmarks' verifiers, plus those of each ``--plugin`` module.

    ``on_demand`` (``ifbench verify``, without ``--plugin``): a registry that imports a benchmark's
    verifiers when an id first names it (:class:`_OnDemand`), so a run of one benchmark's cases never
    imports the other benchmarks (one of them alone imports pytest). With ``--plugin`` modules
    everything is registered up front, in the usual order, so a module's declarations and ids meet
    the installed ones exactly as they do under pytest.
    """
    from .._composition import build_registry, command_plugin_manager

    modules = plugin_modules(plugins, "pytest_ifbench_register_verifiers",
                             "pytest_ifbench_register_verifiers(registry)", declarations=True)
    try:
        if on_demand and not modules:
            return _OnDemand(command_plugin_manager(benchmarks=False)).registry
        return build_registry(command_plugin_manager(modules).hook)
    except UsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - any plugin failure is a usage error
        raise UsageError(f"registering verifiers failed: {type(exc).__name__}: {exc}") from None


class _OnDemand:
    """The loader of an on-demand registry: for an id ``<name>.<check>``, the core's verifiers when
    ``name`` is ``ifbench``, else the installed benchmark published under ``name`` (the convention
    every shipped and documented benchmark follows); when that does not define the id, everything.

    The one difference from registering everything up front: a plugin that replaces a core verifier
    (``registry.add(..., replace=True)`` on an ``ifbench.*`` id) is not consulted for ``ifbench.*``
    ids until something loads everything. A plugin that fails while registering stops the command
    with the usage error it would have got up front, whenever that happens.
    """

    def __init__(self, manager: Any) -> None:
        from .._registry import Registry

        self._manager = manager
        self._core = False
        self._tried: set[str] = set()
        self._everything = False
        self._failed: UsageError | None = None
        self.registry = Registry(loader=self)
        # Historic: each benchmark registered from now on adds its verifiers as it is registered.
        manager.hook.pytest_ifbench_register_verifiers.call_historic(kwargs={"registry": self.registry})

    def __call__(self, verifier_id: str | None) -> bool:
        if self._failed is not None:
            raise self._failed
        try:
            return self._load(verifier_id)
        except Exception as exc:  # noqa: BLE001 - any plugin failure is a usage error, as up front
            self._failed = UsageError(f"registering verifiers failed: {type(exc).__name__}: {exc}")
            raise self._failed from None

    def _load(self, verifier_id: str | None) -> bool:
        from .._composition import register_benchmarks

        if self._everything:
            return False
        name = verifier_id.partition(".")[0] if verifier_id is not None else None
        if name == "ifbench" and not self._core:
            self._load_core()
            return True
        if name is not None and name != "ifbench" and name not in self._tried:
            self._tried.add(name)
            if register_benchmarks(self._manager, only={name}):
                return True
        self._everything = True
        if not self._core:
            self._load_core()
        register_benchmarks(self._manager)
        return True

    def _load_core(self) -> None:
        from ..verifiers import register_builtins

        self._core = True
        register_builtins(self.registry)
