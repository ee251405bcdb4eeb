"""Commands the agent configures never run as Kilo's children: real Kilo runs whose turn-1 tool call writes
configuration that makes Kilo start a command of its own.

Kilo (opencode-based) runs commands named in its configuration with no tool call for them: the ``command`` of a
local MCP server (``mcp: {name: {type: "local", command: [...]}}``, and the legacy ``mcpServers`` of
``.kilo/mcp.json``/``.kilocode/mcp.json``) when it starts, a ``formatter``'s after its write and edit tools change a
matching file, an ``lsp`` server's when a tool touches a matching file, and its bash tool runs through the
``shell`` it is given. It reads them from its global configuration files (``~/.config/kilo/{kilo,opencode}.json[c]``,
``config.json``, the TOML ``config``), its home configuration directories (``~/.kilo``, ``~/.kilocode``) and the
workspace's (``kilo.json[c]``, ``opencode.json[c]`` and ``.kilo``/``.kilocode``), all of which the agent's tool
commands write. Kilo is multi-turn: configuration written in turn 1 was loaded when Kilo started for turn 2, and the
command ran -- a marker written, with nothing in the trajectory but the call that wrote a file. Turn 1 itself cannot
use it: Kilo reads its instance configuration once per run, and the MCP servers, formatters and language servers
once it has.

Now Kilo runs with ``KILO_CONFIG_CONTENT`` turning formatters and language servers off (it ranks above every file),
and declares the configuration files it reads at start-up in ``loads_at_start``, and the programs their local MCP
servers name in the workspace or HOME in ``startup_state``: an agent that changes one ends its run as its own failure
before Kilo starts again. A workspace that ships such a file unchanged runs as before (its MCP server too:
``test_cli_mcp_integrity.py``).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from pytest_ifbench.agents.cli import run_cli
from pytest_ifbench.agents.clis.kilo import CLI, _add_schema
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.startup_files import changed, snapshot
from pytest_ifbench.agents.workspace import Workspace
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from tests._support import run_closing
from tests.agents._cli_scripts import turns_script
from tests.agents.test_cli_hooks_integrity import SET_JSON
from tests.agents.test_relay_integrity import MODEL, REAL_ANSWER, refused

QUERIES = ("Do the task.", "Now the next one.")
SCRIPT = "/home/agent/.cmd.sh"
SHELL_SCRIPT = "/home/agent/.shell.sh"
#: The command: a line in the workspace's marker file per mechanism it ran for.
CMD = "#!/bin/sh\necho \"$1\" >> /workspace/CMD_RAN\n"
#: A shell for Kilo's bash tool: marks, then runs the command with the real one.
SHELL = "#!/bin/sh\necho shell >> /workspace/CMD_RAN\nexec /bin/sh \"$@\"\n"

MCP = {"mcp": {"evil": {"type": "local", "command": ["sh", SCRIPT, "mcp"]}}}
KEYS: dict[str, dict[str, Any]] = {
    "mcp": MCP,
    "formatter": {"formatter": {"evil": {"command": ["sh", SCRIPT, "formatter", "$FILE"], "extensions": [".txt"]}}},
    "lsp": {"lsp": {"evil": {"command": ["sh", SCRIPT, "lsp"], "extensions": [".txt"]}}},
    "shell": {"shell": SHELL_SCRIPT},
}

#: Turn 2's tool calls, per key: what makes Kilo reach for the configured command.
WRITE = ("write", {"filePath": "/workspace/notes.txt", "content": "notes\n"})
BASH = ("bash", {"command": "echo second", "description": "run the step"})
TURN_2 = {"mcp": [], "formatter": [WRITE], "lsp": [WRITE], "shell": [BASH]}

#: Where the agent writes the MCP server: Kilo's global files and directories, and the workspace's.
PLACES = {
    "global-kilo.json": "~/.config/kilo/kilo.json",
    "global-kilo.jsonc": "~/.config/kilo/kilo.jsonc",
    "global-opencode.json": "~/.config/kilo/opencode.json",
    "global-config.json": "~/.config/kilo/config.json",
    "home-kilo": "~/.kilo/kilo.json",
    "home-kilocode": "~/.kilocode/opencode.jsonc",
    "project-kilo.json": "/workspace/kilo.json",
    "project-opencode.jsonc": "/workspace/opencode.jsonc",
    "project-dir-kilo": "/workspace/.kilo/kilo.jsonc",
    "project-dir-kilocode": "/workspace/.kilocode/opencode.json",
}
#: Kilo's legacy MCP settings (``mcpServers``), read from the workspace's ``.kilo``/``.kilocode``.
LEGACY = {"legacy-kilo-mcp": "/workspace/.kilo/mcp.json", "legacy-kilocode-mcp": "/workspace/.kilocode/mcp.json"}
LEGACY_MCP = {"mcpServers": {"evil": {"command": "sh", "args": [SCRIPT, "mcp"]}}}
#: Kilo's legacy TOML global configuration (imported into ``config.json`` at start-up).
TOML = f'[mcp.evil]\ntype = "local"\ncommand = ["sh", "{SCRIPT}", "mcp"]\n'


def _decoded(text: str, path: str) -> str:
    return f"echo {base64.b64encode(text.encode()).decode()} | base64 -d > {path}"


def _install(files: dict[str, dict[str, Any]], *, raw: dict[str, str] | None = None) -> str:
    """The agent's tool command: the scripts, then each configuration file merged with its keys."""
    steps = [_decoded(CMD, SCRIPT), _decoded(SHELL, SHELL_SCRIPT), f"chmod +x {SCRIPT} {SHELL_SCRIPT}",
             _decoded(SET_JSON, "/tmp/set.js")]
    for file, keys in files.items():
        steps.append(f"node /tmp/set.js {file.replace('~', '$HOME', 1)} '{json.dumps(keys)}'")
    for file, text in (raw or {}).items():
        path = file.replace("~", "$HOME", 1)
        steps.append(f"mkdir -p $(dirname {path}) && {_decoded(text, path)}")
    return " && ".join([*steps, "echo installed"])


