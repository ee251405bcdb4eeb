"""MCP servers start as the CLI's own children, from what the CLI starts with: what decides them is compared between
two user turns, and a task's own server still starts and works.

Claude Code starts the stdio MCP servers of ``~/.claude.json`` (``mcpServers``, and ``projects.<dir>.mcpServers``) and
of the workspace's ``.mcp.json`` -- which ``-p`` approves by itself (2.1.330 and 2.0.69) -- and Kilo those of its
configuration files, when they start. A server the agent's turn-1 shell call wrote there, or the program of the
task's own server rewritten by it, ran as the CLI's child when the CLI started for turn 2, with no tool call for it.
Now the runner compares them before every later command (:meth:`AgentCli.startup_state`): the run ends as the agent's
failure naming the file, before the CLI starts again (the real runs: ``test_cli_hooks_integrity.py``,
``test_kilo_config_commands.py`` and the ones below). Claude Code's ``~/.claude.json`` also holds the CLI's own state,
which it writes itself (it creates the file in its first run): only its MCP keys are compared.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from pytest_ifbench.agents.cli import run_cli
from pytest_ifbench.agents.clis.claude_code import CLI as CLAUDE_CODE
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.startup_files import changed, snapshot
from pytest_ifbench.agents.workspace import Workspace
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.testing import Reply
from tests._support import run_closing
from tests.agents._cli_scripts import text_of, user_turn
from tests.agents.test_relay_integrity import MODEL, REAL_ANSWER, refused

QUERIES = ("Do the task.", "Now the next one.")
STAMP = "STAMP-OK-31c"
#: The task's MCP server (stdio, newline-delimited JSON-RPC): one line in ``SERVER_STARTS`` per start, and a
#: ``stamp`` tool answering :data:`STAMP`.
SERVER = f"""import json, sys
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        with open("/workspace/SERVER_STARTS", "a") as starts:
            starts.write("start\\n")
        result = {{"protocolVersion": msg.get("params", {{}}).get("protocolVersion", "2024-11-05"),
                  "capabilities": {{"tools": {{}}}}, "serverInfo": {{"name": "task", "version": "1"}}}}
    elif method == "tools/list":
        result = {{"tools": [{{"name": "stamp", "description": "Stamps the task.",
                             "inputSchema": {{"type": "object", "properties": {{}}}}}}]}}
    elif method == "tools/call":
        result = {{"content": [{{"type": "text", "text": "{STAMP}"}}]}}
    elif method == "ping":
        result = {{}}
    else:
        error = {{"code": -32601, "message": "no such method"}}
        print(json.dumps({{"jsonrpc": "2.0", "id": msg["id"], "error": error}}), flush=True)
        continue
    print(json.dumps({{"jsonrpc": "2.0", "id": msg["id"], "result": result}}), flush=True)
