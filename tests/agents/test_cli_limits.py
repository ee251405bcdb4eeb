"""Every real-CLI call counted and capped: ``max_steps``, ``max_tokens``, ``max_cost`` and ``max_seconds``
hold for Claude Code, Kilo and Droid as for the built-in loop.

The scripted stub never lets the agent finish by itself (each reply calls the scaffold's write tool
again), so only a limit can end a run. Past the limit the proxy refuses with a clean error and ends the
CLI's sandbox; the stop reason is the loop's; every proxied call is in the run's steps, tokens and cost.
Through pytest under ``-n 2`` with ``max_steps: 2``, the results file counts those calls in the instance's
tokens and the agent's steps.
"""

from __future__ import annotations

import json
import time

import pytest

from pytest_ifbench.agents.cli import AGENT_CLIS, run_cli
from pytest_ifbench.agents.loop import STOP_REASONS
from pytest_ifbench.agents.normalize import load_raw, normalize
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.workspace import Workspace
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.testing import Reply
from tests._support import run_closing, stub_args, write_suite
from tests.agents._cli_scripts import CLI_WRITE

MODEL = "claude-sonnet-4-5"


def endless(name: str, *, slow_after: int | None = None):
    """The stub's reply: always one more write call (never a final answer); judge requests pass. From
    call ``slow_after`` on, replies take a minute."""
    count = [0]

    def reply(body: dict) -> Reply:
        if body.get("response_format"):
            schema = body["response_format"]["json_schema"]["schema"]
            ids = schema["properties"]["checks"]["items"]["properties"]["id"]["enum"]
            return Reply(content=json.dumps({"checks": [{"id": i, "reasoning": "ok", "result": "success"}
                                                         for i in ids]}))
        count[0] += 1
        latency = 60.0 if slow_after is not None and count[0] > slow_after else None
        if not body.get("tools"):  # a CLI's side call (a title, a summary): a short text
            return Reply(content="ok", latency=latency)
        tool, arguments = CLI_WRITE[name]
        arguments = {**arguments, "content": f"hello number {count[0]}\n"}
        return Reply(tool_calls=[{"function": {"name": tool, "arguments": arguments}}], latency=latency)
    return reply


def run(name: str, stub, tmp_path, options: AgentOptions, model: str = "openai/stub", lines=None):
    client = ModelClient(model=model, api_base=stub.url, retry=RetryPolicy(max_attempts=1, timeout=120))
    with Workspace.create(None, parent=tmp_path) as ws:
        began = time.monotonic()
        result = run_closing(run_cli(name, workspace=ws, queries=["Write hello.txt again and again."], system=None,
                                     model_name=MODEL, client=client, submit=None, options=options,
                                     log_path=tmp_path / "raw.jsonl", progress=lines.append if lines is not None
                                     else None))
        return result, time.monotonic() - began


def recorded_calls(result) -> list[dict]:
    records = [json.loads(line) for line in result.raw_log.read_text().splitlines()]
    return [r for r in records if "refused" not in r]


@pytest.mark.parametrize("name", list(AGENT_CLIS))
def test_max_steps_stops_a_real_cli_and_counts_every_call(name, agents, stub_env, tmp_path):
    stub_env.default = endless(name)
    lines: list[str] = []
    result, _ = run(name, stub_env, tmp_path, AgentOptions(max_steps=2, max_seconds=120), lines=lines)
    assert result.harness_error is None and result.agent_fault is None, (result.harness_error, result.stderr[-2000:])
    assert result.stop_reason == "max_steps" and result.stop_reason in STOP_REASONS
    usage = result.usage
    assert usage.steps == 2 == stub_env.calls == len(recorded_calls(result)) == len(usage.completions)
    assert usage.completion_tokens == sum(c.completion_tokens for c in usage.completions) > 0
    assert usage.prompt_tokens > 0 and usage.model_seconds > 0 and usage.tool_seconds > 0  # the real split
    meta = result.trajectory.meta
    assert meta["stop_reason"] == "max_steps" and meta["steps"] == 2
    assert meta["completion_tokens"] == usage.completion_tokens
    assert len(lines) == 2 and lines[0].startswith(f"step 1/2 ({name}): ") and "tokens" in lines[1]
    # The refusal is in the trajectory itself: rebuilt from the raw log alone, it says why the run ended.
    limits = [e for e in meta["refused_requests"] if e["kind"] == "limit"]
    assert limits and limits[0]["limit"] == "max_steps" and "2 model calls made, the limit is 2" in limits[0]["reason"]
    (rebuilt, *_) = normalize(load_raw(result.raw_log))
    assert rebuilt.meta["stop_reason"] == "max_steps" and "max_steps" in rebuilt.meta["stop_message"]
    assert not [e for e in meta["refused_requests"] if e["kind"] != "limit"]  # nothing else was refused


