"""A multi-turn agent instance (``turns:``) on the built-in loop, end to end against the stub: its record and
trajectory count the whole run, not its last user turn -- an error in a later turn keeps the earlier turns' paid
calls, ``meta.steps`` counts every turn's steps, and ``ifbench score --trajectories`` re-scores every turn with
the verdicts the run had."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench.sandbox import sandbox_problem
from pytest_ifbench.testing import Fault, Reply, StubServer
from pytest_ifbench.testing.wire import count_tokens
from tests._support import stub_args, write_agent_suite

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")

FIRST, SECOND = "Create hello.txt containing hello, then finish.", "Now show hello.txt, then finish."

SUITE = f"""
ifbench: 1
benchmark: agentturns
defaults:
  protocol: agent
  protocol_options: {{max_steps: 8, command_timeout: 20}}
instances:
  - id: two-turns
    environment: env
    turns:
      - user: {FIRST}
        checks: [{{id: says-wrote, verifier: ifbench.keywords, params: {{include: [wrote]}}}}]
      - user: {SECOND}
        checks: [{{id: says-hello, verifier: ifbench.keywords, params: {{include: [hello]}}}}]
    checks:
      - {{id: wrote, verifier: ifbench.tool_called, params: {{tool: write_file}}}}
      - {{id: showed, verifier: ifbench.tool_called, params: {{tool: bash, arguments: cat}}}}
      - {{id: summary, verifier: ifbench.judge, params: {{criterion: The final answer says what the file holds.}}}}
"""


def _call(name: str, arguments: dict[str, Any], ident: str) -> dict[str, Any]:
    return {"id": ident, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


#: The steps of each user turn, by the turn's query.
STEPS = {
    FIRST: [_call("write_file", {"path": "hello.txt", "content": "hello\n"}, "call_1"),
            _call("finish", {"answer": "I wrote hello.txt."}, "call_2")],
    SECOND: [_call("bash", {"command": "cat hello.txt"}, "call_3"),
             _call("finish", {"answer": "It says hello."}, "call_4")],
}
ANSWERS = ["I wrote hello.txt.", "It says hello."]


def steps_into_turn(body: dict[str, Any]) -> tuple[str, int]:
    """The query of the request's user turn and how many of its steps were answered already."""
    messages = body["messages"]
    last = max(i for i, m in enumerate(messages) if m["role"] == "user")
    query = next(text for text in STEPS if text in str(messages[last]["content"]))
    return query, sum(m["role"] == "assistant" for m in messages[last:])


def scripted(stub: StubServer, on_step: Any = None) -> None:
    """Each turn's next step; ``on_step(query, done)`` is called first. The judge says success to every check."""

    def answer(body: dict[str, Any]) -> Reply:
        if body.get("response_format"):
            schema = body["response_format"]["json_schema"]["schema"]
            ids = schema["properties"]["checks"]["items"]["properties"]["id"]["enum"]
            return Reply(content=json.dumps({"checks": [{"id": i, "reasoning": "in the transcript",
                                                         "result": "success"} for i in ids]}))
        query, done = steps_into_turn(body)
        if on_step is not None:
            on_step(query, done)
        return Reply(tool_calls=[STEPS[query][done]])

    stub.default = answer


@pytest.fixture
def turns_suite(pytester: pytest.Pytester) -> Path:
    return write_agent_suite(pytester.path, "suites/turns.yaml", SUITE)


def only_record(pytester: pytest.Pytester) -> dict[str, Any]:
    (record,) = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
    return record


def completion_tokens(call: dict[str, Any]) -> int:
    """What the stub counts for a reply that is this one tool call."""
    return count_tokens(" ".join(["", call["function"]["name"], call["function"]["arguments"]]))


def verdicts(record: dict[str, Any]) -> dict[str, bool]:
    return {c["id"]: c["passed"] for c in record["checks"]}


