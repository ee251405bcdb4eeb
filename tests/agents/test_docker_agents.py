"""Real agent CLIs on the docker backend (``--ifbench-sandbox=docker``): the proxy route, the relay's
integrity guarantees, and the same verdicts as under bubblewrap.

A private ``dockerd``, then Podman's API service, is started for the module (``tests/sandbox/dockerd.py``;
each skipped with its reason when Debian's ``docker.io``/``podman``, root or the ``docker`` client is
missing).  Claude Code runs against the
scripted stub model exactly as in ``test_relay_integrity.py`` and ``test_cli_runners.py``; the attack
tests of ``test_relay_integrity.py`` run here unchanged, on docker.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench.sandbox import make_backend, use_backend
from pytest_ifbench.testing import Reply
from tests._support import stub_args
from tests.agents import test_cli_limits as limits
from tests.agents import test_cli_runners as runners
from tests.agents import test_relay_integrity as relay
from tests.sandbox.dockerd import private_engine

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", params=["dockerd", "podman"])
def docker_host(request):
    """A private engine: Docker's, then Podman's Docker-compatible API service (each skipped with its reason)."""
    with private_engine(request.param) as host:
        yield host


@pytest.fixture
def on_docker(docker_host, monkeypatch):
    """The process's sandbox backend is docker for the test (as ``--ifbench-sandbox=docker`` makes it)."""
    monkeypatch.setenv("DOCKER_HOST", docker_host)
    backend = make_backend("docker")
    problem = backend.problem()
    if problem is not None:
        pytest.skip(problem)
    previous = use_backend(backend)
    yield backend
    use_backend(previous)


def test_an_agent_command_can_neither_see_nor_write_the_run_s_spending_ledger(on_docker, tmp_path):
    """As under bubblewrap: the ledger (in the host's temporary directory) is not among what the container
    is given, so a tool command can neither lift the run's limit nor fill it."""
    from tests.test_spending_limit import test_an_agent_command_can_neither_see_nor_write_the_run_s_ledger as check

    check(tmp_path)


@pytest.mark.parametrize("keep", [False, True], ids=["removed", "kept"])
def test_what_the_agent_left_in_home_and_tmp_cannot_pass_a_check(on_docker, pytester, stub_env, keep):
    """As under bubblewrap: the run's HOME and /tmp are emptied in place, under the container's bind mounts."""
    from tests.agents.test_checks_integrity import check_home_and_tmp

    check_home_and_tmp(pytester, stub_env, "--ifbench-sandbox=docker", keep=keep)


# --- the relay's guarantees, on docker ----------------------------------------------------------------


def test_a_clean_run_has_no_refused_request(agents, on_docker, stub_env, tmp_path):
    relay.test_a_clean_run_has_no_refused_request(agents, stub_env, tmp_path)


def test_a_forged_conversation_through_the_relay_is_refused_and_recorded(agents, on_docker, stub_env, tmp_path):
    """Both ways a tool command may try: the relay's port (refused by the relay, which traces the
    connection to curl) and the bind-mounted socket itself (refused by the proxy: not the relay)."""
    relay.test_a_forged_conversation_through_the_relay_is_refused_and_recorded(agents, stub_env, tmp_path)


def test_a_curl_loop_cannot_make_model_calls(agents, on_docker, stub_env, tmp_path):
    relay.test_a_curl_loop_cannot_make_model_calls(agents, stub_env, tmp_path)


@pytest.mark.parametrize("cli", ["claude_code", "kilo"])
def test_a_program_of_the_installation_run_by_a_tool_command_is_refused(cli, agents, on_docker, stub_env, tmp_path):
    """The relay runs as root of the container here (``--as``), and Kilo's is a launcher (``--launcher``)."""
    relay.test_a_program_of_the_installation_run_by_a_tool_command_is_refused(cli, agents, stub_env, tmp_path)


def test_a_tool_command_cannot_take_the_clis_own_connection(agents, on_docker, stub_env, tmp_path):
    relay.test_a_tool_command_cannot_take_the_clis_own_connection(agents, stub_env, tmp_path)


def test_a_tool_command_cannot_write_the_clis_memory(agents, on_docker, stub_env, tmp_path, request):
    """``/proc`` is read-only in the CLI's container (``ReadonlyPaths``); Podman 4's Docker-compatible API
    ignores that setting, and its own (``proc-opts=ro``) stops its runtime, which sets a sysctl."""
    if request.node.callspec.params["docker_host"] == "podman":
        request.applymarker(pytest.mark.xfail(strict=True, reason="Podman's API ignores ReadonlyPaths: a known gap"))
    relay.test_a_tool_command_cannot_write_the_clis_memory(agents, stub_env, tmp_path)


def test_malformed_relay_json_crashes_nothing(agents, on_docker, stub_env, tmp_path):
    relay.test_malformed_relay_json_crashes_nothing(agents, stub_env, tmp_path)


def test_kill_minus_one_is_the_agents_failure_not_an_error(agents, on_docker, stub_env, tmp_path):
    relay.test_kill_minus_one_is_the_agents_failure_not_an_error(agents, stub_env, tmp_path)


def test_filling_the_disk_is_the_agents_failure_not_an_error(agents, on_docker, stub_env, tmp_path):
    relay.test_filling_the_disk_is_the_agents_failure_not_an_error(agents, stub_env, tmp_path)


