"""A multi-turn agent instance (``turns:``) under a real CLI that continues its conversation (Claude Code, Kilo):
each user turn is scored on its own answer -- the last assistant text its command produced -- live and when
re-scored from the trajectory's ``meta.turn_answers``, as on the built-in loop. The CLI's run gave one answer, the
last turn's: turn 1's checks were decided on it and the later turns had no record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench.agents.cli import run_cli
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.workspace import Workspace
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.testing import Reply
from tests._support import run_closing, stub_args, write_agent_suite
from tests.agents._cli_scripts import CLI_WRITE, text_of

FIRST, SECOND, THIRD = "Say hello to the team.", "Now say goodbye to them.", "And say it once more."
HELLO, GOODBYE = "Hello, team!", "Goodbye, team!"
MULTI_TURN_CLIS = ["claude_code", "kilo"]  # Droid runs single-turn instances only (`multi_turn=False`)

SUITE = f"""
ifbench: 1
benchmark: cliturns
defaults:
  protocol: agent
  protocol_options: {{max_steps: 8}}
instances:
  - id: two-turns
    environment: env
    turns:
      - user: {FIRST}
        checks: [{{id: greets, verifier: ifbench.keywords, params: {{include: [hello], exclude: [goodbye]}}}}]
      - user: {SECOND}
        checks: [{{id: parts, verifier: ifbench.keywords, params: {{include: [goodbye], exclude: [hello]}}}}]
"""


def two_turns(name: str):
    """The stub's reply, by the latest query in the request: turn 1 writes hello.txt with the CLI's own tool,
    then (its result back) says hello; turn 2 says goodbye at once. A side call (no tools: a title) gets a
    title, so only the main conversation holds the answers."""
    def reply(body: dict[str, Any]) -> Reply:
        if not body.get("tools"):
            return Reply(content="Team greetings")
        messages = body.get("messages") or []
        asked = [i for i, m in enumerate(messages) if m.get("role") == "user"
                 and any(query in text_of(m.get("content")) for query in (FIRST, SECOND, THIRD))]
        latest = text_of(messages[asked[-1]].get("content")) if asked else FIRST
        if SECOND in latest or THIRD in latest:
            return Reply(content=GOODBYE)
        if not any(m.get("role") == "tool" for m in messages[asked[-1] if asked else 0:]):
            tool, arguments = CLI_WRITE[name]
            return Reply(tool_calls=[{"function": {"name": tool, "arguments": arguments}}])
        return Reply(content=HELLO)
    return reply


def run(name: str, stub, tmp_path: Path, queries: list[str], options: AgentOptions):
    client = ModelClient(model="openai/stub", api_base=stub.url, retry=RetryPolicy(max_attempts=1, timeout=60))
    with Workspace.create(None, parent=tmp_path) as ws:
        return run_closing(run_cli(name, workspace=ws, queries=queries, system=None, model_name="claude-sonnet-4-5",
                                   client=client, submit=None, options=options, log_path=tmp_path / "raw.jsonl"))


@pytest.mark.parametrize("name", MULTI_TURN_CLIS)
def test_each_command_of_a_real_cli_gives_its_turns_answer(name, agents, stub_env, tmp_path):
    """Turn 1 called a tool, then answered: its answer is that last text, not the run's last one."""
    stub_env.default = two_turns(name)
    result = run(name, stub_env, tmp_path, [FIRST, SECOND], AgentOptions(max_seconds=120))
    assert result.harness_error is None, (result.harness_error, result.stderr[-2000:])
    assert result.turn_texts == (HELLO, GOODBYE), [m.content for m in result.trajectory.assistant_turns()]
    assert result.trajectory.meta["turn_answers"] == [HELLO, GOODBYE]
    assert result.final_text == GOODBYE
    # what each CLI resends of turn 1 in turn 2 (its tool output included) is what it sent: no rewrite found
    assert not [t.meta["history_rewrites"] for t in result.trajectory.walk() if t.meta.get("history_rewrites")]


def test_a_turn_cut_short_keeps_what_it_has_and_a_turn_never_sent_has_no_answer(agents, stub_env, tmp_path):
    """``max_steps: 2``: turn 1 takes both steps (a tool call, the answer), turn 2's first call is refused, and
    the run ends there: turn 2 answered nothing, turn 3 was never sent."""
    stub_env.default = two_turns("claude_code")
    result = run("claude_code", stub_env, tmp_path, [FIRST, SECOND, THIRD], AgentOptions(max_steps=2, max_seconds=120))
    assert result.harness_error is None and result.stop_reason == "max_steps", (result.harness_error,
                                                                               result.stderr[-2000:])
    assert result.turn_texts == (HELLO, "") and result.trajectory.meta["turn_answers"] == [HELLO, ""]
    assert stub_env.calls == 2


def _record(pytester: pytest.Pytester) -> dict[str, Any]:
    (record,) = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
    return record


def _verdicts(record: dict[str, Any]) -> dict[str, bool]:
    return {check["id"]: check["passed"] for check in record["checks"]}


def test_each_turn_is_scored_on_its_own_answer_live_and_rescored(agents, pytester, stub_env):
    write_agent_suite(pytester.path, "suites/turns.yaml", SUITE)
    stub_env.default = two_turns("claude_code")
    live = pytester.runpytest_subprocess("suites", *stub_args(stub_env), "--ifbench-agent-runner=claude_code",
                                         "--ifbench-trajectories=traj")
    record = _record(pytester)
    assert record["agent"]["runner"] == "claude_code", live.stdout.str()[-2000:]
    assert [turn["response"]["text"] for turn in record["turns"]] == [HELLO, GOODBYE]
    assert _verdicts(record) == {"turn1.greets": True, "turn2.parts": True}, record["checks"]
    (written,) = (pytester.path / "traj").glob("*.json")
    assert json.loads(written.read_text())["meta"]["turn_answers"] == [HELLO, GOODBYE]

    (pytester.path / "ifbench-results.json").unlink()
    calls = stub_env.calls
    rescored = pytester.run("ifbench", "score", "--suite", "suites", "--trajectories", "traj", "--",
                            *stub_args(stub_env))
    again = _record(pytester)
    assert _verdicts(again) == _verdicts(record), rescored.stdout.str()[-2000:]
    assert [turn["response"]["text"] for turn in again["turns"]] == [HELLO, GOODBYE]
    assert stub_env.calls == calls  # no model call: the agent is not run again
