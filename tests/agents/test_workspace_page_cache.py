"""What only a cgroup caps, for agent workspaces on docker: a page-cache-heavy command (reading three
times the run's memory cap in files dropped from the host's page cache first) completes, and the
container's memory never goes over the cap -- the kernel reclaims the cache instead of the host paying
for it.  (Shared memory held by many processes is tests/agents/test_workspace.py's; bubblewrap has no
cgroup, so neither applies there.)"""

from __future__ import annotations

import pytest

from pytest_ifbench.agents.workspace import Limits, Workspace
from pytest_ifbench.sandbox import make_backend
from tests.sandbox._support import Sampler, container_pid, memory_files
from tests.sandbox.backend_fixtures import docker_host  # noqa: F401 -- fixture
from tests.sandbox.test_code_on_backends import PAGE_CACHE, uncached_system_files

CAP_MB = 192


@pytest.fixture
def docker_ws(docker_host, monkeypatch, tmp_path):  # noqa: F811 -- the fixture above
    monkeypatch.setenv("DOCKER_HOST", docker_host)
    backend = make_backend("docker")
    if backend.problem() is not None:
        pytest.skip(backend.problem())
    with Workspace.create(None, parent=tmp_path, backend=backend) as ws:
        yield ws


def test_a_page_cache_heavy_command_stays_within_the_memory_cap(docker_ws):
    limits = Limits(timeout=120, run_memory_mb=CAP_MB)
    assert docker_ws.run("true", limits=limits).ok  # the container exists, with the cap
    usage, peak_file = memory_files(container_pid())
    files = uncached_system_files(3 * CAP_MB << 20)
    with Sampler(lambda: int(usage.read_text())) as cgroup:
        res = docker_ws.run(["python3", "-c", PAGE_CACHE], stdin="\n".join(files), limits=limits)
    assert res.ok, res
    assert int(res.stdout.split()[1]) > 3 * CAP_MB << 20, res.stdout
    assert CAP_MB << 19 < cgroup.peak <= CAP_MB << 20, cgroup.peak >> 20  # charged (over half the cap), never over
    if peak_file is not None and peak_file.exists():
        assert int(peak_file.read_text()) <= CAP_MB << 20
    assert docker_ws.run("echo still", limits=limits).stdout == "still\n"
