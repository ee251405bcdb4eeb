"""The docker backend's start-up reaper on a real (private) Docker Engine: a pytest killed with ``-9``
leaves its containers; the next run removes those of processes of this host that have ended -- a
later process given the same pid included -- and nothing else."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from pytest_ifbench.sandbox.backends._docker_image import LABEL, ensure_image, owner_label, reap_leftovers
from pytest_ifbench.sandbox.backends._process_identity import start_time
from tests.sandbox.backend_fixtures import docker_host  # noqa: F401 -- fixture

NEEDS_SANDBOX = False


def _ended_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert start_time(child.pid) is None
    return child.pid


def test_the_reaper_removes_the_containers_of_ended_processes_only(docker_host):  # noqa: F811
    docker = pytest.importorskip("docker")
    client = docker.DockerClient(base_url=docker_host, timeout=60)
    try:
        image = ensure_image(client)
        host, me, ended = socket.gethostname(), os.getpid(), _ended_pid()
        labels = {
            "mine": owner_label(),
            "my pid, started later": f"{host}:{me}:{start_time(me) + 1}",  # the pid was given out again
            "ended": f"{host}:{ended}:12345",
            "ended, older label": f"{host}:{ended}",
            "mine, older label": f"{host}:{me}",
            "another host's": f"not-{host}:{ended}:12345",
            "not ours": "something else",
        }
        made = {name: client.containers.create(image, ["/bin/true"], labels={LABEL: value}).id
                for name, value in labels.items()}
        unlabelled = client.containers.create(image, ["/bin/true"]).id
        removed = set(reap_leftovers(client))
        assert removed == {made["my pid, started later"], made["ended"], made["ended, older label"]}
        left = {container.id for container in client.containers.list(all=True)}
        assert left == (set(made.values()) - removed) | {unlabelled}
        assert reap_leftovers(client) == [], "the living keep theirs"
    finally:
        for container in client.containers.list(all=True):
            container.remove(force=True)
        client.close()
