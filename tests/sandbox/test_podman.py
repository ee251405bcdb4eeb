"""The docker backend on Podman: ``DOCKER_HOST`` at Podman's Docker-compatible API service, which the
test starts itself (``podman --runtime runc system service``, its own storage and socket; skipped with
the reason when podman, runc, root or the ``docker`` client is missing).

What must hold there as on dockerd: commands contained as the run's uid in ``/workspace``, the timeout
ending the whole tree, the cgroup memory cap, a changed cap on a running container (Podman 4's API has
no update endpoint: a new container, the files kept), the proxy route with the relay's guarantees, the
default image imported without a registry, and every container removed at close.
"""

from __future__ import annotations

import pytest

from pytest_ifbench.agents.workspace import Limits, ProxyRoute, Workspace
from pytest_ifbench.sandbox import make_backend
from tests.sandbox._support import relay_echo
from tests.sandbox.dockerd import private_engine

NEEDS_SANDBOX = False  # podman is the sandbox here, not bubblewrap
QUICK = Limits(timeout=30)


@pytest.fixture(scope="module")
def podman_host():
    with private_engine("podman") as host:
        yield host


@pytest.fixture
def ws(podman_host, monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", podman_host)
    backend = make_backend("docker")
    assert backend.problem() is None
    with Workspace.create(None, parent=tmp_path, backend=backend) as workspace:
        yield workspace


def _containers(host: str) -> list:
    import docker

    client = docker.DockerClient(base_url=host)
    try:
        return client.containers.list(all=True, filters={"label": "pytest-ifbench.sandbox"})
    finally:
        client.close()


def test_commands_run_contained_and_the_container_goes_at_close(podman_host, monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", podman_host)
    with Workspace.create(None, parent=tmp_path, backend=make_backend("docker")) as ws:
        res = ws.run("echo hi > f.txt; cat f.txt; echo $UID; pwd; cat /proc/net/dev | grep -c :", limits=QUICK)
        assert res.ok, res
        assert res.stdout.splitlines() == ["hi", str(ws.uid), "/workspace", "1"]  # only lo
        assert ws.read_bytes("f.txt") == b"hi\n"
        assert len(_containers(podman_host)) == 1
    assert _containers(podman_host) == []


def test_the_timeout_ends_the_whole_tree(ws):
    res = ws.run("(sleep 100 &) ; sleep 100", limits=Limits(timeout=2))
    assert res.limit == "timeout" and res.returncode is None, res
    res = ws.run("ps -eo comm | grep -c sleep || true", limits=QUICK)
    assert res.stdout.strip() == "0", res


def test_the_cgroup_caps_memory_and_a_new_cap_takes_effect(ws):
    grow = ["python3", "-c", "x = bytearray(400 << 20); print('allocated')"]
    res = ws.run(grow, limits=Limits(timeout=30, run_memory_mb=1024, memory_mb=4096))
    assert res.ok and res.stdout == "allocated\n", res
    ws.run("echo kept > kept.txt", limits=QUICK)
    res = ws.run(grow, limits=Limits(timeout=30, run_memory_mb=200, memory_mb=4096))
    assert res.limit == "memory" and res.returncode != 0, res
    assert ws.run("cat kept.txt", limits=QUICK).stdout == "kept\n"


def test_the_proxy_route_carries_only_the_commands_own_traffic(ws):
    sock = ws.root / "proxy.sock"
    route = ProxyRoute(socket=sock, port=8377)
    script = ("import subprocess, sys, urllib.request\n"
              "print(urllib.request.urlopen(urllib.request.Request(sys.argv[1] + '/v1/messages', data=b'hi'),"
              " timeout=20).read().decode())\n"
              "tool = subprocess.run(['/bin/bash', '-c', 'setsid curl -s -m 5 -d x ' + sys.argv[1] + '/v1/messages'],"
              " capture_output=True, text=True)\n"
              "print('refused' if 'refused by the ifbench relay' in tool.stdout else tool.stdout)\n")
    with relay_echo(sock) as server:
        res = ws.run(["python3", "-c", script, route.url], route=route, limits=QUICK)
    assert res.ok and res.stdout.splitlines() == ["ok:hi", "refused"], res
    preambles = server.preambles
    assert preambles[0] == b"IFBENCH-RELAY cli\n"
    assert len(preambles) == 2 and preambles[1].startswith(b"IFBENCH-RELAY refused not the agent CLI: "), preambles


@pytest.mark.parametrize("how", ["killed", "removed"])
def test_a_container_that_is_gone_is_replaced_and_the_workspace_stays(ws, podman_host, how):
    """Between two commands the workspace's container died or was removed: the next command runs in a new
    one, with the workspace's files."""
    import docker

    assert ws.run("echo kept > kept.txt", limits=QUICK).ok
    client = docker.DockerClient(base_url=podman_host)
    try:
        (gone,) = client.containers.list(all=True, filters={"label": "pytest-ifbench.sandbox"})
        if how == "killed":
            gone.kill()
            gone.wait(timeout=30)
        else:
            gone.remove(force=True)
        res = ws.run("cat kept.txt", limits=QUICK)
        assert res.ok and res.stdout == "kept\n", res
        now = client.containers.list(all=True, filters={"label": "pytest-ifbench.sandbox"})
        assert len(now) == 1 and now[0].id != gone.id
    finally:
        client.close()


def test_var_tmp_is_inside_the_disk_budget_and_run_is_not_writable(ws):
    """Podman gives a read-only root memory-backed /var/tmp and /run of half the host's memory each, outside
    the run's disk budget: 2.5 GB written to /var/tmp against a 1 GiB budget passed unnoticed. /var/tmp is
    the run's /tmp now, and /run a 1 MiB tmpfs that is root's."""
    res = ws.run("echo x > /var/tmp/f && ls /tmp; touch /run/f 2>&1; df -k /run | tail -1", limits=QUICK)
    assert res.stdout.splitlines()[0] == "f", res
    assert "Permission denied" in res.stdout and res.stdout.split()[-5] == "1024", res
    res = ws.run("for i in 1 2 3 4 5 6; do head -c 250M /dev/zero > /var/tmp/big$i; done; sleep 20",
                 limits=Limits(timeout=60))
    assert res.limit == "disk", res
