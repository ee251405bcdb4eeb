"""Who is to blame when a real CLI's run ends badly (``pytest_ifbench.agents.cli``'s module doc): what the
agent did in its sandbox -- a process its command left running, its CLI's settings it edited -- is a failure
of the instance with its reason (or, its final answer received, scored), never a harness error, which ISR
and CSR leave out; a sandbox limit before the agent ran any command stays an error.

The real Kilo runs against the scripted stub (as in ``test_relay_integrity``); the decisions themselves are
checked on :func:`~pytest_ifbench.agents.cli._blame` directly too.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_ifbench.agents.cli import run_cli
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.workspace import Workspace
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.sandbox.backend import CommandResult
from pytest_ifbench.testing import Reply
from tests._support import run_closing
from tests.agents.test_relay_integrity import MODEL, REAL_ANSWER, RELAY, attack, refused


def test_a_dead_model_address_after_an_mcp_server_at_the_relay_is_the_agents_failure(agents, stub_env, tmp_path):
    """The audit's repro: turn 1's command points Kilo's own settings at an MCP server at the relay and the
    model at a dead address. In turn 2 Kilo's MCP ``initialize`` was refused as untranslatable and its model
    call reached nothing; the untranslatable request was blamed first, so the agent's breaking its CLI was a
    harness error (excluded from ISR and CSR), where without the MCP entry the same run was the agent's
    failure. Kilo's configuration files are now compared between turns (``Kilo.loads_at_start``): the run
    ends as the agent's failure before Kilo starts again, naming the file. (The blame order itself, an
    untranslatable request after the agent broke its CLI, is checked on ``_blame`` below.)"""
    edit = ("node -e 'const fs=require(\"fs\"),p=process.env.HOME+\"/.config/kilo/kilo.json\";"
            f"const j=JSON.parse(fs.readFileSync(p));j.mcp={{x:{{type:\"remote\",url:\"{RELAY}\"}}}};"
            "j.provider.anthropic.options.baseURL=\"http://127.0.0.1:9/v1\";fs.writeFileSync(p,JSON.stringify(j))'"
            " && echo edited")
    ws, result, requests = attack(edit, stub_env, tmp_path, cli="kilo", seconds=150,
                                  queries=("Do the task.", "Now the next one."))
    try:
        assert refused(result) == [] and result.harness_error is None, result.harness_error
        assert result.agent_fault is not None and result.agent_fault.startswith(
            "the agent's commands changed what kilo loads into its own process or prompt when it starts "
            "(/home/agent/.config/kilo/kilo.json)"), result.agent_fault
        assert result.stop_reason == "agent_fault" and result.turn_texts == (REAL_ANSWER,), result.turn_texts
        assert not any("Now the next one." in json.dumps(body) for body in requests)
    finally:
        ws.close()


FILL = ("setsid nohup sh -c 'sleep 2; for i in 1 2 3 4; do fallocate -l 400M /workspace/fill$i; done; sleep 60' "
        ">/dev/null 2>&1 & echo started")


@pytest.mark.parametrize("then", ["answer", "tool"])
def test_a_process_the_agent_left_filling_the_disk_during_a_model_call_is_no_error(then, agents, stub_env,
                                                                                   tmp_path):
    """Kilo's bash call leaves a process that fills the disk two seconds later, while the next model call
    waits eight seconds for the model; the sandbox's disk limit stops Kilo during that call. It was a
    harness error (``kilo hit the sandbox's disk limit``), though the final answer was received and counted.
    Now the final answer is scored (``answer``), as the built-in loop scores the answer after a tool command
    hit a limit; a reply asking for more tools that Kilo never ran is the agent's failure (``tool``)."""
    requests: list[dict[str, Any]] = []

    def reply(body: dict[str, Any]) -> Reply:
        requests.append(body)
        if not body.get("tools"):  # Kilo's title for the session
            return Reply(content=REAL_ANSWER)
        if not any(m.get("role") == "tool" for m in body.get("messages") or ()):
            return Reply(tool_calls=[{"function": {"name": "bash", "arguments": {
                "command": FILL, "description": "run the step"}}}])
        if then == "tool":
            return Reply(tool_calls=[{"function": {"name": "bash", "arguments": {
                "command": "ls", "description": "list"}}}], latency=8.0)
        return Reply(content=REAL_ANSWER, latency=8.0)

    stub_env.default = reply
    (tmp_path / "env").mkdir()
    client = ModelClient(model="openai/stub", api_base=stub_env.url, retry=RetryPolicy(max_attempts=1, timeout=30))
    with Workspace.create(tmp_path / "env", parent=tmp_path) as ws:
        result = run_closing(run_cli("kilo", workspace=ws, queries=["Do the task."], system=None, model_name=MODEL,
                                     client=client, submit=None, options=AgentOptions(max_seconds=120),
                                     log_path=tmp_path / "raw.jsonl"))
    assert result.harness_error is None, result.harness_error
    assert result.usage.steps == 2 == len(result.usage.completions), result.usage
    if then == "answer":
        assert result.agent_fault is None and result.turn_texts == (REAL_ANSWER,), result.agent_fault
        assert result.stop_reason == "end_turn"
        # scored, and the record still says the limit stopped the CLI (it said nothing)
        assert result.trajectory.meta["sandbox_limits"] == [{"turn": 1, "limit": "disk"}]
    else:
        assert result.agent_fault is not None and "disk limit" in result.agent_fault, result.agent_fault
        assert result.stop_reason == "agent_fault"
        assert result.trajectory.meta["sandbox_limits"] == []


# -- the decisions, on _blame itself ------------------------------------------------------------------------

ANSWER = {"stop_reason": "end_turn", "content": [{"type": "text", "text": REAL_ANSWER}]}
TOOL_USE = {"stop_reason": "tool_use", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]}
ERROR = "kilo hit the sandbox's memory limit: out of memory"


