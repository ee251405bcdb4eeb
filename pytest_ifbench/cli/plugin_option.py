"""``--plugin MODULE``: the verifier registry of a subcommand, with each named module's verifiers added."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

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


def registry_with_plugins(plugins: Sequence[str]) -> Registry:
    """The core's and the installed benchmarks' verifiers, plus those of each ``--plugin`` module."""
    from .._composition import build_registry, command_plugin_manager

    modules = plugin_modules(plugins, "pytest_ifbench_register_verifiers",
                             "pytest_ifbench_register_verifiers(registry)", declarations=True)
    try:
        return build_registry(command_plugin_manager(modules).hook)
    except Exception as exc:  # noqa: BLE001 - any plugin failure is a usage error
        raise UsageError(f"registering verifiers failed: {type(exc).__name__}: {exc}") from None