def test_an_error_in_the_second_turn_keeps_the_first_turns_paid_calls(pytester, stub_env, turns_suite):
    """The provider refuses the second call of turn 2: the record is an error that counts all three calls paid
    for, turn 1's two included (it counted turn 2's one, and the spending ledger more calls than the records)."""

    def refuse_the_next_call(query: str, done: int) -> None:
        if query == SECOND and done == 0:  # the script's lock is held here: queue the fault from another thread
            threading.Thread(target=stub_env.inject_faults, args=(Fault(kind="status", status=400, message="no"),),
                             kwargs={"match": "Now show"}).start()

    scripted(stub_env, refuse_the_next_call)
    result = pytester.runpytest("suites", *stub_args(stub_env))
    result.assert_outcomes(errors=1)
    answered = [r for r in stub_env.requests if r.fault is None and r.body]
    assert len(answered) == 3 and stub_env.calls == 4
    record = only_record(pytester)
    assert record["status"] == "error" and record["error_kind"] == "model" and "HTTP 400" in record["error"]
    assert record["paid_calls"] == len(answered)
    replies = [STEPS[FIRST][0], STEPS[FIRST][1], STEPS[SECOND][0]]
    assert record["tokens"]["completion"] == sum(map(completion_tokens, replies)) and record["tokens"]["prompt"] > 0


def run_live(pytester: pytest.Pytester, stub: StubServer) -> dict[str, Any]:
    """Run the suite with its trajectory written to ``traj/``; the record."""
    scripted(stub)
    pytester.runpytest("suites", *stub_args(stub), "--ifbench-trajectories=traj").assert_outcomes(passed=1)
    record = only_record(pytester)
    assert [t["response"]["text"] for t in record["turns"]] == ANSWERS
    assert len(verdicts(record)) == 5 and all(verdicts(record).values())
    return record


def test_the_trajectorys_steps_count_every_turn(pytester, stub_env, turns_suite):
    """``meta.steps`` is the run's model calls, as ``agent.steps`` (it said 2: the last turn's)."""
    record = run_live(pytester, stub_env)
    assert record["agent"]["steps"] == 4 and record["agent"]["trajectory"]["meta"]["steps"] == 4
    (written,) = (pytester.path / "traj").glob("*.json")
    meta = json.loads(written.read_text())["meta"]
    assert meta["steps"] == 4 and meta["completion_tokens"] == sum(map(completion_tokens, STEPS[FIRST] + STEPS[SECOND]))


def test_a_two_turn_run_is_rescored_with_the_verdicts_it_had(pytester, stub_env, turns_suite):
    """``ifbench score --trajectories``: every turn is scored with its answer, as live, and the judge's reply
    comes from the cache (it re-scored one turn, with the last message's text, and paid the judge again)."""
    live = run_live(pytester, stub_env)
    (pytester.path / "ifbench-results.json").unlink()
    calls = stub_env.calls
    rescored = pytester.run("ifbench", "score", "--suite", "suites", "--trajectories", "traj", "--",
                            *stub_args(stub_env))
    assert "no recorded trajectory" not in rescored.stdout.str() + rescored.stderr.str()
    again = only_record(pytester)
    assert [t["response"]["text"] for t in again["turns"]] == ANSWERS
    assert verdicts(again) == verdicts(live)
    # its node id is the live one's: the re-score's scratch file, given as a separate value, moved pytest's root
    # directory (every re-scored id gained the directories between, `pytest-of-root/.../suites/turns.yaml::…`)
    assert again["nodeid"] == live["nodeid"] == "suites/turns.yaml::two-turns"
    assert stub_env.calls == calls, "the judge was asked again: the re-scored run differs from the live one"


@pytest.mark.parametrize("limit", ["max_steps: 3", "max_tokens: TURN_ONE_TOKENS"])
def test_the_loops_limits_count_the_whole_run_not_each_turn(pytester, stub_env, limit):
    """A limit is the run's, as a real CLI's meter is: turn 1 takes two steps, so with three steps (or turn 1's
    completion tokens) turn 2 gets one step (none) and ends at the limit. The loop applied each limit to each user
    turn: both turns ran to their end, four steps, and ``max_cost`` let an N-turn instance spend N times it."""
    tokens = sum(map(completion_tokens, STEPS[FIRST]))
    suite = SUITE.replace("max_steps: 8", limit.replace("TURN_ONE_TOKENS", str(tokens)))
    write_agent_suite(pytester.path, "suites/turns.yaml", suite)
    scripted(stub_env)
    pytester.runpytest("suites", *stub_args(stub_env))
    record = only_record(pytester)
    steps = 3 if limit.startswith("max_steps") else 2
    agent_calls = [r for r in stub_env.requests if r.body and not r.body.get("response_format")]  # not the judge's
    assert record["agent"]["steps"] == steps and len(agent_calls) == steps
    assert record["agent"]["stop_reason"] == limit.split(":")[0]
