"""The opt-in pytest plugin: fixtures around a running :class:`StubServer`.

Not registered by the ``pytest11`` entry point; a test suite enables it with
``pytest_plugins = ["pytest_ifbench.testing"]`` in its top-level conftest.py
(or ``-p pytest_ifbench.testing``).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .server import FAKE_API_KEY, StubServer

__all__ = ["stub_env", "stub_server"]


@pytest.fixture
def stub_server() -> Iterator[StubServer]:
    """A running :class:`StubServer` on a free local port, stopped at teardown.

    Script it (``add_rule``, ``inject_faults``, ``default``, ``latency``) and
    point the client at ``stub_server.url``, e.g. ``--model=openai/stub
    --api-base=<url>`` (see :func:`~pytest_ifbench.testing.server.stub_args`).
    """
    with StubServer() as server:
        yield server


@pytest.fixture
def stub_env(monkeypatch: pytest.MonkeyPatch, stub_server: StubServer) -> StubServer:
    """The ``stub_server``, with ``OPENAI_API_KEY`` set to :data:`FAKE_API_KEY`.

    Set for the test and the subprocesses it starts (``pytester.runpytest_subprocess``),
    as a user would set a real key; litellm's OpenAI provider then reaches the
    stub through ``--api-base=<stub_env.url>`` (or ``OPENAI_API_BASE``).
    """
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_API_KEY)
    return stub_server

