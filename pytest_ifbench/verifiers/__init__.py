"""The core's general-purpose verifiers (ids ``ifbench.*``), one module per family.

Each module exposes ``register(registry)`` and is discovered automatically.
Benchmark-specific verifiers live in their benchmark's package and arrive
through the ``pytest_ifbench_register_verifiers`` hook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._registry import Registry

def register_builtins(registry: Registry) -> None:
    """Register every module of this package (each defines ``register(registry)``)."""
    import pkgutil
    from importlib import import_module

    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not module.name.startswith("_"):
            import_module(f"{__name__}.{module.name}").register(registry)
