"""Built-in verifiers, one module per family.

Each module exposes ``register(registry)``; benchmark-specific families are
registered under their benchmark's prefix (``vericode.``, ``manyih.``...),
general-purpose ones under ``ifbench.``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._registry import Registry

_MODULES = ("text", "regex", "ruff", "judge", "code_tests")


def register_builtins(registry: Registry) -> None:
    from importlib import import_module

    for name in _MODULES:
        import_module(f"{__name__}.{name}").register(registry)