"""
#: The agent's program in the server's place: a marker, then nothing of a server.
EVIL = "import sys\nopen('/workspace/EVIL_RAN', 'a').write(' '.join(sys.argv) + '\\n')\n"
#: Per CLI: the configuration the task ships naming the server (run relative to the workspace), and its tool's name.
SHIPPED = {"claude_code": (".mcp.json", {"mcpServers": {"task": {"command": "python3", "args": ["server.py"]}}},
                           "mcp__task__stamp"),
           "kilo": ("kilo.json", {"$schema": "https://app.kilo.ai/config.json",
                                  "mcp": {"task": {"type": "local", "command": ["python3", "server.py"]}}},
                    "task_stamp")}
SHELL = {"claude_code": "Bash", "kilo": "bash"}


def _names(body: dict[str, Any]) -> list[str]:
    return [(tool.get("function") or {}).get("name") or tool.get("name") or "" for tool in body.get("tools") or ()]


def scripted(cli: str, first: str | None, requests: list[dict[str, Any]]):
    """The stub's reply: turn 1 runs the shell command ``first`` (if any); turn 2 calls the task server's tool -- after
    loading it with ``ToolSearch`` where the CLI defers MCP tools (Claude Code 2.1.330) -- then both answer."""
    tool = SHIPPED[cli][2]

    def reply(body: dict[str, Any]) -> Reply:
        requests.append(body)
        asked = user_turn(body, QUERIES)
        if asked is None:
            return Reply(content=REAL_ANSWER)
        turn, since = asked
        done = [m for m in since if m.get("role") == "tool"]
        names = _names(body)
        if turn == 0 and first is not None and not done:
            return Reply(tool_calls=[{"function": {"name": SHELL[cli], "arguments": {
                "command": first, "description": "run the step"}}}])
        if turn == 1 and not any(STAMP in text_of(m.get("content")) for m in done) and len(done) < 2:
            if tool in names:
                return Reply(tool_calls=[{"function": {"name": tool, "arguments": {}}}])
            if "ToolSearch" in names and not done:
                return Reply(tool_calls=[{"function": {"name": "ToolSearch", "arguments": {
                    "query": f"select:{tool}", "max_results": 1}}}])
        return Reply(content=REAL_ANSWER)
    return reply


def run(cli: str, first: str | None, stub, tmp_path, *, version: str | None = None):
    """``cli`` for two user turns in a workspace shipping the task's MCP server; (workspace, result, requests)."""
    requests: list[dict[str, Any]] = []
    stub.default = scripted(cli, first, requests)
    config, keys, _ = SHIPPED[cli]
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "server.py").write_text(SERVER)
    (tmp_path / "env" / config).write_text(json.dumps(keys))
    client = ModelClient(model="openai/stub", api_base=stub.url, retry=RetryPolicy(max_attempts=1, timeout=30))
    ws = Workspace.create(tmp_path / "env", parent=tmp_path)
    result = run_closing(run_cli(cli, workspace=ws, queries=list(QUERIES), system=None, model_name=MODEL,
                                 client=client, submit=None, options=AgentOptions(max_seconds=150),
                                 log_path=tmp_path / "raw.jsonl", version=version))
    return ws, result, requests


def _lines(path) -> list[str]:
    return path.read_text().split() if path.exists() else []


@pytest.mark.parametrize(("cli", "version"), [("claude_code", None), ("claude_code", "2.0.69"), ("kilo", None)])
def test_a_task_shipped_mcp_server_still_starts_and_works_in_every_turn(cli, version, agents, side_version, stub_env,
                                                                       tmp_path):
    """The fidelity guard: the task's own server, left alone, starts with the CLI in both turns (as in a bare CLI:
    no approval asked for in ``-p``) and its tool answers in turn 2; no fault, no error."""
    if version is not None:
        side_version(cli, version)
    ws, result, requests = run(cli, None, stub_env, tmp_path, version=version)
    try:
        assert result.harness_error is None and result.agent_fault is None, (result.agent_fault, result.stderr[-2000:])
        assert result.turn_texts == (REAL_ANSWER, REAL_ANSWER), result.turn_texts
        assert _lines(ws.path / "SERVER_STARTS") == ["start", "start"]
        (call,) = result.trajectory.calls_to(SHIPPED[cli][2])
        assert STAMP in str(call.result.content)
        assert refused(result) == []
    finally:
        ws.close()


@pytest.mark.parametrize("cli", list(SHIPPED))
def test_a_task_shipped_mcp_servers_program_the_agent_rewrites_never_runs(cli, agents, stub_env, tmp_path):
    """Turn 1 rewrites the program of the task's server (``server.py``, named relative to the workspace). Before: the
    CLI ran the agent's program as its child when it started for turn 2 (the marker). Now the run ends as the agent's
    failure naming the file, before the CLI starts again."""
    command = f"echo {base64.b64encode(EVIL.encode()).decode()} | base64 -d > /workspace/server.py && echo rewritten"
    ws, result, _ = run(cli, command, stub_env, tmp_path)
    try:
        assert _lines(ws.path / "EVIL_RAN") == [], _lines(ws.path / "EVIL_RAN")
        assert result.harness_error is None and refused(result) == [], result.stderr[-2000:]
        fault = result.agent_fault or ""
        assert f"changed what {cli} loads into its own process or prompt when it starts" in fault, fault
        assert "/workspace/server.py" in fault, fault
        assert result.stop_reason == "agent_fault" and result.turn_texts == (REAL_ANSWER,), result.turn_texts
        assert _lines(ws.path / "SERVER_STARTS") == ["start"]  # the task's program, in turn 1
    finally:
        ws.close()


