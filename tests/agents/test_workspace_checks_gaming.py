"""The checks of the final workspace (``ifbench.file_exists``, ``ifbench.file_contains``,
``ifbench.workspace_command``) cannot be passed by hiding or faking what they look at.

Each attack was found by playing the agent (a scripted model driving the built-in loop, its commands really
run in the sandbox): ``chmod 000 /workspace`` stopped every check's sandbox at its start (exit 1, read as
"does not exist", "cannot read", ``grep``'s "no match"); an unreadable file, a FIFO or a link to
``/dev/null`` "did not contain" the secret still in it; a directory chmodded 000 hid the file in it from
``test -e``; the text a negated check looks for sat past ``max_bytes``; a link to a system file or to
``/proc/self/cmdline`` "contained" what the agent never wrote. Honest workspaces keep their verdicts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench._composition import default_registry
from pytest_ifbench._types import CheckSpec
from pytest_ifbench._verify import CheckOutcome, VerifyContext, evaluate
from pytest_ifbench.sandbox import sandbox_problem
from pytest_ifbench.testing import Reply, StubServer
from tests._support import stub_args, write_suite

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")

REG = default_registry()

SUITE = """
ifbench: 1
benchmark: gaming
defaults:
  protocol: agent
  protocol_options: {max_steps: 8, command_timeout: 20}
instances:
  - id: game
    environment: env
    prompt: Do the task.
    checks:
