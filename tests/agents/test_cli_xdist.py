"""Real agent CLIs under ``-n 2`` (xdist) and re-scored offline from their trajectories.

Each CLI runs two quick instances of one suite against the scripted stub, spread over two xdist workers:
the CLIs' tool schemas carry integers execnet cannot send (``-9007199254740991``), which must not end the
run in an internal error. The trajectories written by that run are then re-scored with
``ifbench score --trajectories`` and must give the same verdicts, check by check.
"""

from __future__ import annotations

import json

import pytest

from pytest_ifbench.sandbox import sandbox_problem
from tests._support import stub_args, write_suite
from tests.agents._cli_scripts import CLI_WRITE, cli_script

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")

SUITE = """
ifbench: 1
benchmark: clixdist
defaults:
  protocol: agent
  scaffold: {name}
  protocol_options: {{runner: {name}, max_seconds: 120}}
instances:
  - id: write-hello
    prompt: Create hello.txt in the workspace.
    checks:
      - {{id: file, verifier: ifbench.file_contains, params: {{path: hello.txt, text: hello}}}}
      - {{id: used-write, verifier: ifbench.tool_called, params: {{tool: {tool}}}}}
      - {{id: no-bash, verifier: ifbench.tool_called, params: {{tool: NoSuchTool}}}}
      - {{id: reports, verifier: ifbench.judge, params: {{criterion: The final answer says the file was written.}}}}
  - id: write-again
    prompt: Create hello.txt in the workspace once more.
    checks:
      - {{id: used-write, verifier: ifbench.tool_called, params: {{tool: {tool}}}}}
      - {{id: no-reset, verifier: ifbench.tool_not_called, params: {{arguments: 'reset --hard'}}}}
"""



def verdicts(path) -> dict[tuple[str, str], bool]:
    records = json.loads(path.read_text())["instances"]
    return {(r["instance"], c["id"]): c["passed"] for r in records for c in r["checks"]
            if c["verifier"] != "ifbench.file_contains"}  # a workspace check needs the workspace


@pytest.mark.parametrize("name", ["claude_code", "kilo", "droid"])
def test_a_real_cli_under_xdist_is_rescored_with_the_same_verdicts(name, agents, pytester, stub_env):
    stub_env.default = cli_script(name)
    write_suite(pytester.path, "suites/cli.yaml", SUITE.format(name=name, tool=CLI_WRITE[name][0]))
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env), "--ifbench-timeout=60", "-n", "2",
                                           "--ifbench-trajectories=traj")
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str(), result.stderr.str()[-3000:]
    run = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
    assert sorted(r["instance"] for r in run) == ["write-again", "write-hello"]
    for record in run:
        assert record["status"] in ("passed", "failed"), record.get("error")
        assert record["agent"]["runner"] == name
        tools = record["agent"]["trajectory"]["meta"].get("tools") or record["agent"]["trajectory"].get("tools")
        assert tools is None or isinstance(tools, list)
    live = verdicts(pytester.path / "ifbench-results.json")
    assert live[("write-hello", "used-write")] is True and live[("write-hello", "no-bash")] is False

    files = sorted(p.name for p in (pytester.path / "traj").glob("*.json"))
    assert len(files) == 2, files
    (pytester.path / "ifbench-results.json").unlink()
    calls = stub_env.calls
    rescored = pytester.run("ifbench", "score", "--suite", "suites", "--trajectories", "traj", "--",
                            *stub_args(stub_env))
    assert "no recorded trajectory" not in rescored.stdout.str() + rescored.stderr.str()
    assert verdicts(pytester.path / "ifbench-results.json") == live
    assert stub_env.calls - calls <= 1  # the judge at most (its reply is cached): the agent is not run again