@pytest.mark.parametrize("name", ["claude_code", "kilo", "droid"])
def test_each_shipped_cli_writes_a_file_through_the_container_and_the_proxy(name, agents, on_docker, stub_env,
                                                                          tmp_path):
    """Kilo's launcher starts its native binary (its child is the CLI too) and Droid is one."""
    runners.test_a_real_cli_writes_a_file_through_sandbox_and_proxy(name, agents, stub_env, tmp_path)


# --- the run's budgets, on docker: past one the proxy ends the CLI's container -----------------------


def test_max_steps_stops_claude_code_and_counts_every_call(agents, on_docker, stub_env, tmp_path):
    limits.test_max_steps_stops_a_real_cli_and_counts_every_call("claude_code", agents, stub_env, tmp_path)


def test_max_seconds_holds_while_a_model_call_is_in_flight(agents, on_docker, stub_env, tmp_path):
    limits.test_max_seconds_holds_while_a_model_call_is_in_flight("claude_code", agents, stub_env, tmp_path)


# --- the same verdicts as bubblewrap ------------------------------------------------------------------

#: The OctoBench quick instance that answers a question about the code, and the agent smoke suite.
OCTO_QUICK = "inv-quick-line-total"


def scripted(body: dict[str, Any]) -> Reply:
    """The stub: judges pass every check; Claude Code reads invoice/core.py for the OctoBench question and
    writes hello.txt for the rest, then answers in one sentence."""
    if body.get("response_format"):
        schema = body["response_format"]["json_schema"]["schema"]
        ids = schema["properties"]["checks"]["items"]["properties"]["id"]["enum"]
        return Reply(content=json.dumps({"checks": [{"id": i, "reasoning": "ok", "result": "success"} for i in ids]}))
    text = json.dumps(body.get("messages") or [])
    if not body.get("tools") or any(m.get("role") == "tool" for m in (body.get("messages") or [])[-2:]):
        return Reply(content="line_total returns the quantity times the unit price in cents." if "core.py" in text
                     else "I wrote hello.txt with hello in it.")
    if "core.py" in text:
        return Reply(tool_calls=[{"function": {"name": "Read",
                                               "arguments": {"file_path": "/workspace/invoice/core.py"}}}])
    return Reply(tool_calls=[{"function": {"name": "Write", "arguments": {
        "file_path": "/workspace/hello.txt", "content": "hello\n"}}}])


def _copy_suites(where: Path) -> None:
    (where / "octobench" / "environments").mkdir(parents=True)
    shutil.copy(REPO / "suites" / "octobench" / "python_cli.yaml", where / "octobench")
    shutil.copytree(REPO / "suites" / "octobench" / "environments" / "py-invoice",
                    where / "octobench" / "environments" / "py-invoice", symlinks=True)
    shutil.copy(REPO / "suites" / "agent_smoke.yaml", where)
    shutil.copytree(REPO / "suites" / "environments", where / "environments", symlinks=True)
    (where / "conftest.py").write_text('collect_ignore_glob = ["environments/*", "octobench/environments/*"]\n')


def _verdicts(pytester: pytest.Pytester, stub, backend: str) -> dict[str, Any]:
    result = pytester.runpytest_subprocess(
        "suites", *stub_args(stub), "--ifbench-timeout=120", "--ifbench-agent-runner=claude_code",
        f"--ifbench-sandbox={backend}", "-k", f"{OCTO_QUICK} or agent_smoke", "-p", "no:randomly")
    records = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
    assert {r["instance"] for r in records} == {OCTO_QUICK, "write-greeting", "read-notes"}, result.stdout.str()
    return {r["instance"]: (r["status"], r["agent"]["runner"], r.get("error"),
                            sorted((c["check"], c["passed"]) for c in r["checks"])) for r in records}


def _containers_created(host: str, since: int) -> int:
    import docker

    client = docker.DockerClient(base_url=host)
    try:
        events = client.events(since=since, until=int(time.time()) + 1, decode=True,
                               filters={"type": "container", "event": "create"})
        return sum(1 for _ in events)
    finally:
        client.close()


def test_octobench_quick_and_the_smoke_suite_give_bubblewraps_verdicts(agents, docker_host, pytester, stub_env,
                                                                       monkeypatch):
    """Claude Code on one OctoBench quick instance and the agent smoke suite: every instance's status
    and every check's verdict on docker are bubblewrap's."""
    monkeypatch.setenv("DOCKER_HOST", docker_host)
    stub_env.default = scripted
    _copy_suites(pytester.path / "suites")
    on_bubblewrap = _verdicts(pytester, stub_env, "bubblewrap")
    since = int(time.time()) - 1
    on_docker = _verdicts(pytester, stub_env, "docker")
    assert on_docker == on_bubblewrap
    assert _containers_created(docker_host, since) >= 3  # the runs were on the engine: one routed container each
    status, runner, error, checks = on_docker[OCTO_QUICK]
    assert runner == "claude_code" and error is None and status == "passed" and len(checks) >= 4
    assert all(passed for _, passed in checks) and ("uq-read-core", True) in checks
    assert dict(on_docker["write-greeting"][3])["says-hello"] is True
