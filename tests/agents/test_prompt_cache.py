"""An agent's steps ask Anthropic to cache their prompt, so each step pays 0.1x for what the last one sent.

Against the real stub as ``anthropic/claude-sonnet-4-5`` (the ``anthropic`` SDK route), the built-in
loop and a real CLI behind the relay: every step's request marks its system text and its last block
(``cache_control``), and what one step marked is, byte for byte, the start of the next step's request
-- the condition for Anthropic to read it from its cache. ``perf/bench_prompt_cache.py`` bills such runs.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from pytest_ifbench._types import GenerationParams
from pytest_ifbench.agents.cli import run_cli
from pytest_ifbench.agents.loop import run_loop
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.profiles import ToolRegistry
from pytest_ifbench.agents.workspace import Workspace
from pytest_ifbench.models.providers import make_client
from pytest_ifbench.testing import Reply
from pytest_ifbench.testing.anthropic_wire import cache_order
from tests._support import closing_sessions
from tests.agents._cli_scripts import CLI_WRITE

MODEL = "anthropic/claude-sonnet-4-5"


def _assert_each_step_reads_the_last(stub) -> None:
    bodies = [r.body for r in stub.requests if isinstance(r.body, dict) and r.body.get("tools")]
    assert len(bodies) >= 3
    for body in bodies:
        assert "cache_control" in body["system"][-1] and "cache_control" in body["messages"][-1]["content"][-1], \
            "system text and last block marked"
        assert sum(marked for _, marked in cache_order(body)) == 2
    steps = [[text for text, _ in cache_order(body)] for body in bodies]
    for before, after in zip(steps, steps[1:], strict=False):
        assert after[:len(before)] == before, "the next step starts with all this one sent, up to its last mark"


def test_the_built_in_loop_asks_for_its_prompt_to_be_cached(stub_env, monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-ifbench-test-0123456789abcdef")

    def answer(body: dict) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        name, args = ("finish", {"answer": "done"}) if done >= 3 else ("bash", {"command": f"echo {done}"})
        return Reply(tool_calls=[{"id": f"call_{done}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}}])

    stub_env.default = answer
    client = make_client(MODEL, api_base=stub_env.url.removesuffix("/v1"))
    with Workspace.create(None, parent=tmp_path) as workspace:
        asyncio.run(closing_sessions(run_loop(
            client=client, messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "go"}],
            profile=ToolRegistry().profile("generic"), workspace=workspace, options=AgentOptions(max_steps=6),
            params=GenerationParams(max_tokens=64), trajectory_path=tmp_path / "trajectory.json")))
    _assert_each_step_reads_the_last(stub_env)


@pytest.mark.parametrize("name", ["claude_code"])
def test_a_relayed_cli_asks_for_its_prompt_to_be_cached(name, agents, stub_env, monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-ifbench-test-0123456789abcdef")
    count = [0]

    def answer(body: dict) -> Reply:
        if not body.get("tools"):  # a side call (a title): a short text
            return Reply(content="ok")
        count[0] += 1
        tool, arguments = CLI_WRITE[name]
        return Reply(tool_calls=[{"function": {"name": tool, "arguments": {**arguments, "content": f"{count[0]}\n"}}}])

    stub_env.default = answer
    client = make_client(MODEL, api_base=stub_env.url.removesuffix("/v1"))
    with Workspace.create(None, parent=tmp_path) as workspace:
        result = asyncio.run(closing_sessions(run_cli(
            name, workspace=workspace, queries=["Write hello.txt again and again."], system=None,
            model_name=MODEL.split("/")[1], client=client, submit=None,
            options=AgentOptions(max_steps=3, max_seconds=300), log_path=tmp_path / "raw.jsonl")))
    assert result.harness_error is None and result.stop_reason == "max_steps", (result.harness_error,
                                                                               result.stderr[-2000:])
    _assert_each_step_reads_the_last(stub_env)
