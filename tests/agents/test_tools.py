"""The loop's tools against a real sandboxed workspace: each tool's success and error paths,
symlink escapes through the file tools, and the scaffold profiles' renames and behaviours."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench.agents import tools as tools_module
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.profiles import (
    BUILTIN_PROFILES,
    READ_REMINDER,
    Profile,
    ToolRegistry,
    alias,
)
from pytest_ifbench.agents.tools import GENERIC_TOOLS, Tool, ToolContext, ToolResult, truncate_middle
from pytest_ifbench.agents.workspace import Workspace, sandbox_problem
from tests._support import ROOT, shared_sample

GENERIC = {tool.name: tool for tool in GENERIC_TOOLS}


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    problem = sandbox_problem()
    if problem is not None:
        pytest.skip(problem)
    env = tmp_path / "env"
    env.mkdir()
    (env / "notes.txt").write_text("alpha\nbeta\ngamma\nbeta again\n")
    (env / "src").mkdir()
    (env / "src" / "app.py").write_text("def main():\n    return 'beta'\n")
    with Workspace.create(env, parent=tmp_path) as workspace:
        yield workspace


def run(tool: Tool, arguments: Mapping[str, Any], ws: Workspace, **options: Any) -> ToolResult:
    assert tool.check(dict(arguments)) is None, tool.check(dict(arguments))
    ctx = ToolContext(workspace=ws, options=AgentOptions(**options))
    return asyncio.run(tool.run(dict(arguments), ctx))


def sh(ws: Workspace, command: str, **options: Any) -> ToolResult:
    return run(GENERIC["bash"], {"command": command}, ws, **options)


# --- generic tools ----------------------------------------------------------------------------------

def test_bash_runs_in_the_workspace_and_reports_the_exit_code(ws):
    result = sh(ws, "pwd; cat notes.txt | wc -l; echo oops >&2; exit 3")
    assert result.is_error and result.limit is None
    assert result.content == "/workspace\n4\n[stderr]\noops\n[exit code 3]"
    assert sh(ws, "true").content == "[exit code 0]" and not sh(ws, "true").is_error


def test_bash_timeout_is_capped_and_named(ws):
    result = run(GENERIC["bash"], {"command": "sleep 20", "timeout": 30}, ws, command_timeout=1)
    assert result.is_error and result.limit == "timeout"
    assert "time limit of 1s was reached" in result.content


def test_read_file_numbers_lines_and_pages(ws):
    assert run(GENERIC["read_file"], {"path": "notes.txt"}, ws).content == \
        "     1\talpha\n     2\tbeta\n     3\tgamma\n     4\tbeta again"
    page = run(GENERIC["read_file"], {"path": "/workspace/notes.txt", "offset": 2, "limit": 2}, ws)
    assert page.content == "     2\tbeta\n     3\tgamma\n[lines 2-3 of 4; use offset/limit to read more]"


@pytest.mark.parametrize(("setup", "path", "message"), [
    ("true", "missing.txt", "No such file or directory: missing.txt"),
    ("true", "src", "src is a directory, not a file"),
    ("printf 'a\\0b' > bin.dat", "bin.dat", "bin.dat is a binary file"),
])
def test_read_file_errors(ws, setup, path, message):
    sh(ws, setup)
    result = run(GENERIC["read_file"], {"path": path}, ws)
    assert result.is_error and message in result.content


def test_read_file_past_the_end_and_empty(ws):
    assert run(GENERIC["read_file"], {"path": "notes.txt", "offset": 9}, ws).is_error
    sh(ws, ": > empty.txt")
    assert run(GENERIC["read_file"], {"path": "empty.txt"}, ws).content == "(the file is empty)"


def test_write_file_creates_parents_and_replaces(ws):
    result = run(GENERIC["write_file"], {"path": "deep/er/out.txt", "content": "one\ntwo\n"}, ws)
    assert result.content == "Created deep/er/out.txt (8 bytes, 2 lines)" and not result.is_error
    assert ws.read_bytes("deep/er/out.txt") == b"one\ntwo\n"
    again = run(GENERIC["write_file"], {"path": "/workspace/deep/er/out.txt", "content": "ü"}, ws)
    assert again.content.startswith("Overwrote deep/er/out.txt (2 bytes")
    assert ws.read_bytes("deep/er/out.txt") == "ü".encode()


def test_write_file_outside_the_workspace_fails(ws):
    for path in ("/etc/evil", "/usr/evil", "../evil"):
        result = run(GENERIC["write_file"], {"path": path, "content": "x"}, ws)
        assert result.is_error, path
    assert not (ws.path.parent / "evil").exists()
    # /tmp and HOME are the run's own, writable
    assert not run(GENERIC["write_file"], {"path": "/tmp/scratch.txt", "content": "x"}, ws).is_error
    assert (ws.tmp / "scratch.txt").read_text() == "x"


def test_edit_file(ws):
    edit = GENERIC["edit_file"]
    ok = run(edit, {"path": "notes.txt", "old": "gamma", "new": "GAMMA"}, ws)
    assert ok.content == "Edited notes.txt: 1 replacement" and not ok.is_error
    several = run(edit, {"path": "notes.txt", "old": "beta", "new": "B"}, ws)
    assert several.is_error and "occurs 2 times" in several.content
    missing = run(edit, {"path": "notes.txt", "old": "delta", "new": "D"}, ws)
    assert missing.is_error and "was not found" in missing.content
    assert run(edit, {"path": "nope.txt", "old": "a", "new": "b"}, ws).is_error
    assert run(edit, {"path": "notes.txt", "old": "", "new": "b"}, ws).is_error
    assert run(edit, {"path": "notes.txt", "old": "B", "new": "B"}, ws).is_error
    all_ = run(edit, {"path": "notes.txt", "old": "beta", "new": "B", "replace_all": True}, ws)
    assert all_.content == "Edited notes.txt: 2 replacements"
    assert ws.read_bytes("notes.txt") == b"alpha\nB\nGAMMA\nB again\n"


def test_list_files(ws):
    assert run(GENERIC["list_files"], {}, ws).content == "notes.txt\nsrc/"
    assert run(GENERIC["list_files"], {"pattern": "**/*.py"}, ws).content == "src/app.py"
    assert run(GENERIC["list_files"], {"path": "src", "pattern": "*.py"}, ws).content == "src/app.py"
    assert run(GENERIC["list_files"], {"pattern": "*.rs"}, ws).content == "no files match '*.rs'"
    gone = run(GENERIC["list_files"], {"path": "nowhere"}, ws)
    assert gone.is_error and "does not exist" in gone.content


def test_grep(ws):
    assert run(GENERIC["grep"], {"pattern": "beta"}, ws).content == \
        "notes.txt:2:beta\nnotes.txt:4:beta again\nsrc/app.py:2:    return 'beta'"
    assert run(GENERIC["grep"], {"pattern": "beta", "glob": "*.py"}, ws).content == "src/app.py:2:    return 'beta'"
    assert run(GENERIC["grep"], {"pattern": "zeta"}, ws).content == "no matches for 'zeta'"
    bad = run(GENERIC["grep"], {"pattern": "(unclosed"}, ws)
    assert bad.is_error and "invalid regular expression" in bad.content


def test_finish_carries_the_answer(ws):
    result = run(GENERIC["finish"], {"answer": "42"}, ws)
    assert result.finish == "42" and not result.is_error


def test_file_tools_fall_back_to_the_running_interpreter(ws, monkeypatch):
    """Without a python3 in the sandbox's system directories, the runner runs with ours, bound read-only."""
    monkeypatch.setattr(tools_module, "SANDBOX_PYTHON", "/usr/bin/no-such-python3")
    monkeypatch.setattr(tools_module, "_runner_python", None)
    assert run(GENERIC["read_file"], {"path": "notes.txt", "limit": 1}, ws).content.startswith("     1\talpha\n")
    assert tools_module._runner_python[0][0] != "/usr/bin/no-such-python3"


