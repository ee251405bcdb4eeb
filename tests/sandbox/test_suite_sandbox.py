"""The suite key ``sandbox: {backend: NAME, image: NAME}`` (suite, ``defaults`` or instance): validated at
collection with file, instance and field in every error, carried to the agent run as its options, and
the backend an instance runs on chosen from it (never a fallback)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench._composition import default_registry
from pytest_ifbench.agents.options import AgentOptions, agent_options
from pytest_ifbench.agents.session import AgentHarnessError, instance_backend
from pytest_ifbench.sandbox import current_backend, use_backend
from pytest_ifbench.suite.errors import SuiteError
from pytest_ifbench.suite.format import parse_suite
from tests.sandbox._support import NamedOnlyBackend

NEEDS_SANDBOX = False  # parsing and choosing only

CHECK = {"id": "ok", "verifier": "ifbench.regex", "params": {"pattern": "x"}}


def suite(*instances: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"ifbench": 1, "benchmark": "demo", **top,
            "instances": [{"prompt": "p", "checks": [CHECK], "protocol": "agent", **inst} for inst in instances]}


def parse(data: dict[str, Any]):
    return parse_suite(Path("s.yaml"), data, default_registry())


def error(data: dict[str, Any]) -> str:
    with pytest.raises(SuiteError) as info:
        parse(data)
    return str(info.value)


def options(instance) -> AgentOptions:
    return agent_options(instance.protocol_options)


def test_suite_defaults_and_instance_keys_in_that_order():
    parsed = parse(suite({"id": "a"}, {"id": "b", "sandbox": {"backend": "bubblewrap"}},
                         sandbox={"backend": "docker", "image": "toolchain:1"}))
    a, b = parsed.instances
    assert (options(a).sandbox_backend, options(a).sandbox_image) == ("docker", "toolchain:1")
    assert (options(b).sandbox_backend, options(b).sandbox_image) == ("bubblewrap", None)
    parsed = parse({**suite({"id": "a"}, sandbox={"backend": "docker", "image": "x:1"}),
                    "defaults": {"sandbox": {"backend": "docker", "image": "y:2"}}})
    assert options(parsed.instances[0]).sandbox_image == "y:2"
    plain = parse(suite({"id": "a"}))
    assert options(plain.instances[0]).sandbox_backend is None
    assert options(plain.instances[0]).to_json()["sandbox_backend"] is None


def test_a_non_agent_instance_ignores_the_suite_key_and_refuses_its_own():
    parsed = parse(suite({"id": "a", "protocol": "single_turn"}, sandbox={"backend": "docker"}))
    assert "sandbox" not in parsed.instances[0].protocol_options
    assert error(suite({"id": "a", "protocol": "single_turn", "sandbox": {"backend": "docker"}})) == (
        "s.yaml: instance 'a': sandbox: only agent instances (protocol: agent) run in a sandbox backend")


@pytest.mark.parametrize(("where", "value", "expected"), [
    ("instance", "docker", "s.yaml: instance 'a': sandbox: expected a mapping with backend (and image), got 'docker'"),
    ("instance", {"image": "x:1"}, "s.yaml: instance 'a': sandbox.backend: a sandbox names its backend "
                                   "(e.g. backend: docker)"),
    ("instance", {"backend": "docker", "tag": "1"}, "s.yaml: instance 'a': sandbox.tag: unknown field "
                                                    "(allowed: backend, image)"),
    ("instance", {"backend": "docker", "image": "has space"}, "s.yaml: instance 'a': sandbox.image: expected a "
                                                              "name, got 'has space'"),
    ("instance", {"backend": "dokcer"}, "s.yaml: instance 'a': sandbox.backend: unknown sandbox backend 'dokcer' "
                                        "(known: bubblewrap, docker)"),
    ("instance", {"backend": "bubblewrap", "image": "x:1"}, "s.yaml: instance 'a': sandbox.image: the bubblewrap "
                                                            "backend takes no image (it shows the host's own "
                                                            "system directories); use backend: docker"),
    ("defaults", {"backend": "docker", "image": 5}, "s.yaml: instance 'a': defaults.sandbox.image: expected a "
                                                    "name, got 5"),
    ("suite", {"backend": "nope"}, "s.yaml: sandbox.backend: unknown sandbox backend 'nope' "
                                   "(known: bubblewrap, docker)"),
])
def test_bad_values_name_file_instance_and_field(where, value, expected):
    if where == "instance":
        data = suite({"id": "a", "sandbox": value})
    elif where == "defaults":
        data = {**suite({"id": "a"}), "defaults": {"sandbox": value}}
    else:
        data = suite({"id": "a"}, sandbox=value)
    assert error(data) == expected


def test_an_instance_without_the_key_runs_on_the_runs_backend():
    assert instance_backend(AgentOptions()) is None


def test_the_runs_own_backend_is_used_when_the_suite_names_it():
    previous = use_backend(NamedOnlyBackend())
    try:
        assert instance_backend(AgentOptions(sandbox_backend="fake")) is current_backend()
        with pytest.raises(AgentHarnessError, match="the instance's sandbox backend nope: unknown sandbox backend"):
            instance_backend(AgentOptions(sandbox_backend="nope"))
    finally:
        use_backend(previous)


def test_an_image_on_a_backend_without_images_is_the_instances_error():
    with pytest.raises(AgentHarnessError, match="the instance's sandbox backend bubblewrap \\(image x:1\\): "
                                                "the bubblewrap backend takes no image"):
        instance_backend(AgentOptions(sandbox_backend="bubblewrap", sandbox_image="x:1"))


def test_an_unreachable_engine_is_the_instances_error_in_one_line(monkeypatch, tmp_path):
    pytest.importorskip("docker")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    with pytest.raises(AgentHarnessError) as info:
        instance_backend(AgentOptions(sandbox_backend="docker", sandbox_image="toolchain:1"))
    message = str(info.value)
    assert message.startswith("the instance's sandbox backend docker (image toolchain:1): ") and "\n" not in message
