"""``--plugin MODULE``: the verifier registry of a subcommand, with each named module's verifiers added."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .errors import UsageError

if TYPE_CHECKING:
    from .._registry import Registry


def add_plugin_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plugin", dest="plugins", action="append", default=[], metavar="MODULE",
                        help="import MODULE and call its pytest_ifbench_register_verifiers(registry); repeatable")


def registry_with_plugins(plugins: Sequence[str]) -> Registry:
    """The core's and the installed benchmarks' verifiers, plus those of each ``--plugin`` module."""
    from importlib import import_module

    from .._composition import build_registry, command_plugin_manager, declared_benchmarks

    modules = []
    for name in plugins:
        try:
            module = import_module(name)
        except ImportError as exc:
            raise UsageError(f"--plugin {name}: cannot import: {exc}") from None
        if not callable(getattr(module, "pytest_ifbench_register_verifiers", None)) and not declared_benchmarks(module):
            raise UsageError(f"--plugin {name}: the module has no pytest_ifbench_register_verifiers(registry) function")
        modules.append(module)
    try:
        return build_registry(command_plugin_manager(modules).hook)
    except Exception as exc:  # noqa: BLE001 - any plugin failure is a usage error
        raise UsageError(f"registering verifiers failed: {type(exc).__name__}: {exc}") from None