@pytest.mark.parametrize(("arguments", "problem"), [
    ({}, "arguments.command is required"),
    ({"command": 3}, "arguments.command must be string, got int"),
    ({"command": "ls", "timeout": "soon"}, "arguments.timeout must be number"),
    ({"command": "ls", "cwd": "/"}, "arguments.cwd is not a known argument"),
    ([], "arguments must be object"),
])
def test_argument_validation_explains_the_problem(arguments, problem):
    assert problem in (GENERIC["bash"].check(arguments) or "")


def test_argument_validation_accepts_nulls_for_optionals_and_integral_floats():
    assert GENERIC["bash"].check({"command": "ls", "timeout": None}) is None
    assert GENERIC["read_file"].check({"path": "a", "offset": 2.0}) is None
    assert "offset must be integer" in GENERIC["read_file"].check({"path": "a", "offset": 2.5})


def test_truncate_middle_keeps_head_and_tail():
    text = "a" * 500 + "b" * 500
    cut = truncate_middle(text, 100)
    assert cut == "a" * 50 + "\n… [900 characters elided] …\n" + "b" * 50
    assert truncate_middle("short", 100) == "short"


# --- symlink escapes ----------------------------------------------------------------------------------

def test_symlinks_resolve_in_the_sandbox_view_only(ws, tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("TOPSECRET\n")
    repo_file = ROOT / "pyproject.toml"
    sh(ws, f"ln -s /etc/passwd passwd; ln -s {secret} secret; ln -s {repo_file} repo; ln -s {ROOT} checkout; "
           "ln -s / rootfs; ln -s /root roothome")
    # /etc is part of the sandbox's read-only system view: the read shows what commands there see
    inside = sh(ws, "cat /etc/passwd").content.removesuffix("\n[exit code 0]")
    read = run(GENERIC["read_file"], {"path": "passwd", "limit": 1}, ws)
    assert read.content.split("\t", 1)[1].split("\n")[0] == inside.split("\n")[0]
    # host files outside the sandbox's view are simply not there
    for link in ("secret", "repo", "checkout/pyproject.toml"):
        result = run(GENERIC["read_file"], {"path": link}, ws)
        assert result.is_error and "No such file or directory" in result.content, link
    assert "TOPSECRET" not in run(GENERIC["grep"], {"pattern": "TOP"}, ws).content
    listing = run(GENERIC["list_files"], {"path": "rootfs"}, ws).content.split("\n")
    assert "workspace/" in listing and "root/" not in listing
    assert run(GENERIC["list_files"], {"path": "roothome"}, ws).is_error
    assert "project" not in run(GENERIC["grep"], {"pattern": "name", "path": "checkout"}, ws).content


def test_writes_through_symlinks_cannot_reach_the_host(ws, tmp_path):
    target = tmp_path / "planted.txt"
    victim = tmp_path / "victim.txt"
    victim.write_text("original\n")
    sh(ws, f"ln -s {target} out; ln -s {victim} victim; ln -s /etc/hostname host; ln -s {tmp_path} hostdir")
    assert run(GENERIC["write_file"], {"path": "out", "content": "pwned"}, ws).is_error
    assert run(GENERIC["write_file"], {"path": "hostdir/x.txt", "content": "pwned"}, ws).is_error
    assert run(GENERIC["edit_file"], {"path": "victim", "old": "original", "new": "pwned"}, ws).is_error
    assert run(GENERIC["edit_file"], {"path": "host", "old": "a", "new": "b"}, ws).is_error
    assert not target.exists() and not (tmp_path / "x.txt").exists()
    assert victim.read_text() == "original\n"


def test_an_environment_symlink_to_a_host_secret_shows_nothing(tmp_path):
    if sandbox_problem() is not None:
        pytest.skip(sandbox_problem())
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET\n")
    env = tmp_path / "env"
    env.mkdir()
    (env / "link.txt").symlink_to(secret)
    with Workspace.create(env, parent=tmp_path) as workspace:
        result = run(GENERIC["read_file"], {"path": "link.txt"}, workspace)
        assert result.is_error and "TOPSECRET" not in result.content


# --- profiles -------------------------------------------------------------------------------------------

def _tools(name: str) -> dict[str, Tool]:
    return {tool.name: tool for tool in ToolRegistry().profile(name).tools}


def test_every_profile_offers_well_formed_openai_tools():
    for profile in BUILTIN_PROFILES:
        specs = profile.specs()
        assert len({s["function"]["name"] for s in specs}) == len(specs)
        for spec in specs:
            assert spec["type"] == "function" and spec["function"]["description"]
            schema = spec["function"]["parameters"]
            assert schema["type"] == "object" and set(schema["required"]) <= set(schema["properties"])
            json.dumps(spec)
    assert [t.name for t in ToolRegistry().profile("generic").tools] == \
        ["bash", "read_file", "write_file", "edit_file", "list_files", "grep", "read_document", "finish"]


def test_claude_code_schemas_match_the_recorded_tool_list():
    """Names, parameter names and required parameters as in a recorded Claude Code request."""
    sample = shared_sample("octobench-raw-trajectory-sample.jsonl")
    recorded = {}
    for line in sample.read_text(encoding="utf-8").splitlines():
        for tool in (json.loads(line).get("request_body") or {}).get("tools") or ():
            recorded[tool["name"]] = tool["input_schema"]
    ours = _tools("claude_code")
    assert set(ours) == {"Bash", "Read", "Write", "Edit", "Glob", "Grep", "TodoWrite", "WebFetch", "WebSearch"}
    for name, tool in ours.items():
        theirs = recorded[name]
        assert set(tool.parameters["properties"]) <= set(theirs["properties"]), name
        assert set(tool.parameters["required"]) == set(theirs["required"]), name
        for key, prop in tool.parameters["properties"].items():
            assert prop.get("type") == theirs["properties"][key].get("type"), (name, key)


def test_claude_code_profile(ws):
    cc = _tools("claude_code")
    read = run(cc["Read"], {"file_path": "/workspace/notes.txt", "offset": 2, "limit": 1}, ws)
    assert read.content.startswith("     2→beta\n") and read.content.endswith(READ_REMINDER)
    assert "<system-reminder>" in read.content
    missing = run(cc["Read"], {"file_path": "/workspace/none.txt"}, ws)
    assert missing.is_error and "<system-reminder>" not in missing.content
    assert not run(cc["Write"], {"file_path": "/workspace/w.txt", "content": "x = 1\n"}, ws).is_error
    edit = run(cc["Edit"], {"file_path": "/workspace/w.txt", "old_string": "1", "new_string": "2"}, ws)
    assert edit.content == "Edited w.txt: 1 replacement"
    bash = run(cc["Bash"], {"command": "cat w.txt", "description": "Show w.txt", "timeout": 5000}, ws)
    assert bash.content == "x = 2\n[exit code 0]"
    slow = run(cc["Bash"], {"command": "sleep 5", "timeout": 1000}, ws)
    assert slow.limit == "timeout" and "1s" in slow.content
    assert run(cc["Glob"], {"pattern": "**/*.py"}, ws).content == "src/app.py"
    assert run(cc["Grep"], {"pattern": "beta"}, ws).content == "notes.txt\nsrc/app.py"
    assert run(cc["Grep"], {"pattern": "BETA", "-i": True, "output_mode": "count"}, ws).content == \
        "notes.txt:2\nsrc/app.py:1"
    assert run(cc["Grep"], {"pattern": "gamma", "output_mode": "content", "-C": 1, "-n": True}, ws).content == \
        "notes.txt-2-beta\nnotes.txt:3:gamma\nnotes.txt-4-beta again"
    assert run(cc["Grep"], {"pattern": "beta", "type": "py", "head_limit": 1}, ws).content == "src/app.py"
    todos = [{"content": "Fix it", "status": "in_progress", "activeForm": "Fixing it"}]
    assert "updated (1 items)" in run(cc["TodoWrite"], {"todos": todos}, ws).content
    assert "status must be one of" in cc["TodoWrite"].check({"todos": [{**todos[0], "status": "done"}]})
    for name, arguments in (("WebFetch", {"url": "https://example.com", "prompt": "x"}),
                            ("WebSearch", {"query": "pytest"})):
        offline = run(cc[name], arguments, ws)
        assert offline.is_error and "offline" in offline.content


def test_kilo_profile(ws):
    kilo = _tools("kilo")
    assert run(kilo["read_file"], {"path": "notes.txt", "start_line": 2, "end_line": 3}, ws).content.startswith(
        "     2 | beta\n     3 | gamma\n")
    diff = ("<<<<<<< SEARCH\n:start_line:1\n-------\nalpha\n=======\nALPHA\n>>>>>>> REPLACE\n"
            "<<<<<<< SEARCH\ngamma\n=======\nGAMMA\n>>>>>>> REPLACE")
    assert run(kilo["apply_diff"], {"path": "notes.txt", "diff": diff}, ws).content == \
        "Edited notes.txt: 2 replacements"
    assert ws.read_bytes("notes.txt") == b"ALPHA\nbeta\nGAMMA\nbeta again\n"
    assert run(kilo["apply_diff"], {"path": "notes.txt", "diff": "just text"}, ws).is_error
    assert not run(kilo["write_to_file"], {"path": "k.txt", "content": "k\n", "line_count": 1}, ws).is_error
    assert run(kilo["execute_command"], {"command": "pwd", "cwd": "src"}, ws).content == "/workspace/src\n[exit code 0]"
    assert run(kilo["list_files"], {"path": ".", "recursive": True}, ws).content == "k.txt\nnotes.txt\nsrc/app.py"
    assert run(kilo["search_files"], {"path": ".", "regex": "be+ta", "file_pattern": "*.py"}, ws).content == \
        "src/app.py:2:    return 'beta'"
    assert run(kilo["attempt_completion"], {"result": "done"}, ws).finish == "done"
    assert "No user is available" in run(kilo["ask_followup_question"], {"question": "why?"}, ws).content


def test_droid_profile(ws):
    droid = _tools("droid")
    assert {"Read", "LS", "Execute", "Create", "Edit", "Glob", "Grep", "TodoWrite", "WebSearch",
            "FetchUrl"} == set(droid)
    assert not run(droid["Create"], {"file_path": "d.txt", "content": "d"}, ws).is_error
    assert run(droid["LS"], {"directory_path": "/workspace"}, ws).content == "d.txt\nnotes.txt\nsrc/"
    assert run(droid["Execute"], {"command": "cat d.txt", "timeout": 5}, ws).content == "d\n[exit code 0]"
    read = run(droid["Read"], {"file_path": "d.txt"}, ws)
    assert read.content == "     1\td" and "<system-reminder>" not in read.content
    assert run(droid["FetchUrl"], {"url": "https://example.com"}, ws).is_error


def test_tool_registry_adds_tools_and_profiles(ws):
    registry = ToolRegistry()
    assert registry.profiles() == ("generic", "claude_code", "kilo", "droid")
    shout = alias(registry.tool("bash"), name="shout", description="Echo loudly.",
                  parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                  convert=lambda a: {"command": f"echo {a['text'].upper()}"})
    registry.add_tool(shout, profiles=["generic"])
    assert registry.profile("generic").get("shout") is shout and registry.profile("kilo").get("shout") is None
    assert run(shout, {"text": "hi"}, ws).content == "HI\n[exit code 0]"
    with pytest.raises(ValueError, match="already registered"):
        registry.add_tool(shout)
    registry.add_profile(Profile(name="mine", tools=(shout, registry.tool("finish"))))
    assert [t.name for t in registry.profile("mine").tools] == ["shout", "finish"]
    with pytest.raises(ValueError, match="already registered"):
        registry.add_profile(Profile(name="mine", tools=()))
    with pytest.raises(KeyError, match="unknown tool profile 'nope'"):
        registry.profile("nope")
    with pytest.raises(ValueError, match="duplicate tool names"):
        Profile(name="dup", tools=(shout, shout))
    everywhere = ToolRegistry()
    everywhere.add_tool(shout)
    assert all(everywhere.profile(name).get("shout") for name in everywhere.profiles())
    everywhere.add_profile(Profile(name="mine", tools=(shout,)))
    with pytest.raises(ValueError, match="clash"):
        everywhere.profile("mine")
    bare = ToolRegistry(builtins=False)
    assert bare.profiles() == () and bare.tools() == ()
