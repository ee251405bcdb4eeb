"""What an agent leaves behind cannot decide its checks: the checks run in the final workspace with the
run's HOME and /tmp emptied, and a file check reads only regular files.

Each attack here was found by playing the agent (a scripted model driving the built-in loop): a
``usercustomize.py`` in its user site made ``python3 test_calc.py`` exit 0 with ``add()`` still wrong,
and a FIFO where a file was expected turned a failed check into an error after a 30 s wait."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from pytest_ifbench.sandbox import sandbox_problem
from pytest_ifbench.testing import Reply, StubServer
from tests._support import stub_args, write_suite

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")

SUITE = """
ifbench: 1
benchmark: tamper
defaults:
  protocol: agent
  protocol_options: {max_steps: 6, command_timeout: 20}
instances:
  - id: fix-add
    environment: env
    prompt: Fix add() in calc.py so that test_calc.py passes.
    checks:
      - {id: tests-pass, verifier: ifbench.workspace_command, params: {command: python3 test_calc.py}}
      - {id: git-name, verifier: ifbench.workspace_command, params: {command: 'test -z "$(git config user.name)"'}}
      - {id: result, verifier: ifbench.file_contains, params: {path: result.txt, text: '5'}}
"""

CALC = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\nassert add(2, 3) == 5, add(2, 3)\nprint('ok')\n"

#: The agent leaves a user-site hook that turns any failing script into exit 0, a git identity in its
#: HOME, a FIFO where result.txt should be, and a file in /tmp; it never touches calc.py.
PLANT = (
    'site=$(python3 -c "import site; print(site.getusersitepackages())") && mkdir -p "$site" && '
    "printf 'import os, sys\\nsys.excepthook = lambda *a: os._exit(0)\\n' > \"$site/usercustomize.py\" && "
    "git config --global user.name forger && mkfifo result.txt && echo planted > /tmp/left-behind && "
    'python3 test_calc.py; echo "exit $?"'
)


def _call(name: str, arguments: dict[str, Any], n: int) -> dict[str, Any]:
    return {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def _script(stub: StubServer) -> None:
    steps = [[_call("bash", {"command": PLANT}, 1)], [_call("finish", {"answer": "Fixed."}, 2)]]

    def answer(body: dict[str, Any]) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return Reply(tool_calls=steps[min(done, len(steps) - 1)])

    stub.default = answer


@pytest.mark.parametrize("keep", [False, True], ids=["removed", "kept"])
def test_what_the_agent_left_in_home_and_tmp_cannot_pass_a_check(pytester, stub_env, keep):
    check_home_and_tmp(pytester, stub_env, keep=keep)


def check_home_and_tmp(pytester: pytest.Pytester, stub_env: StubServer, *args: str, keep: bool) -> None:
    """The run above on the process's sandbox backend (``args``: more options, e.g. another backend)."""
    env = pytester.path / "suites" / "env"
    env.mkdir(parents=True)
    (env / "calc.py").write_text(CALC)
    (env / "test_calc.py").write_text(TEST)
    write_suite(pytester.path, "suites/tamper.yaml", SUITE)
    _script(stub_env)
    workspaces = pytester.path / "ws"
    workspaces.mkdir()
    started = time.monotonic()
    result = pytester.runpytest("suites/tamper.yaml", *stub_args(stub_env), f"--ifbench-workspaces={workspaces}",
                                *(["--ifbench-keep-workspaces"] if keep else []), *args)
    result.assert_outcomes(failed=3)  # the instance and its two failed checks; no error
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    assert record["status"] == "failed"
    tool_output = [m["content"] for m in record["agent"]["trajectory"]["messages"] if m["role"] == "tool"][0]
    assert "exit 0" in tool_output  # the hook worked while the agent ran: add() is still wrong
    checks = {c["id"]: c for c in record["checks"]}
    assert not checks["tests-pass"]["passed"] and "AssertionError: -1" in checks["tests-pass"]["verdict"]["evidence"]
    assert checks["git-name"]["passed"]  # its ~/.gitconfig is not the checks'
    assert not checks["result"]["passed"] and checks["result"].get("error") is None
    assert "result.txt: not a regular file" in checks["result"]["verdict"]["evidence"]
    assert time.monotonic() - started < 25  # the FIFO was never opened (its read waited the 30 s timeout)
    if keep:  # kept for a post-mortem, outside what the checks saw
        (root,) = workspaces.glob("ifbench-ws-*")
        assert (root / "agent-tmp" / "left-behind").read_text() == "planted\n"
        assert (root / "agent-home" / ".gitconfig").is_file()
        assert list((root / "home").iterdir()) == [] and list((root / "tmp").iterdir()) == []


ECHO_SUITE = """
ifbench: 1
benchmark: echo
defaults:
  protocol: agent
  protocol_options: {max_steps: 6, command_timeout: 20}
instances:
  - id: echo
    prompt: Write notes.txt, then finish.
    checks:
      - {id: notes, verifier: ifbench.file_exists, params: {path: notes.txt}}
"""


def test_a_reply_that_echoes_the_key_or_holds_a_lone_surrogate_is_acted_on_cleaned(pytester, stub_env):
    """A model (or provider) echoing the API key in its tool calls and answer: the loop writes no key into
    the sandbox's files or the trajectory file. Half an emoji (a lone surrogate, valid JSON, not UTF-8) in
    its answer: the instance is decided as usual; it errored with UnicodeEncodeError in the trajectory
    writer (and, without trajectories, in Allure's)."""
    from pytest_ifbench.testing import FAKE_API_KEY

    key = FAKE_API_KEY
    steps = [[_call("write_file", {"path": "notes.txt", "content": f"key {key} {key[::-1]}"}, 1)],
             [_call("bash", {"command": f"echo {key} > echoed.txt; cat notes.txt echoed.txt"}, 2)],
             [_call("finish", {"answer": f"Done with {key} \ud83d and more."}, 3)]]

    def answer(body: dict[str, Any]) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return Reply(content=f"thinking about {key}", tool_calls=steps[min(done, len(steps) - 1)])

    stub_env.default = answer
    write_suite(pytester.path, "suites/echo.yaml", ECHO_SUITE)
    workspaces = pytester.path / "ws"
    workspaces.mkdir()
    result = pytester.runpytest("suites/echo.yaml", *stub_args(stub_env), f"--ifbench-workspaces={workspaces}",
                                "--ifbench-keep-workspaces", "--ifbench-trajectories=traj", "--alluredir=allure")
    result.assert_outcomes(passed=1)
    (root,) = workspaces.glob("ifbench-ws-*")
    assert "[REDACTED]" in (root / "workspace" / "notes.txt").read_text()
    assert (root / "workspace" / "echoed.txt").read_text() == "[REDACTED]\n"
    written = [*(pytester.path / "traj").glob("*.json"), *(pytester.path / "allure").iterdir(),
               pytester.path / "ifbench-results.json", *root.rglob("*")]
    for path in written:
        if path.is_file():
            data = path.read_bytes()
            assert key.encode() not in data and key[::-1].encode() not in data, path
            data.decode("utf-8")  # every file is UTF-8
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    assert record["turns"][0]["response"]["text"] == "Done with [REDACTED] \ufffd and more."