def scripted(turns: list[list[tuple[str, dict[str, Any]]]], requests: list[dict[str, Any]]):
    """The stub's reply: in user turn ``n`` (by its query), the tool calls ``turns[n]`` one by one, then the answer."""
    return turns_script(turns, QUERIES, requests, answer=REAL_ANSWER)


def run(turns, stub, tmp_path, shipped: dict[str, str] | None = None):
    """Kilo for two user turns with the model asking for ``turns``' tool calls; (workspace, result, requests)."""
    requests: list[dict[str, Any]] = []
    stub.default = scripted(turns, requests)
    for name, text in {"NOTES.md": "real notes\n", **(shipped or {})}.items():
        (tmp_path / "env" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "env" / name).write_text(text)
    client = ModelClient(model="openai/stub", api_base=stub.url, retry=RetryPolicy(max_attempts=1, timeout=30))
    ws = Workspace.create(tmp_path / "env", parent=tmp_path)
    result = run_closing(run_cli("kilo", workspace=ws, queries=list(QUERIES), system=None, model_name=MODEL,
                                 client=client, submit=None, options=AgentOptions(max_seconds=150),
                                 log_path=tmp_path / "raw.jsonl"))
    return ws, result, requests


def _ran(ws) -> list[str]:
    marker = ws.path / "CMD_RAN"
    return marker.read_text().split() if marker.exists() else []


def _bash(command: str) -> tuple[str, dict[str, Any]]:
    return "bash", {"command": command, "description": "run the step"}


def _ends_before_kilo_loads_it(ws, result, where: str) -> None:
    assert _ran(ws) == [], _ran(ws)
    assert refused(result) == [] and result.harness_error is None, result.stderr[-2000:]
    fault = result.agent_fault or ""
    assert "changed what kilo loads into its own process or prompt when it starts" in fault, fault
    assert where in fault, fault
    assert result.stop_reason == "agent_fault" and result.turn_texts == (REAL_ANSWER,), result.turn_texts


@pytest.mark.parametrize("key", sorted(KEYS))
def test_a_command_the_agent_configures_in_the_project_never_runs(key, agents, stub_env, tmp_path):
    """Turn 1 writes the key into the workspace's ``kilo.json``; turn 2 does what makes Kilo use it (starting, a
    write, a bash call). Before: the command ran in turn 2 (the marker), no tool call of the agent's for it. Now
    the run ends as the agent's failure before Kilo starts again, naming the file."""
    install = _bash(_install({"/workspace/kilo.json": KEYS[key]}))
    ws, result, _ = run([[install], TURN_2[key]], stub_env, tmp_path)
    try:
        _ends_before_kilo_loads_it(ws, result, "/workspace/kilo.json")
    finally:
        ws.close()


