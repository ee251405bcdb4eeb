"""Fixtures of the agent tests: the pinned real agent CLIs, installed once per machine."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import pytest

from pytest_ifbench.agents.cli import AGENT_CLIS, cli_problem, install
from pytest_ifbench.agents.install import agents_dir, installed_version, installed_versions
from pytest_ifbench.agents.workspace import sandbox_problem


@pytest.fixture(scope="session")
def installed_agents() -> Path:
    """The pinned CLIs, installed once (``install()``) where users get them: ``agents_dir()`` (the per-user
    cache unless ``IFBENCH_AGENTS_DIR`` says otherwise), or ``$IFBENCH_TEST_AGENTS_DIR``."""
    if shutil.which("npm") is None:
        missing = "npm is not available: the real agent CLIs cannot be installed (Node.js 20 or newer with npm)"
        if os.environ.get("CI"):  # CI must not pass by skipping every real CLI
            pytest.fail(missing)
        pytest.skip(missing)
    problem = sandbox_problem()
    if problem is not None:
        pytest.skip(problem)
    directory = Path(os.environ.get("IFBENCH_TEST_AGENTS_DIR") or agents_dir())
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".install.lock", "w") as lock:  # one installer at a time (xdist workers)
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = [name for name in AGENT_CLIS if cli_problem(name, directory) is not None]
        if missing:
            status = install(missing, directory)
            assert status == 0, f"npm install of {missing} into {directory} failed with exit status {status}"
    return directory


@pytest.fixture(scope="session")
def side_version(installed_agents):
    """Installs another version of a CLI beside the pinned one (``ifbench agents install name@version``) unless it
    is there: ``side_version("claude_code", "2.0.69")``, the version OctoBench's data names."""
    def ensure(name: str, version: str) -> None:
        with open(installed_agents / ".install.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if installed_version(name, installed_agents) != version and \
                    version not in installed_versions(name, installed_agents):
                status = install([f"{name}@{version}"], installed_agents)
                assert status == 0, f"npm install of {name}@{version} into {installed_agents} failed ({status})"
    return ensure


@pytest.fixture
def agents(installed_agents, monkeypatch) -> Path:
    monkeypatch.setenv("IFBENCH_AGENTS_DIR", str(installed_agents))
    return installed_agents