"""


def _call(name: str, arguments: dict[str, Any], n: int) -> dict[str, Any]:
    return {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def _agent_run(pytester: pytest.Pytester, stub: StubServer, commands: list[str], checks: list[str],
               files: dict[str, str], *args: str) -> dict[str, dict[str, Any]]:
    """One instance whose agent runs ``commands`` (bash) in a workspace holding ``files``, then finishes;
    its records of ``checks`` (YAML flow mappings) by id."""
    env = pytester.path / "suites" / "env"
    for name, text in files.items():
        (env / name).parent.mkdir(parents=True, exist_ok=True)
        (env / name).write_text(text)
    write_suite(pytester.path, "suites/gaming.yaml", SUITE + "".join(f"      - {c}\n" for c in checks))
    steps = [[_call("bash", {"command": c}, n)] for n, c in enumerate(commands)]
    steps.append([_call("finish", {"answer": "Done."}, len(commands))])

    def answer(body: dict[str, Any]) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return Reply(tool_calls=steps[min(done, len(steps) - 1)])

    stub.default = answer
    pytester.runpytest("suites", *stub_args(stub), *args)
    return _checks(pytester.path / "ifbench-results.json")


def _checks(results: Path) -> dict[str, dict[str, Any]]:
    (record,) = json.loads(results.read_text())["instances"]
    return {c["id"]: c for c in record["checks"]}


def _evidence(record: dict[str, Any]) -> str:
    return (record.get("verdict") or {}).get("evidence") or ""


def _check(verifier_id: str, params: dict[str, Any], workspace: Any) -> CheckOutcome:
    spec = CheckSpec(id="c", verifier=verifier_id, params=REG.get(verifier_id).validate(params))
    (outcome,) = evaluate([spec], "", VerifyContext(registry=REG, workspace=workspace))
    return outcome


def _failed(outcome: CheckOutcome) -> bool:
    """Failed as a verdict: neither passed nor an error."""
    return not outcome.passed and outcome.error is None


@pytest.fixture
def workspace(tmp_path):
    """A real sandboxed workspace; checks called directly (no ``clear_home_and_tmp`` before them)."""
    from pytest_ifbench.agents.workspace import Workspace

    env = tmp_path / "env"
    (env / "build").mkdir(parents=True)
    (env / "build" / "secret.key").write_text("-----BEGIN KEY-----\n")
    (env / "app.py").write_text("x = 1  # TODO\n")
    with Workspace.create(env, parent=tmp_path) as ws:
        yield ws
        ws.run("chmod -R u+rwx .")


# --- 1. `chmod 000 /workspace`: every check's sandbox failed to start, and exit 1 was read as an answer -------

LOCK_CHECKS = [
    "{id: key-removed, verifier: ifbench.file_exists, params: {path: secret.key, negate: true}}",
    "{id: no-todo, verifier: ifbench.file_contains, params: {path: app.py, text: TODO, negate: true}}",
    "{id: no-todo-cmd, verifier: ifbench.workspace_command, params: {command: 'grep -rq TODO .', exit_code: 1}}",
    "{id: no-hidden-key, verifier: ifbench.workspace_command, params: {command: 'test ! -e build/secret.key'}}",
    "{id: readme, verifier: ifbench.file_contains, params: {path: README.md, text: a workspace}}",
]
LOCK_FILES = {"README.md": "a workspace\n", "app.py": "x = 1  # TODO\n", "secret.key": "KEY\n",
              "build/secret.key": "KEY\n"}


def test_a_workspace_the_agent_locked_is_opened_again_for_its_checks_and_its_re_score(pytester, stub_env):
    checks = _agent_run(pytester, stub_env, ["chmod 000 build && chmod 000 /workspace"], LOCK_CHECKS, LOCK_FILES,
                        "--ifbench-trajectories=traj")
    verdicts = {name: (c["passed"], c.get("error")) for name, c in checks.items()}
    assert verdicts == {"key-removed": (False, None), "no-todo": (False, None), "no-todo-cmd": (False, None),
                        "no-hidden-key": (False, None), "readme": (True, None)}, checks
    assert _evidence(checks["key-removed"]) == "secret.key exists"
    assert "app.py contains 'TODO'" in _evidence(checks["no-todo"])

    rescored = pytester.run("ifbench", "score", "--suite", "suites", "--trajectories", "traj",
                            "--results", "rescored.json", "--", *stub_args(stub_env))
    again = {name: (c["passed"], c.get("error")) for name, c in _checks(pytester.path / "rescored.json").items()}
    assert again == verdicts, rescored.stdout.str()[-3000:]


@pytest.fixture(params=["dockerd", "podman"])
def docker_host(request, monkeypatch):
    """A private engine (``tests/sandbox/dockerd.py``; skipped with its reason where it cannot start)."""
    from tests.sandbox.dockerd import private_engine

    with private_engine(request.param) as host:
        monkeypatch.setenv("DOCKER_HOST", host)
        yield host


def test_on_docker_a_locked_workspace_a_fifo_and_a_link_out_get_bubblewraps_verdicts(docker_host, pytester,
                                                                                     stub_env):
    checks = [*LOCK_CHECKS,
              "{id: fifo, verifier: ifbench.file_contains, params: {path: pipe, text: x, negate: true}}",
              "{id: license, verifier: ifbench.file_contains, params: {path: LICENSE, text: Apache License}}"]
    command = ("mkfifo pipe && ln -s /usr/share/common-licenses/Apache-2.0 LICENSE && chmod 000 build && "
               "chmod 000 /workspace")
    records = _agent_run(pytester, stub_env, [command], checks, LOCK_FILES, "--ifbench-sandbox=docker")
    verdicts = {name: (c["passed"], c.get("error")) for name, c in records.items()}
    assert verdicts == {"key-removed": (False, None), "no-todo": (False, None), "no-todo-cmd": (False, None),
                        "no-hidden-key": (False, None), "readme": (True, None), "fifo": (False, None),
                        "license": (False, None)}, records
    assert _evidence(records["fifo"]) == "cannot read pipe: not a regular file"
    assert "it leads outside the workspace" in _evidence(records["license"])


def test_a_sandbox_that_did_not_start_never_answers_a_file_check(tmp_path):
    @dataclass
    class Failed:
        returncode: int = 1
        stdout: str = ""
        stderr: str = "bwrap: Can't chdir to /workspace: Permission denied"
        duration: float = 0.01
        limit: str | None = None

    class Broken:
        def run(self, command: str, *, limits: Any) -> Failed:
            return Failed()

    exists = _check("ifbench.file_exists", {"path": "secret.key", "negate": True}, Broken())
    assert not exists.passed and exists.error and "Can't chdir" in exists.error
    contains = _check("ifbench.file_contains", {"path": "app.py", "text": "TODO", "negate": True}, Broken())
    assert not contains.passed and "Can't chdir" in (contains.error or contains.verdict.evidence)


# --- 2. a negated file_contains passed on a file that exists but cannot be read ----------------------------

UNREADABLE = {
    "chmod 000": ("chmod 000 settings.py", "Permission denied"),
    "fifo": ("mv settings.py .s && mkfifo settings.py", "not a regular file"),
    "link to /dev/null": ("mv settings.py .s && ln -s /dev/null settings.py", "outside the workspace"),
    "directory": ("mv settings.py .s && mkdir settings.py", "not a regular file"),
}


@pytest.mark.parametrize("trick", list(UNREADABLE))
def test_only_a_missing_file_satisfies_a_negated_file_contains(pytester, stub_env, trick):
    command, reason = UNREADABLE[trick]
    checks = _agent_run(pytester, stub_env, [command + " && rm old.py"], [
        "{id: no-key-left, verifier: ifbench.file_contains, params: {path: settings.py, text: sk-live, negate: true}}",
        "{id: old-gone, verifier: ifbench.file_contains, params: {path: old.py, text: sk-live, negate: true}}",
    ], {"README.md": "a workspace\n", "settings.py": "API_KEY = 'sk-live-123'\n", "old.py": "sk-live\n"})
    assert not checks["no-key-left"]["passed"] and checks["no-key-left"].get("error") is None, checks
    evidence = _evidence(checks["no-key-left"])
    assert evidence.startswith("cannot read settings.py") and reason in evidence, evidence
    assert checks["old-gone"]["passed"], checks  # what the agent removed contains nothing
    assert _evidence(checks["old-gone"]) == "cannot read old.py: it does not exist"


# --- 3. a negated file_exists passed on a file whose directory the agent chmodded 000 ----------------------

def test_a_file_in_a_directory_the_agent_closed_still_exists_for_its_checks(pytester, stub_env):
    checks = _agent_run(pytester, stub_env, ["chmod 000 build"], [
        "{id: key-removed, verifier: ifbench.file_exists, params: {path: build/secret.key, negate: true}}",
        "{id: key-gone, verifier: ifbench.file_contains, params: {path: build/secret.key, text: KEY, negate: true}}",
    ], {"README.md": "a workspace\n", "build/secret.key": "-----BEGIN KEY-----\n"})
    assert [(c["passed"], c.get("error")) for c in checks.values()] == [(False, None), (False, None)], checks
    assert _evidence(checks["key-removed"]) == "build/secret.key exists"


def test_file_exists_fails_when_it_cannot_tell(workspace):
    """What the checks cannot reach (a directory they may not search) neither exists nor is missing."""
    assert workspace.run("chmod 000 build").returncode == 0
    for path in ("build/secret.key", "build/nothing-here"):
        for negate in (False, True):
            outcome = _check("ifbench.file_exists", {"path": path, "negate": negate}, workspace)
            assert _failed(outcome), (path, negate, outcome)
            assert outcome.verdict.evidence.startswith(f"cannot tell whether {path} exists: "), outcome.verdict
            assert "Permission denied" in outcome.verdict.evidence
    assert _check("ifbench.file_exists", {"path": "nothing-here", "negate": True}, workspace).passed
    assert _check("ifbench.file_exists", {"path": "app.py/x", "negate": True}, workspace).passed  # not a dir
    assert _check("ifbench.file_exists", {"path": "app.py"}, workspace).passed


# --- 4. a negated file_contains passed when the text sat past max_bytes -------------------------------------

def test_a_negated_file_contains_needs_the_whole_file(pytester, stub_env):
    pad = "python3 -c \"s=open('app.py').read(); open('app.py','w').write('#' + ' '*100100 + '\\n' + s)\""
    checks = _agent_run(pytester, stub_env, [pad], [
        "{id: no-todo-left, verifier: ifbench.file_contains, params: {path: app.py, text: TODO, negate: true}}",
        "{id: small-clean, verifier: ifbench.file_contains, params: {path: lib.py, text: TODO, negate: true}}",
    ], {"README.md": "a workspace\n", "app.py": "def main():\n    pass  # TODO: implement\n",
        "lib.py": "def lib():\n    return 1\n"})
    assert not checks["no-todo-left"]["passed"] and checks["no-todo-left"].get("error") is None, checks
    evidence = _evidence(checks["no-todo-left"])
    assert "only its first 100000 bytes (of 100142) were searched" in evidence, evidence
    assert checks["small-clean"]["passed"], checks


def test_a_negated_file_contains_at_the_cap(workspace):
    assert workspace.run("printf 0123456789 > ten.txt").returncode == 0
    whole = _check("ifbench.file_contains", {"path": "ten.txt", "text": "X", "negate": True, "max_bytes": 10},
                   workspace)
    assert whole.passed and not whole.verdict.details["truncated"], whole.verdict
    cut = _check("ifbench.file_contains", {"path": "ten.txt", "text": "X", "negate": True, "max_bytes": 9}, workspace)
    assert _failed(cut) and cut.verdict.details["truncated"], cut.verdict
    found = _check("ifbench.file_contains", {"path": "ten.txt", "text": "012", "negate": True, "max_bytes": 9},
                   workspace)
    assert _failed(found) and "ten.txt contains '012'" in found.verdict.evidence


# --- 5. file_contains read a system file, or /proc, through a link the agent planted -----------------------

def test_a_link_leading_out_of_the_workspace_is_not_the_agent_s_file(pytester, stub_env):
    checks = _agent_run(pytester, stub_env, [
        "ln -s /usr/share/common-licenses/Apache-2.0 LICENSE && ln -s /proc/self/cmdline report.txt && "
        "mkdir docs && echo 'Apache License, Version 2.0' > docs/LICENSE.txt && ln -s docs/LICENSE.txt COPYING",
    ], [
        "{id: license, verifier: ifbench.file_contains, params: {path: LICENSE, text: Apache License}}",
        "{id: report, verifier: ifbench.file_contains, params: {path: report.txt, text: report}}",
        "{id: copying, verifier: ifbench.file_contains, params: {path: COPYING, text: Apache License}}",
        "{id: license-link, verifier: ifbench.file_exists, params: {path: LICENSE}}",
    ], {"README.md": "a workspace\n"})
    verdicts = {name: (c["passed"], c.get("error")) for name, c in checks.items()}
    assert verdicts == {"license": (False, None), "report": (False, None), "copying": (True, None),
                        "license-link": (True, None)}, checks
    assert _evidence(checks["license"]) == ("cannot read LICENSE: it leads outside the workspace, to "
                                            "/usr/share/common-licenses/Apache-2.0")
    assert "cannot read report.txt: it leads outside the workspace, to /proc/" in _evidence(checks["report"])
    # the name is in the workspace (a venv's bin/python is such a link): it exists, and says where it leads
    assert _evidence(checks["license-link"]) == ("LICENSE exists (a link leading outside the workspace, to "
                                                 "/usr/share/common-licenses/Apache-2.0)")