def blame(*, limit: str | None = None, returncode: int | None = 1, calls: int = 1, before: int = 0,
          last: dict[str, Any] | None = None, acted: bool = False, ran: bool = False, in_flight: bool = False,
          untranslatable: tuple[str, ...] = (), refused_before: int = 0):
    from pytest_ifbench.agents.cli import _blame

    done = CommandResult(argv=("kilo",), returncode=returncode, stdout="", stderr="Error: bye\n", duration=1.0,
                         limit=limit)
    proxy = SimpleNamespace(calls=calls, last_response=last or {}, pending_calls=0, failures=[],
                            untranslatable=list(untranslatable))
    return _blame(ERROR, "kilo", 1, done, proxy, before=before, acted=acted, ran=ran, in_flight=in_flight,
                  refused=refused_before)


def test_a_sandbox_limit_before_the_agent_ran_any_command_stays_an_error():
    """The CLI too big for the sandbox: nothing of the agent's had run, so the limit is the harness's."""
    assert blame(limit="memory", calls=0, last={}) == (ERROR, None)
    assert blame(limit="memory", calls=1, last=ANSWER, ran=False) == (ERROR, None)
    assert blame(limit="disk", calls=1, before=1, last=ANSWER, ran=False) == (ERROR, None)


def test_a_sandbox_limit_after_the_agent_ran_commands_is_its_failure_or_its_answer_is_scored():
    limited = ("the sandbox's disk limit stopped kilo without a final answer, after the agent's own commands had "
               "run in its sandbox")
    assert blame(limit="disk", calls=2, last=ANSWER, ran=True) == (None, None)  # the final answer was received
    assert blame(limit="disk", calls=2, last={"stop_reason": "end_turn", "content": []}, ran=True) == (None, limited)
    # a later turn stopped before its first model call: the answer on record is the turn before's
    assert blame(limit="disk", calls=2, before=2, last=ANSWER, ran=True, acted=True) == (None, limited)
    assert blame(limit="disk", calls=2, last=TOOL_USE, ran=True) == (
        None, "the agent's commands hit the sandbox's disk limit: Error: bye")  # its tool call was running


def test_an_untranslatable_request_is_an_error_only_before_the_agent_ran_commands():
    untranslatable = ("the proxy cannot translate this request: the request needs a \"messages\" list",)
    error, fault = blame(calls=1, before=1, last=ANSWER, acted=True, ran=True, untranslatable=untranslatable)
    assert error is None and fault is not None and fault.startswith("kilo made no model call in user turn 2"), fault
    assert blame(calls=0, untranslatable=untranslatable) == (
        f"model call through the proxy failed: {untranslatable[0]}", None)
    assert blame(calls=0, untranslatable=untranslatable, refused_before=1) == (ERROR, None)  # refused before it
