"""The sandbox-backend seam: choosing a backend by name, adding one through the hook, no fallback."""

from __future__ import annotations

import pytest

from pytest_ifbench.sandbox import current_backend, make_backend, use_backend
from pytest_ifbench.sandbox.backend import SandboxBackend, SandboxRun
from pytest_ifbench.sandbox.backends import backend_names
from tests.sandbox._support import NamedOnlyBackend

NEEDS_SANDBOX = False


def test_built_ins_are_registered_and_satisfy_the_interface():
    assert {"bubblewrap", "docker"} <= set(backend_names())
    backend = make_backend("bubblewrap")
    assert isinstance(backend, SandboxBackend) and backend.name == "bubblewrap"
    with pytest.raises(KeyError, match="known: bubblewrap, docker"):
        make_backend("nope")


def test_use_backend_sets_and_restores_the_process_backend():
    previous = use_backend(NamedOnlyBackend())
    try:
        assert current_backend().name == "fake"
    finally:
        use_backend(previous)
    assert current_backend().name != "fake"


def test_an_unknown_backend_stops_the_run(pytester):
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--ifbench-sandbox=nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ifbench-sandbox=nope: no such sandbox backend (known: bubblewrap, docker*"])


def test_a_plugin_adds_a_backend_and_an_unavailable_one_stops_in_one_line(pytester):
    pytester.makeconftest("""
        import pytest

        class Mine:
            name = "mine"
            def problem(self):
                return None
            def open(self, dirs):
                raise NotImplementedError

        class Broken(Mine):
            name = "broken"
            def problem(self):
                return "the broken engine is not running: start it"

        def pytest_ifbench_sandbox_backend(name, config):
            return {"mine": Mine, "broken": Broken}.get(name, lambda: None)()
    """)
    pytester.makepyfile("""
        from pytest_ifbench.sandbox import current_backend

        def test_chosen():
            assert current_backend().name == "mine"
    """)
    pytester.runpytest("--ifbench-sandbox=mine").assert_outcomes(passed=1)
    assert current_backend().name == "bubblewrap"  # restored at the end of the run
    result = pytester.runpytest("--ifbench-sandbox=broken")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-ifbench: --ifbench-sandbox=broken: the broken engine is not "
                                 "running: start it"])


def test_the_run_protocol_is_what_bubblewrap_implements(tmp_path):
    from pytest_ifbench.sandbox.backends._bubblewrap import BubblewrapRun

    assert issubclass(BubblewrapRun, SandboxRun)


def test_docker_without_a_reachable_engine_stops_in_one_line(pytester, monkeypatch, tmp_path):
    pytest.importorskip("docker")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--ifbench-sandbox=docker")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    expected = "the docker backend needs root*" if __import__("os").geteuid() else "no Docker Engine reachable at*"
    result.stderr.fnmatch_lines([f"ERROR: pytest-ifbench: --ifbench-sandbox=docker: {expected}"])


def test_docker_takes_a_named_image_and_bubblewrap_does_not():
    from pytest_ifbench.sandbox.backend import ImageBackend

    docker = make_backend("docker")
    assert isinstance(docker, ImageBackend) and not isinstance(make_backend("bubblewrap"), ImageBackend)
    imaged = docker.with_image("toolchain:1")
    assert imaged.name == "docker" and imaged.image == "toolchain:1" and repr(imaged) == "DockerBackend('toolchain:1')"


def test_the_oom_kill_count_is_read_from_the_cgroups_file_and_unknown_stays_unknown(tmp_path):
    """The docker backend reads a command's OOM kills before and after from one file found when its
    container started; a reading that fails is None (not 0, which made a kill look like none)."""
    from pytest_ifbench.sandbox.backends._docker_supervise import oom_kills

    events = tmp_path / "memory.events"
    events.write_text("low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n")
    assert oom_kills(str(events)) == 2
    events.write_text("under_oom 0\noom_kill 5\n")  # cgroup v1's memory.oom_control
    assert oom_kills(str(events)) == 5
    assert oom_kills(None) is None
    assert oom_kills(str(tmp_path / "gone")) is None  # the container's cgroup was removed
    events.write_text("low 0\n")
    assert oom_kills(str(events)) is None