@pytest.mark.parametrize("name", list(AGENT_CLIS))
def test_max_tokens_stops_a_real_cli(name, agents, stub_env, tmp_path):
    stub_env.default = endless(name)
    result, _ = run(name, stub_env, tmp_path, AgentOptions(max_tokens=5, max_seconds=120))
    assert result.harness_error is None, (result.harness_error, result.stderr[-2000:])
    assert result.stop_reason == "max_tokens"
    usage = result.usage
    assert usage.completion_tokens >= 5 and usage.steps == stub_env.calls == len(recorded_calls(result)) <= 2


@pytest.mark.parametrize("name", list(AGENT_CLIS))
def test_max_cost_stops_a_real_cli(name, agents, stub_env, tmp_path):
    stub_env.default = endless(name)
    # A model litellm has a price for, so each call has a cost; the stub answers it.
    result, _ = run(name, stub_env, tmp_path, AgentOptions(max_cost=1e-9, max_seconds=120),
                    model="openai/gpt-4o-mini")
    assert result.harness_error is None, (result.harness_error, result.stderr[-2000:])
    assert result.stop_reason == "max_cost"
    assert result.usage.cost > 0 and result.trajectory.meta["cost"] == result.usage.cost
    assert result.usage.steps == stub_env.calls == 1


@pytest.mark.parametrize("name", list(AGENT_CLIS))
def test_max_seconds_holds_while_a_model_call_is_in_flight(name, agents, stub_env, tmp_path):
    stub_env.default = endless(name, slow_after=1)
    result, elapsed = run(name, stub_env, tmp_path, AgentOptions(max_seconds=25))
    assert result.harness_error is None, (result.harness_error, result.stderr[-2000:])
    assert result.stop_reason == "max_seconds"
    assert elapsed < 25 + 8, elapsed  # the one-minute reply was not waited for
    assert result.usage.steps == stub_env.calls >= 2


SUITE = """
ifbench: 1
benchmark: clilimits
defaults:
  protocol: agent
  scaffold: {name}
  protocol_options: {{runner: {name}, max_steps: 2, max_seconds: 120}}
instances:
  - id: write-forever
    prompt: Create hello.txt in the workspace, again and again.
    checks:
      - {{id: used-write, verifier: ifbench.tool_called, params: {{tool: {tool}}}}}
  - id: write-forever-too
    prompt: Create hello.txt in the workspace, again and again, please.
    checks:
      - {{id: used-write, verifier: ifbench.tool_called, params: {{tool: {tool}}}}}
"""


@pytest.mark.parametrize("name", list(AGENT_CLIS))
def test_max_steps_under_xdist_counts_proxied_calls_in_the_results(name, agents, pytester, stub_env):
    stub_env.default = endless(name)
    write_suite(pytester.path, "suites/limits.yaml", SUITE.format(name=name, tool=CLI_WRITE[name][0]))
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env), "--ifbench-timeout=60", "-n", "2")
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out, out[-3000:]
    records = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
    assert len(records) == 2
    for record in records:
        agent = record["agent"]
        assert record["status"] == "passed", record.get("error")
        assert agent["stop_reason"] == "max_steps" and agent["steps"] == 2
        assert record["tokens"]["prompt"] > 0 and record["tokens"]["completion"] > 0
        assert agent["model_seconds"] > 0
    assert stub_env.calls == 4  # 2 per instance, no judge
    assert sum(record["tokens"]["completion"] for record in records) == sum(
        record["agent"]["trajectory"]["meta"]["completion_tokens"] for record in records)


