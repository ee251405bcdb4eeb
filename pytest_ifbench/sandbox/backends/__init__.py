"""The built-in sandbox backends, registered by name (see :mod:`pytest_ifbench.sandbox.backend`).

* ``bubblewrap`` (:mod:`._bubblewrap`, the default): unprivileged namespaces around each command,
  rlimits, a disk watchdog; no daemon, no cgroup.
* ``docker`` (:mod:`._docker`): one container per run on a Docker Engine API (``DOCKER_HOST``
  honoured), each command a ``docker exec``; cgroup limits for the whole run, a tmpfs quota.

Outside packages add backends through the ``pytest_ifbench_sandbox_backend`` hook (under pytest) or
:func:`register_backend`; :func:`use_backend` sets the process's backend.  Each built-in is imported
only when it is made, so choosing one never imports the other's client.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..backend import DEFAULT_BACKEND, SandboxBackend

__all__ = ["BUILT_IN", "backend_names", "current_backend", "make_backend", "register_backend", "use_backend"]

_factories: dict[str, Callable[[], SandboxBackend]] = {}
_lock = threading.Lock()
_current: list[SandboxBackend] = []


def register_backend(name: str, factory: Callable[[], SandboxBackend]) -> None:
    """Make ``factory`` the backend called ``name`` for :func:`make_backend` (a later one replaces it)."""
    _factories[name] = factory


def backend_names() -> tuple[str, ...]:
    return tuple(sorted(_factories))


def make_backend(name: str) -> SandboxBackend:
    """A new backend called ``name``; ``KeyError`` (naming the known ones) when there is none."""
    known = backend_names()
    if name not in _factories:
        raise KeyError(f"unknown sandbox backend {name!r} (known: {', '.join(known)})")
    return _factories[name]()


def use_backend(backend: SandboxBackend | None) -> SandboxBackend | None:
    """Make ``backend`` the process's backend (None: back to the default); returns the previous one."""
    with _lock:
        previous = _current[0] if _current else None
        _current[:] = [] if backend is None else [backend]
        return previous


def current_backend() -> SandboxBackend:
    """The backend chosen with :func:`use_backend`, else a (cached) :data:`DEFAULT_BACKEND`."""
    with _lock:
        if not _current:
            _current.append(make_backend(DEFAULT_BACKEND))
        return _current[0]


def _bubblewrap() -> SandboxBackend:
    from ._bubblewrap import BubblewrapBackend

    return BubblewrapBackend()


def _docker() -> SandboxBackend:
    from ._docker import DockerBackend

    return DockerBackend()


#: The backends this package ships, by name.
BUILT_IN = {"bubblewrap": _bubblewrap, "docker": _docker}

for _name, _factory in BUILT_IN.items():
    register_backend(_name, _factory)
