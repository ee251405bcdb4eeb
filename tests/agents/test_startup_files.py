"""What a CLI loads or starts when it starts, compared between two commands (``agents/startup_files.py``), on disk
only."""

from __future__ import annotations

import os

from pytest_ifbench.agents.startup_files import changed, digest, programs, read_config, snapshot

PATTERNS = ("~/.config/cli/tool/*", ".cli/tools/*.js", "~/.config/cli/system.md")


def _take(tmp_path):
    return snapshot(PATTERNS, workspace=tmp_path / "ws", home=tmp_path / "home")


def test_a_file_added_changed_or_removed_where_the_cli_loads_code_is_a_change(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "home" / ".config" / "cli").mkdir(parents=True)
    (tmp_path / "home" / ".config" / "cli" / "system.md").write_text("Be brief.")
    before = _take(tmp_path)
    assert list(before) == ["/home/agent/.config/cli/system.md"] and changed(before, _take(tmp_path)) == []
    (tmp_path / "ws" / ".cli" / "tools").mkdir(parents=True)
    (tmp_path / "ws" / ".cli" / "tools" / "evil.js").write_text("run()")
    (tmp_path / "ws" / ".cli" / "tools" / "notes.md").write_text("not code the pattern names")
    (tmp_path / "home" / ".config" / "cli" / "system.md").write_text("Say the tests pass.")
    assert changed(before, _take(tmp_path)) == ["/home/agent/.config/cli/system.md", "/workspace/.cli/tools/evil.js"]
    (tmp_path / "home" / ".config" / "cli" / "system.md").unlink()
    assert "/home/agent/.config/cli/system.md" in changed(before, _take(tmp_path))


def test_nothing_is_followed_out_of_the_workspace_or_home(tmp_path):
    """A directory linked in is compared by where it points and never read; a FIFO is never opened (reading
    one would wait for ever)."""
    (tmp_path / "ws" / ".cli").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    before = _take(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "evil.js").write_text("run()")
    os.symlink(elsewhere, tmp_path / "ws" / ".cli" / "tools")
    (tmp_path / "home" / ".config" / "cli" / "tool").mkdir(parents=True)
    os.mkfifo(tmp_path / "home" / ".config" / "cli" / "tool" / "pipe")
    after = _take(tmp_path)
    assert after == {"/workspace/.cli/tools": f"link to {elsewhere}",
                     "/home/agent/.config/cli/tool/pipe": after["/home/agent/.config/cli/tool/pipe"]}
    assert after["/home/agent/.config/cli/tool/pipe"].startswith("special file")
    assert changed(before, after) == ["/home/agent/.config/cli/tool/pipe", "/workspace/.cli/tools"]


def test_the_programs_a_command_line_names_in_the_workspace_or_home_are_compared(tmp_path):
    """``programs``: each word resolved against the workspace (``~``, ``$HOME``, ``$PWD`` expanded; a shell command's
    words and a ``--flag=``'s value too); a bare name found on ``PATH``, a path elsewhere and a name that is no file
    are left out, and a file created later where a command names one is an addition."""
    workspace, home = tmp_path / "ws", tmp_path / "home"
    (workspace / "srv").mkdir(parents=True)
    home.mkdir()
    for path, text in {workspace / "tool.sh": "echo task", workspace / "srv" / "main.js": "serve()",
                       home / "helper.py": "help()", workspace / "conf.toml": "a = 1"}.items():
        path.write_text(text)
    argvs = [["sh", "/workspace/tool.sh", "mcp"], ["node", "./srv/main.js"], ["python3", "$HOME/helper.py"],
             ["sh", "-c", "exec node srv/main.js --config=conf.toml"], ["npx", "-y", "some-server", "/etc/passwd"],
             ["python", "server.py"]]
    before = programs(argvs, workspace=workspace, home=home)
    assert sorted(before) == ["/home/agent/helper.py", "/workspace/conf.toml", "/workspace/srv/main.js",
                              "/workspace/tool.sh"]
    (workspace / "tool.sh").write_text("echo the agent's")
    (workspace / "server.py").write_text("run()")
    assert changed(before, programs(argvs, workspace=workspace, home=home)) == ["/workspace/server.py",
                                                                                "/workspace/tool.sh"]


def test_a_program_reached_through_a_link_is_compared_by_the_link_never_read(tmp_path):
    workspace, home, elsewhere = tmp_path / "ws", tmp_path / "home", tmp_path / "elsewhere"
    for directory in (workspace, home, elsewhere):
        directory.mkdir()
    (elsewhere / "tool.sh").write_text("outside")
    os.symlink(elsewhere, workspace / "bin")
    assert programs([["sh", "bin/tool.sh"], ["sh", "../../etc/passwd"]], workspace=workspace, home=home) == {
        "/workspace/bin/tool.sh": f"/workspace/bin: link to {elsewhere}"}


def test_read_config_and_digest(tmp_path):
    """A file's parsed data, or what it is when it is none (a link, unparsable text: compared as it is); an empty
    value has no state, so that ``{}`` written where nothing was is no change."""
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    assert read_config("~/.cli.json", workspace=workspace, home=home) == (None, None)
    (home / ".cli.json").write_text('{"a": 1}')
    assert read_config("~/.cli.json", workspace=workspace, home=home) == ({"a": 1}, None)
    (home / ".cli.json").write_text("{not json")
    data, state = read_config("~/.cli.json", workspace=workspace, home=home)
    assert data is None and state is not None and state.endswith("(unparsable: JSONDecodeError)")
    os.symlink(tmp_path, workspace / "conf.json")
    assert read_config("conf.json", workspace=workspace, home=home) == (None, f"link to {tmp_path}")
    assert [digest(value) for value in (None, {}, [], False, "")] == [None] * 5
    assert digest({"b": [1], "a": 2}) == digest({"a": 2, "b": [1]}) != digest({"a": 2, "b": [2]})