def test_each_proxied_step_is_a_log_line_of_the_run(agents, pytester, stub_env):
    stub_env.default = endless("claude_code")
    write_suite(pytester.path, "suites/limits.yaml", SUITE.format(name="claude_code", tool="Write"))
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env), "--ifbench-timeout=60",
                                           "--log-cli-level=INFO", "-k", "write-forever-too")
    out = result.stdout.str()
    for step in (1, 2):
        assert f"write-forever-too: step {step}/2 (claude_code): 1 tool call (Write); " in out, out[-3000:]
    assert "model 0.0 s, tools 0.0 s" not in out


def test_the_loop_holds_max_seconds_while_a_model_call_is_in_flight(stub_env, tmp_path):
    from pytest_ifbench._types import GenerationParams
    from pytest_ifbench.agents.loop import run_loop
    from pytest_ifbench.agents.profiles import ToolRegistry

    stub_env.default = Reply(content="slow", latency=30)
    client = ModelClient(model="openai/stub", api_base=stub_env.url, retry=RetryPolicy(max_attempts=1, timeout=60))
    with Workspace.create(None, parent=tmp_path) as ws:
        began = time.monotonic()
        result = run_closing(run_loop(client=client, messages=[{"role": "user", "content": "hi"}],
                                      profile=ToolRegistry().profile("generic"), workspace=ws,
                                      options=AgentOptions(max_seconds=2), params=GenerationParams()))
    assert result.stop_reason == "max_seconds" and time.monotonic() - began < 6


@pytest.mark.parametrize("name", list(AGENT_CLIS))
def test_the_run_s_spending_limit_ends_a_real_cli_as_an_error_of_the_harness(name, agents, stub_env, tmp_path):
    """``--ifbench-max-cost`` reached: the CLI's call is never sent, the CLI is told not to retry and ends
    within seconds, and the run is an error of the harness (not the agent's failure, not a scored stop)."""
    from pytest_ifbench.models.providers import make_client
    from pytest_ifbench.models.spending import SpendingLimit

    stub_env.default = endless(name)
    ledger = SpendingLimit.create(tmp_path / "ledger", 1e-12)
    ledger.end("openai/gpt-4o-mini", ledger.start("openai/gpt-4o-mini"), 1e-12)  # the run has paid its limit
    client = make_client("openai/gpt-4o-mini", api_base=stub_env.url, spending=ledger,
                         retry=RetryPolicy(max_attempts=1, timeout=120))
    with Workspace.create(None, parent=tmp_path) as ws:
        began = time.monotonic()
        result = run_closing(run_cli(name, workspace=ws, queries=["Write hello.txt."], system=None, model_name=MODEL,
                                     client=client, submit=None, options=AgentOptions(max_seconds=120),
                                     log_path=tmp_path / "raw.jsonl"))
        took = time.monotonic() - began
    assert result.agent_fault is None and "the run's spending limit is reached" in (result.harness_error or ""), (
        result.harness_error, result.stderr[-2000:])
    assert stub_env.calls == 0 and took < 60 and ledger.status().refused >= 1


def test_a_call_the_spending_limit_refused_at_the_last_step_is_still_an_error(agents, stub_env, tmp_path):
    """max_steps 2, and the run's limit lets only the first call through: the second step's call is refused,
    which also reaches max_steps. It was a scored max_steps stop (the instance passed, the limit reached);
    it is an error of the harness, as any refused call is (found by a user)."""
    from pytest_ifbench.models.providers import make_client
    from pytest_ifbench.models.spending import SpendingLimit

    name = "claude_code"
    stub_env.default = endless(name)
    ledger = SpendingLimit.create(tmp_path / "ledger", 1e-12)  # the first call goes (no price yet), then none
    client = make_client("openai/gpt-4o-mini", api_base=stub_env.url, spending=ledger,
                         retry=RetryPolicy(max_attempts=1, timeout=120))
    with Workspace.create(None, parent=tmp_path) as ws:
        result = run_closing(run_cli(name, workspace=ws, queries=["Write hello.txt."], system=None, model_name=MODEL,
                                     client=client, submit=None, options=AgentOptions(max_steps=2, max_seconds=120),
                                     log_path=tmp_path / "raw.jsonl"))
    assert stub_env.calls == 1 and ledger.status().refused >= 1
    assert "the run's spending limit is reached" in (result.harness_error or ""), (
        result.harness_error, result.stop_reason, result.stderr[-2000:])