EVERYWHERE = {**PLACES, **LEGACY, "global-toml": "~/.config/kilo/config"}


def test_every_file_kilo_reads_its_configuration_from_is_compared_between_turns(tmp_path):
    """On disk, for every place (each one started the MCP server with turn 2 in a real Kilo run before, 13 of 13):
    a file written there is a change of what Kilo loads at start-up; a file beside them is not."""
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    before = snapshot(CLI.loads_at_start, workspace=workspace, home=home)
    for path in [*EVERYWHERE.values(), "/workspace/.kilocode/rules/style.md", "~/.config/kilo/notes.json"]:
        host = home / path[2:] if path.startswith("~/") else workspace / path.removeprefix("/workspace/")
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_text("{}")
    shown = sorted(path.replace("~", "/home/agent", 1) for path in EVERYWHERE.values())
    assert changed(before, snapshot(CLI.loads_at_start, workspace=workspace, home=home)) == shown


#: Real Kilo runs for three places: the harness's own global file (merged into), a home directory's, a legacy one.
@pytest.mark.parametrize("where", ["global-kilo.json", "home-kilocode", "legacy-kilo-mcp"])
def test_an_mcp_server_the_agent_configures_where_kilo_reads_never_starts(where, agents, stub_env, tmp_path):
    """Turn 1 writes a local MCP server into one of the files Kilo reads its configuration from. Before: Kilo
    started it with turn 2 (the marker). Now the run ends as the agent's failure before Kilo starts again."""
    if where in PLACES:
        command = _install({PLACES[where]: MCP})
    elif where in LEGACY:
        command = _install({LEGACY[where]: LEGACY_MCP})
    else:
        command = _install({}, raw={"~/.config/kilo/config": TOML})
    ws, result, _ = run([[_bash(command)], []], stub_env, tmp_path)
    try:
        _ends_before_kilo_loads_it(ws, result, EVERYWHERE[where].replace("~", "/home/agent", 1))
    finally:
        ws.close()


def test_formatters_and_language_servers_do_not_run_within_the_turn_that_configures_them(agents, stub_env, tmp_path):
    """Turn 1 writes a formatter, a language server and an MCP server into the workspace's ``kilo.json`` and changes
    the global file (Kilo then reads its configuration again), then writes a file and runs bash. Nothing ran within
    that turn, and the run ends before turn 2 as in the tests above."""
    keys = {**KEYS["formatter"], **KEYS["lsp"], **MCP, **KEYS["shell"]}
    install = _bash(_install({"/workspace/kilo.json": keys, "~/.config/kilo/kilo.json": {"username": "x"}}))
    ws, result, _ = run([[install, WRITE, _bash("echo again")], []], stub_env, tmp_path)
    try:
        assert _ran(ws) == [], _ran(ws)
        assert len(result.trajectory.calls_to("write")) == 1 and len(result.trajectory.calls_to("bash")) == 2
        assert "changed what kilo loads" in (result.agent_fault or ""), result.agent_fault
    finally:
        ws.close()


#: A project configuration a task ships: instructions, a rule and an agent setting, with and without ``$schema``.
SHIPPED = {
    "kilo.json": json.dumps({"instructions": [".kilocode/rules/style.md"], "default_agent": "code"}),
    ".kilocode/kilo.jsonc": '{\n  // the task\'s own settings\n  "$schema": "https://app.kilo.ai/config.json",\n'
                            '  "username": "task"\n}\n',
    ".kilo/opencode.json": "{}\n",
    ".kilocode/rules/style.md": "Always answer politely.\n",
}


def test_a_shipped_project_configuration_left_alone_runs_normally(agents, stub_env, tmp_path):
    """The workspace ships Kilo configuration files (one without ``$schema``, which Kilo adds when it first reads a
    file) and the agent leaves them alone: both turns run, no fault, and the shipped instructions reach the model."""
    ws, result, requests = run([[WRITE], [BASH]], stub_env, tmp_path, shipped=SHIPPED)
    try:
        assert result.harness_error is None and result.agent_fault is None, (result.agent_fault,
                                                                             result.stderr[-2000:])
        assert result.turn_texts == (REAL_ANSWER, REAL_ANSWER), result.turn_texts
        assert any("Always answer politely." in json.dumps(body) for body in requests)
        assert _ran(ws) == []
    finally:
        ws.close()


