"""The built-in tool loop against the stub server (scripted tool calls, really executed in a
sandboxed workspace), the containment corpus as agent tool calls, and one short run on the
embedded model -- each on both sandbox backends (bubblewrap, and docker on a private engine) with the
same expectations."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench._types import GenerationParams
from pytest_ifbench.agents.loop import STOP_REASONS, LoopResult, run_loop
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.profiles import ToolRegistry
from pytest_ifbench.agents.trajectory import Trajectory
from pytest_ifbench.agents.workspace import Workspace, sandbox_problem
from pytest_ifbench.models.cache import ResponseCache
from pytest_ifbench.models.client import ModelCallError, ModelClient, RetryPolicy
from pytest_ifbench.models.local import local_model_problem
from pytest_ifbench.testing import Reply, StubServer
from tests._support import FAKE_KEY, closing_sessions
from tests.sandbox.backend_fixtures import docker_host, sandbox_backend  # noqa: F401 -- fixtures

#: Every test runs on each backend (the fixture makes it the process's: Workspace.create uses it).
pytestmark = pytest.mark.usefixtures("sandbox_backend")

FAST = RetryPolicy(max_attempts=1, timeout=20)
ASK = [{"role": "system", "content": "You are a careful agent."}, {"role": "user", "content": "Double the number."}]
_ids = itertools.count(1)


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    problem = sandbox_problem()
    if problem is not None:
        pytest.skip(problem)
    with Workspace.create(None, parent=tmp_path) as workspace:
        yield workspace


@pytest.fixture
def stub(stub_server: StubServer, monkeypatch: pytest.MonkeyPatch) -> StubServer:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    return stub_server


def call(name: str, arguments: dict[str, Any] | str) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": f"call_{next(_ids)}", "type": "function", "function": {"name": name, "arguments": raw}}


def script(stub: StubServer, replies: list[Reply] | Callable[[int], Reply]) -> None:
    """Answer request ``n`` (counted by the assistant messages it already holds) with ``replies[n]``, so a
    replay from the cache sends the same requests and a fresh run the same answers."""
    def answer(body: dict[str, Any]) -> Reply:
        n = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return replies(n) if callable(replies) else replies[min(n, len(replies) - 1)]
    stub.default = answer


def loop(stub: StubServer, ws: Workspace, *, messages: list[dict[str, Any]] | None = None, profile: str = "generic",
         client: ModelClient | None = None, params: GenerationParams = GenerationParams(max_tokens=200),
         **options: Any) -> LoopResult:
    client = client or ModelClient(model="openai/stub", api_base=stub.url, retry=FAST)
    path = options.pop("trajectory_path", None)
    return asyncio.run(closing_sessions(run_loop(
        client=client, messages=list(messages or ASK), profile=ToolRegistry().profile(profile),
        workspace=ws, options=AgentOptions(**options), params=params, trajectory_path=path)))


def tool_messages(stub: StubServer, request: int = -1) -> list[dict[str, Any]]:
    return [m for m in stub.requests[request].body["messages"] if m["role"] == "tool"]


def three_steps() -> list[Reply]:
    return [
        Reply(tool_calls=[call("write_file", {"path": "data.txt", "content": "21\n"})]),
        Reply(content="Now compute.", tool_calls=[
            call("bash", {"command": "python3 -c \"print(int(open('data.txt').read()) * 2)\""})]),
        Reply(tool_calls=[call("finish", {"answer": "42"})]),
    ]


def test_a_scripted_three_step_run_really_executes_its_tools(stub, ws, tmp_path):
    script(stub, three_steps())
    lines: list[str] = []
    path = tmp_path / "trajectory.json"
    client = ModelClient(model="openai/stub", api_base=stub.url, retry=FAST)
    result = asyncio.run(closing_sessions(run_loop(
        client=client, messages=ASK, profile=ToolRegistry().profile("generic"),
        workspace=ws, options=AgentOptions(), params=GenerationParams(max_tokens=200),
        trajectory_path=path, progress=lines.append)))
    assert (result.stop_reason, result.final_text, result.steps) == ("finished", "42", 3)
    assert ws.read_bytes("data.txt") == b"21\n"
    assert stub.calls == 3 and len(result.completions) == 3
    assert [m["content"] for m in tool_messages(stub)] == ["Created data.txt (3 bytes, 1 lines)", "42\n[exit code 0]"]
    sent = stub.requests[0].body
    assert [t["function"]["name"] for t in sent["tools"]] == [t.name for t in ToolRegistry().profile("generic").tools]
    assert all(line.rsplit("; ", 1)[1].endswith(" tokens, $0") for line in lines)
    assert [line.rsplit("; ", 1)[0] for line in lines] == ["step 1/30: write_file data.txt",
                     "step 2/30: bash python3 -c \"print(int(open('data.txt').read()) * 2)\"", "step 3/30: finish 42"]
    trajectory = Trajectory.from_json(json.loads(path.read_text()))
    assert trajectory == result.trajectory
    assert [m.role for m in trajectory.messages] == ["system", "user"] + ["assistant", "tool"] * 3
    assert [c.name for c in trajectory.tool_calls()] == ["write_file", "bash", "finish"]
    assert all(c.result is not None and not c.result.is_error for c in trajectory.tool_calls())
    assert trajectory.assistant_turns()[1].content == "Now compute."
    assert trajectory.meta["runner"] == "loop" and trajectory.meta["profile"] == "generic"
    assert trajectory.meta["stop_reason"] == "finished" and trajectory.meta["steps"] == 3
    assert trajectory.meta["model"] == "openai/stub" and trajectory.meta["limits"]["max_steps"] == 30
    assert len(result.messages) == len(ASK) + 6 and result.messages[-1]["role"] == "tool"
    assert len(result.timings) == 3 and result.tool_seconds > 0 and result.model_seconds > 0


def test_rerunning_with_the_same_cache_makes_no_model_call(stub, tmp_path):
    if sandbox_problem() is not None:
        pytest.skip(sandbox_problem())
    script(stub, three_steps())
    cache = ResponseCache(tmp_path / "cache")
    results = []
    for attempt in range(2):
        with Workspace.create(None, parent=tmp_path) as workspace:
            client = ModelClient(model="openai/stub", api_base=stub.url, retry=FAST, cache=cache)
            results.append(loop(stub, workspace, client=client))
            assert workspace.read_bytes("data.txt") == b"21\n"
        assert stub.calls == 3, attempt
    first, second = results
    assert all(c.cached for c in second.completions) and not any(c.cached for c in first.completions)
    assert second.trajectory.messages == first.trajectory.messages and second.final_text == "42"


def test_malformed_arguments_are_answered_with_an_error(stub, ws):
    script(stub, [Reply(tool_calls=[call("bash", '{"command": "echo hi"')]), Reply(content="giving up")])
    result = loop(stub, ws)
    assert (result.stop_reason, result.final_text, result.steps) == ("no_tool_call", "giving up", 2)
    [answer] = tool_messages(stub)
    assert answer["content"].startswith("Error: the arguments of bash are not valid JSON")
    assistant = stub.requests[1].body["messages"][2]
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{}"  # what providers accept
    [recorded] = result.trajectory.tool_calls()
    assert recorded.call["function"]["arguments"] == '{"command": "echo hi"' and recorded.result.is_error


def test_unknown_tools_and_invalid_arguments_are_answered_and_the_run_goes_on(stub, ws):
    script(stub, [Reply(tool_calls=[call("Bash", {"command": "ls"}), call("bash", {"cmd": "ls"}),
                                    call("read_file", {"path": 7})]),
                  Reply(tool_calls=[call("finish", {"answer": "ok"})])])
    result = loop(stub, ws)
    assert result.stop_reason == "finished" and result.steps == 2
    unknown, invalid, typed = (m["content"] for m in tool_messages(stub))
    assert unknown.startswith("Error: there is no tool named 'Bash'. Available tools: bash, read_file")
    assert "arguments.command is required" in invalid and "arguments.cmd is not a known argument" in invalid
    assert "arguments.path must be string, got int" in typed
    assert all(c.result.is_error for c in result.trajectory.tool_calls()[:3])


def test_the_same_call_three_times_in_a_row_stops_the_run(stub, ws):
    script(stub, lambda n: Reply(tool_calls=[call("bash", {"command": "echo x >> log.txt"})]))
    result = loop(stub, ws)
    assert (result.stop_reason, result.steps) == ("repeated_action", 3)
    assert ws.read_bytes("log.txt") == b"x\nx\n"  # the third call was not executed
    last = result.trajectory.tool_calls()[-1].result
    assert last.is_error and "same call was made 3 times in a row" in last.content


def test_max_steps(stub, ws):
    script(stub, lambda n: Reply(tool_calls=[call("bash", {"command": f"echo {n}"})]))
    result = loop(stub, ws, max_steps=2)
    assert (result.stop_reason, result.steps, stub.calls) == ("max_steps", 2, 2)
    assert result.trajectory.meta["stop_reason"] == "max_steps"


def test_max_tokens_caps_each_call_and_stops_the_run(stub, ws):
    script(stub, lambda n: Reply(tool_calls=[call("bash", {"command": f"echo {'word ' * 10}{n}"})]))
    result = loop(stub, ws, max_tokens=30)
    assert result.stop_reason == "max_tokens" and result.steps < 4
    assert stub.requests[0].body["max_tokens"] == 30  # the call's own limit, capped by the run's budget
    assert sum(c.completion_tokens for c in result.completions) >= 30


def test_max_seconds(stub, ws):
    script(stub, lambda n: Reply(tool_calls=[call("bash", {"command": f"echo {n}"})], latency=0.3))
    result = loop(stub, ws, max_seconds=0.2)
    assert (result.stop_reason, result.steps) == ("max_seconds", 1)


def test_max_cost(stub, ws):
    script(stub, lambda n: Reply(tool_calls=[call("bash", {"command": f"echo {n}"})]))
    client = ModelClient(model="openai/gpt-4o-mini", api_base=stub.url, retry=FAST)  # a model litellm can price
    result = loop(stub, ws, client=client, max_cost=1e-9)
    assert result.completions[0].cost and (result.stop_reason, result.steps) == ("max_cost", 1)


def test_long_tool_output_keeps_head_and_tail(stub, ws):
    command = "python3 -c \"print('a' * 5000 + 'MIDDLE' + 'b' * 5000)\""
    script(stub, [Reply(tool_calls=[call("bash", {"command": command})]), Reply(content="done")])
    loop(stub, ws, max_output_chars=1000)
    [answer] = tool_messages(stub)
    content = answer["content"]
    assert content.startswith("a" * 500 + "\n… [") and content.endswith("b\n[exit code 0]")
    assert "MIDDLE" not in content and "characters elided] …" in content and len(content) < 1100


def test_a_model_error_ends_the_run_after_writing_the_trajectory(stub, ws, tmp_path):
    def reply(n: int) -> Reply:
        if n:
            raise RuntimeError("the stub answers 500")
        return Reply(tool_calls=[call("bash", {"command": "echo one"})])
    script(stub, reply)
    path = tmp_path / "t.json"
    with pytest.raises(ModelCallError, match="HTTP 500"):
        loop(stub, ws, trajectory_path=path)
    trajectory = json.loads(path.read_text())
    assert trajectory["meta"]["stop_reason"] == "model_error" and trajectory["meta"]["steps"] == 2
    assert [m["role"] for m in trajectory["messages"]] == ["system", "user", "assistant", "tool"]


def test_a_second_user_turn_continues_the_conversation(stub, ws):
    script(stub, [Reply(tool_calls=[call("read_file", {"path": "missing.txt"})]),
                  Reply(content="There is no such file."),
                  Reply(tool_calls=[call("write_file", {"path": "missing.txt", "content": "now\n"})]),
                  Reply(content="Created it.")])
    first = loop(stub, ws)
    assert first.final_text == "There is no such file."
    second = loop(stub, ws, messages=[*first.messages, {"role": "user", "content": "Create it."}])
    assert (second.stop_reason, second.final_text, second.steps) == ("no_tool_call", "Created it.", 2)
    assert [m["role"] for m in stub.requests[-1].body["messages"]][:6] == \
        ["system", "user", "assistant", "tool", "assistant", "user"]
    calls = second.trajectory.tool_calls()
    assert [c.name for c in calls] == ["read_file", "write_file"]
    assert calls[0].result.is_error and not calls[1].result.is_error  # earlier turns recorded faithfully
    assert second.trajectory.user_texts() == ("Double the number.", "Create it.")


def test_claude_code_profile_finishes_by_answering_without_a_tool(stub, ws):
    script(stub, [Reply(tool_calls=[call("Write", {"file_path": "/workspace/a.txt", "content": "a"})]),
                  Reply(tool_calls=[call("Read", {"file_path": "/workspace/a.txt"})]), Reply(content="Done.")])
    result = loop(stub, ws, profile="claude_code")
    assert (result.stop_reason, result.final_text) == ("no_tool_call", "Done.")
    assert "<system-reminder>" in tool_messages(stub)[1]["content"]
    assert result.trajectory.meta["profile"] == "claude_code"


def test_the_containment_corpus_as_agent_tool_calls(stub, ws, tmp_path):
    """Each hostile command comes back to the model as a contained tool result and the run goes on."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    port = listener.getsockname()[1]
    outside = tmp_path / "escaped.txt"
    corpus = [
        # the forks fail against the process limit; when the command's own shell still exits 0 the workspace
        # does not name the limit (it reads the evidence only from failed commands), the shell's stderr does
        ("fork bomb", ":(){ :|:& };:; sleep 2",
         lambda r: "limit of 64 processes was reached" in r or "fork: retry: Resource temporarily unavailable" in r),
        ("infinite loop", "while :; do :; done", lambda r: "time limit of 3s was reached" in r),
        ("big allocation", "python3 -c 'x = bytearray(3 << 30)'", lambda r: "memory limit of 256 MiB" in r),
        ("write outside", f"echo x > /etc/escaped; echo x > {outside}; echo x > /root/escaped",
         lambda r: "Read-only file system" in r and "[exit code 1]" in r),
        ("connect to the host", f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\"",
         lambda r: "ConnectionRefusedError" in r or "unreachable" in r),
        ("background process", "(sleep 1; echo late > late.txt) > /dev/null 2>&1 & echo started",
         lambda r: r == "started\n[exit code 0]"),
        ("huge output", "yes spam", lambda r: "output limit was reached" in r and len(r) < 2200),
        ("after the corpus", "sleep 1.5; ls", lambda r: r == "[exit code 0]"),
    ]
    calls = [call("bash", {"command": command}) for _, command, _ in corpus]
    script(stub, [Reply(tool_calls=[c]) for c in calls] + [Reply(tool_calls=[call("finish", {"answer": "ok"})])])
    result = loop(stub, ws, command_timeout=3, memory_mb=256, max_processes=64, max_output_chars=2000)
    assert (result.stop_reason, result.steps) == ("finished", len(corpus) + 1)
    answers = result.trajectory.tool_calls()
    for (what, _, expected), answered in zip(corpus, answers, strict=False):
        assert answered.result is not None and expected(answered.result.content), (what, answered.result.content)
    assert not outside.exists() and not (ws.path / "late.txt").exists()
    with pytest.raises(BlockingIOError):
        listener.accept()
    listener.close()


@pytest.mark.skipif(local_model_problem() is not None, reason="the embedded model needs the [local] extra")
def test_a_short_real_run_on_the_embedded_model(ws):
    client = ModelClient(model="local/smollm2", retry=RetryPolicy(max_attempts=1, timeout=300))
    messages = [{"role": "user", "content": "Create a file hello.txt containing the word hello, then finish."}]
    result = asyncio.run(run_loop(client=client, messages=messages, profile=ToolRegistry().profile("generic"),
                                  workspace=ws, options=AgentOptions(max_steps=3, max_tokens=150),
                                  params=GenerationParams(max_tokens=48)))
    assert result.stop_reason in STOP_REASONS and 1 <= result.steps <= 3
    assert result.trajectory.meta["stop_reason"] == result.stop_reason
    for tool_call in result.trajectory.tool_calls():
        assert tool_call.result is not None  # executed, or answered with an error message
