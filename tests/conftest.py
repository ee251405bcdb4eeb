"""Fixtures for the plugin's own tests: a real local OpenAI-compatible server."""

from __future__ import annotations

import pytest

from pytest_ifbench.stub_server import StubServer
from tests._support import FAKE_KEY

pytest_plugins = ("pytester",)


@pytest.fixture
def stub_server():
    with StubServer() as server:
        yield server


@pytest.fixture
def stub_env(monkeypatch: pytest.MonkeyPatch, stub_server: StubServer) -> StubServer:
    """Point litellm's OpenAI provider at the stub with a fake key, as a user would."""
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    return stub_server
