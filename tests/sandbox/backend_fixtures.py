"""Fixtures that run a test once per sandbox backend (``bubblewrap``, ``docker``), for the corpora that must
hold on both.  Import them into a test module (``from tests.sandbox.backend_fixtures import ...``).

* ``docker_host`` (module scope): a private dockerd (:mod:`tests.sandbox.dockerd`), or a skip saying why not.
* ``sandbox_backend``: each backend in turn, made the process's (``use_backend``) for the test -- model
  code (``run_assert_tests`` and the rest) and workspaces then run on it -- with ``DOCKER_HOST`` pointing at
  the private engine for docker; skipped with the backend's own one-line problem when it cannot run.  At the
  end the code runs' pooled containers are closed and the previous backend is restored.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pytest_ifbench.sandbox import SandboxBackend, make_backend, use_backend
from pytest_ifbench.sandbox._code_runs import close_all
from tests.sandbox.dockerd import private_engine

BACKENDS = ("bubblewrap", "docker")


@pytest.fixture(scope="module")
def docker_host() -> Iterator[str]:
    with private_engine("dockerd") as host:
        yield host


@contextmanager
def backend_in_use(name: str) -> Iterator[SandboxBackend]:
    """The backend ``name`` made the process's for the block (skipped with its problem when it cannot
    run); afterwards the code runs' pooled containers are closed and the previous backend restored."""
    backend = make_backend(name)
    problem = backend.problem()
    if problem is not None:
        pytest.skip(problem)
    previous = use_backend(backend)
    try:
        yield backend
    finally:
        close_all()
        use_backend(previous)


@pytest.fixture(params=BACKENDS)
def sandbox_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[SandboxBackend]:
    if request.param == "docker":
        monkeypatch.setenv("DOCKER_HOST", request.getfixturevalue("docker_host"))
    with backend_in_use(request.param) as backend:
        yield backend