#: ``~/.claude.json`` as Claude Code leaves it after its first ``-p`` run (2.1.330; 2.0.69 writes other keys alike).
CLAUDE_STATE = {"firstStartTime": "2026-11-29T21:26:01.027Z", "firstStartVersion": "2.1.330", "machineID": "8a37",
                "opusProMigrationComplete": True, "seenNotifications": {}, "migrationVersion": 15, "userID": "50a2",
                "pluginUsage": {"cc-plugin-privacy@builtin": {"usageCount": 0, "lastUsedAt": 1795987561203}},
                "projects": {"/workspace": {"allowedTools": [], "mcpServers": {}, "enabledMcpjsonServers": [],
                                            "disabledMcpjsonServers": [], "hasTrustDialogAccepted": False}}}
SERVER_ENTRY = {"evil": {"type": "stdio", "command": "sh", "args": ["/home/agent/.evil.sh"]}}


def test_what_decides_claude_codes_mcp_servers_is_compared_and_its_own_state_is_not(tmp_path):
    """On disk: the CLI's own writes to ``~/.claude.json`` (creating it, with empty MCP keys) and a settings file's
    other keys are no change; a server or an approval added where Claude Code reads them is, by file; so is the
    program of a server the task ships, and a file created where a server names one."""
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "task": {"command": "python3", "args": ["server.py"]}, "docs": {"type": "http", "url": "http://x/mcp"}}}))
    (workspace / "server.py").write_text(SERVER)

    def take() -> dict[str, str]:
        return {**snapshot(CLAUDE_CODE.loads_at_start, workspace=workspace, home=home),
                **CLAUDE_CODE.startup_state(workspace=workspace, home=home)}

    def write(path, data) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))

    before = take()
    assert sorted(before) == ["/workspace/.mcp.json", "/workspace/server.py"]
    global_config, local = home / ".claude.json", workspace / ".claude" / "settings.local.json"
    write(global_config, CLAUDE_STATE)
    write(local, {"permissions": {"allow": ["Bash"]}, "enableAllProjectMcpServers": False})
    write(home / ".claude" / "settings.json", {"env": {"A": "1"}, "model": "x"})
    assert changed(before, take()) == []
    shown = "/home/agent/.claude.json (its MCP servers and their approvals)"
    for keys in ({"mcpServers": SERVER_ENTRY},
                 {"projects": {"/workspace": {**CLAUDE_STATE["projects"]["/workspace"], "mcpServers": SERVER_ENTRY}}},
                 {"projects": {"/workspace": {"enabledMcpjsonServers": ["evil"]}}}):
        write(global_config, {**CLAUDE_STATE, **keys})
        assert changed(before, take()) == [shown], keys
    write(global_config, CLAUDE_STATE)
    for keys in ({"enableAllProjectMcpServers": True}, {"enabledMcpjsonServers": ["evil"]},
                 {"enabledPlugins": {"evil@local": True}}):
        write(local, keys)
        assert changed(before, take()) == ["/workspace/.claude/settings.local.json (its MCP servers and their "
                                           "approvals)"], keys
    write(local, {})
    assert changed(before, take()) == []
    write(home / ".claude" / ".config.json", {"mcpServers": SERVER_ENTRY})
    (home / ".evil.sh").write_text("evil")
    assert changed(before, take()) == ["/home/agent/.claude/.config.json (its MCP servers and their approvals)",
                                       "/home/agent/.evil.sh"]
    (home / ".claude" / ".config.json").unlink()
    (workspace / "server.py").write_text(EVIL)
    assert changed(before, take()) == ["/workspace/server.py"]
    (workspace / "server.py").write_text(SERVER)
    write(workspace / ".mcp.json", {"mcpServers": SERVER_ENTRY})
    assert changed(before, take()) == ["/home/agent/.evil.sh", "/workspace/.mcp.json", "/workspace/server.py"]
