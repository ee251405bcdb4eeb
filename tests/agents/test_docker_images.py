"""A suite's (or instance's) ``sandbox: {backend: docker, image: NAME}``: the named local image is used as
it is, a missing one is the instance's one-line error naming it, and the suite's backend is honoured
when the run's is bubblewrap (docs/agents.md, "Sandbox backends").

The image is built here without a registry (``tests/sandbox/dockerd.py``: the host's python3 and bash
and a marker file no host has) on a private dockerd started for the module.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from pytest_ifbench.agents.workspace import Limits, ProxyRoute, SandboxUnavailable, Workspace
from pytest_ifbench.sandbox import make_backend
from pytest_ifbench.testing import Reply
from tests._support import stub_args, write_suite
from tests.sandbox._support import relay_echo
from tests.sandbox.dockerd import IMAGE_MARKER, private_engine, python_image

QUICK = Limits(timeout=30)


@pytest.fixture(scope="module")
def engine():
    """(DOCKER_HOST, the test image's tag) of a private dockerd."""
    with private_engine("dockerd") as host:  # skips first when dockerd or the docker client is missing
        import docker

        client = docker.DockerClient(base_url=host)
        try:
            yield host, python_image(client)
        finally:
            client.close()


@pytest.fixture
def image(engine, monkeypatch) -> str:
    monkeypatch.setenv("DOCKER_HOST", engine[0])
    return engine[1]


def test_a_named_image_is_used_as_it_is(image, tmp_path):
    backend = make_backend("docker").with_image(image)
    assert backend.problem() is None
    with Workspace.create(None, parent=tmp_path, backend=backend) as ws:
        script = ("import os, sys; print(open(sys.argv[1]).read().strip()); "
                  "print(os.path.exists('/etc/os-release'), os.path.exists('/usr/bin/git'), os.getcwd())")
        res = ws.run(["python3", "-c", script, IMAGE_MARKER], limits=QUICK)
        assert res.ok, res
        assert res.stdout.splitlines() == ["from the named image", "False False /workspace"]
        res = ws.run("echo made > out.txt && echo $UID", limits=QUICK)  # bash of the image, as the run's uid
        assert res.ok and res.stdout.strip() == str(ws.uid), res
        assert ws.read_bytes("out.txt") == b"made\n"


def test_the_proxy_route_works_from_a_named_image(image, tmp_path):
    """The relay runs with the image's python3: the CLI's traffic reaches the socket, marked as the CLI's."""
    with Workspace.create(None, parent=tmp_path, backend=make_backend("docker").with_image(image)) as ws:
        sock = ws.root / "proxy.sock"
        route = ProxyRoute(socket=sock, port=8377)
        script = ("import urllib.request, sys\n"
                  "print(urllib.request.urlopen(urllib.request.Request(sys.argv[1] + '/v1/messages', data=b'hi'),"
                  " timeout=20).read().decode())\n")
        with relay_echo(sock) as server:
            res = ws.run(["python3", "-c", script, route.url], route=route, limits=QUICK)
        assert res.ok and res.stdout == "ok:hi\n", res
        assert server.preambles == [b"IFBENCH-RELAY cli\n"]


def test_a_missing_image_is_one_line_naming_it(image, tmp_path):
    backend = make_backend("docker").with_image("no-such-image:7")
    problem = backend.problem()
    assert problem is not None and "\n" not in problem
    assert problem.startswith("docker image 'no-such-image:7' is not on the Docker Engine at unix://")
    assert problem.endswith("build, load or pull it there first (the backend never pulls)")
    with pytest.raises(SandboxUnavailable, match="no-such-image:7"):
        Workspace.create(None, parent=tmp_path, backend=backend)


def test_an_image_without_python_is_a_clear_error(image, tmp_path):
    """The backend's own image has no python3 (a skeleton): as a named image it cannot supervise."""
    import docker

    from pytest_ifbench.sandbox.backends._docker_image import ensure_image

    skeleton = ensure_image(docker.from_env())
    with Workspace.create(None, parent=tmp_path, backend=make_backend("docker").with_image(skeleton)) as ws:
        with pytest.raises(SandboxUnavailable, match=f"docker image '{skeleton}' has no python3 on its PATH"):
            ws.run(["true"], limits=QUICK)
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(ws.root / "proxy.sock"))
        listener.listen()
        with pytest.raises(SandboxUnavailable, match=f"docker image '{skeleton}' has no python3 on its PATH"):
            ws.run(["true"], limits=QUICK, route=ProxyRoute(socket=ws.root / "proxy.sock", port=8377))
        listener.close()


SUITE = """
ifbench: 1
benchmark: imaged
sandbox: {{backend: docker, image: {image}}}
defaults:
  protocol: agent
  protocol_options: {{max_steps: 4, command_timeout: 20}}
instances:
  - id: on-the-image
    prompt: Show the toolchain marker.
    checks:
      - {{id: marker, verifier: ifbench.workspace_command, params: {{command: 'test -f {marker}'}}}}
      - {{id: saw-it, verifier: ifbench.tool_called, params: {{tool: bash}}}}
  - id: missing-image
    sandbox: {{backend: docker, image: no-such-image:7}}
    prompt: Show the toolchain marker.
    checks:
      - {{id: marker, verifier: ifbench.workspace_command, params: {{command: 'test -f {marker}'}}}}
"""


def _loop_script(body: dict[str, Any]) -> Reply:
    if any(m["role"] == "tool" for m in body["messages"]):
        return Reply(tool_calls=[{"id": "c2", "type": "function", "function": {
            "name": "finish", "arguments": json.dumps({"answer": "done"})}}])
    return Reply(tool_calls=[{"id": "c1", "type": "function", "function": {
        "name": "bash", "arguments": json.dumps({"command": f"cat {IMAGE_MARKER}"})}}])


def test_the_suites_image_is_honoured_on_a_bubblewrap_run(image, pytester, stub_env):
    """No --ifbench-sandbox (bubblewrap): the suite's instances still run on docker with its image; the
    instance naming a missing image errors with the one line, and nothing falls back to bubblewrap."""
    stub_env.default = _loop_script
    write_suite(pytester.path, "suites/imaged.yaml", SUITE.format(image=image, marker=IMAGE_MARKER))
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env), "--ifbench-timeout=60", "-p", "no:randomly")
    records = {r["instance"]: r for r in json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]}
    good, missing = records["on-the-image"], records["missing-image"]
    assert good["status"] == "passed", (good.get("error"), result.stdout.str()[-3000:])
    assert good["agent"]["options"]["sandbox_image"] == image
    assert missing["status"] == "error"
    assert ("the instance's sandbox backend docker (image no-such-image:7): docker image 'no-such-image:7' is not "
            "on the Docker Engine at") in missing["error"]