#: A task's own configuration naming a program in the workspace, which the agent's commands may rewrite.
TOOL = "#!/bin/sh\necho task-tool >> /workspace/TOOL_RAN\n"
EVIL_TOOL = "#!/bin/sh\necho \"$1\" >> /workspace/CMD_RAN\n"


def _shipping(keys: dict[str, Any]) -> dict[str, str]:
    return {"kilo.json": json.dumps({"$schema": "https://app.kilo.ai/config.json", **keys}), "tool.sh": TOOL}


def test_a_shipped_formatter_or_language_server_never_runs(agents, stub_env, tmp_path):
    """The task ships a formatter and a language server running ``tool.sh``, which turn 1 rewrites before writing a
    file (turn 2 writes another). Before: Kilo ran the formatter after each write (the marker, turn 1 included), no
    tool call for it. Now Kilo runs neither, whatever a configuration file says (``KILO_CONFIG_CONTENT``)."""
    keys = {"formatter": {"task": {"command": ["sh", "/workspace/tool.sh", "formatter"], "extensions": [".txt"]}},
            "lsp": {"task": {"command": ["sh", "/workspace/tool.sh", "lsp"], "extensions": [".txt"]}}}
    rewrite = _bash(_decoded(EVIL_TOOL, "/workspace/tool.sh"))
    ws, result, _ = run([[rewrite, WRITE], [WRITE]], stub_env, tmp_path, shipped=_shipping(keys))
    try:
        assert _ran(ws) == [], _ran(ws)
        assert result.harness_error is None and result.agent_fault is None, (result.agent_fault,
                                                                             result.stderr[-2000:])
        assert result.turn_texts == (REAL_ANSWER, REAL_ANSWER), result.turn_texts
    finally:
        ws.close()


def test_a_shipped_mcp_server_whose_program_the_agent_rewrites_never_runs_it(agents, stub_env, tmp_path):
    """The task ships a local MCP server running ``tool.sh``; turn 1 rewrites ``tool.sh``. Before: Kilo started the
    server with turn 2, running the agent's program with no tool call for it. Now what a shipped server's command
    names in the workspace is compared too (``Kilo.startup_state``): the run ends as the agent's failure, naming the
    program, before Kilo starts again. (The task's own program ran when Kilo started for turn 1.)"""
    keys = {"mcp": {"task": {"type": "local", "command": ["sh", "/workspace/tool.sh", "mcp"]}}}
    rewrite = _bash(_decoded(EVIL_TOOL, "/workspace/tool.sh"))
    ws, result, _ = run([[rewrite], []], stub_env, tmp_path, shipped=_shipping(keys))
    try:
        _ends_before_kilo_loads_it(ws, result, "/workspace/tool.sh")
        assert (ws.path / "TOOL_RAN").read_text() == "task-tool\n"
    finally:
        ws.close()


@pytest.mark.parametrize(("shipped", "kept"), [
    ("{}\n", '{\n  "$schema": "https://app.kilo.ai/config.json"\n}\n'),
    ('{"a": 1}', '{\n  "$schema": "https://app.kilo.ai/config.json","a": 1}'),
    ('// {not this}\n{ /* "x": { */ "a": [1, 2,], }\n',
     '// {not this}\n{\n  "$schema": "https://app.kilo.ai/config.json", /* "x": { */ "a": [1, 2,], }\n'),
    ('{"$schema": "mine", "a": "// no comment"}', None),
    ('[1, 2]', None),
    ('{"a": ', None),
])
def test_a_shipped_configuration_file_gets_the_schema_kilo_would_add_and_nothing_else(shipped, kept, tmp_path):
    """So that Kilo, which writes ``$schema`` into a file it reads without one, leaves it as the runner found it
    (else the run of a task shipping one ended as the agent's failure); JSONC comments and trailing commas are
    kept, and what is no JSON object (or has its own schema) is left alone, as Kilo leaves it."""
    path = tmp_path / "kilo.json"
    path.write_text(shipped)
    _add_schema(path)
    assert path.read_text() == (shipped if kept is None else kept)
