"""What Claude Code runs as its own children when it starts, with no tool call, never runs the agent's program.

Two ways a file turn 1's tool call wrote made Claude Code run the agent's code when it started for turn 2 (``-c``),
with no tool call in the trajectory (Claude Code 2.1.330 and 2.0.69, real runs against the scripted stub):

* The settings files' ``env`` -- the user's (``~/.claude/settings.json``), the project's and the local one
  (``/workspace/.claude/settings{,.local}.json``) and the legacy ``env`` of ``~/.claude.json`` -- goes into Claude
  Code's own environment. A ``PATH`` naming the agent's directory made the ``git``, ``which`` and ``uname`` it runs by
  itself at start-up (``git status``, ``git rev-parse --abbrev-ref HEAD``, ``which bwrap``, ``uname -sr``; 2.1.330:
  ``git ls-files --error-unmatch .claude/settings.local.json``) the agent's programs, and an ``LD_PRELOAD`` loaded the
  agent's library into each of them (every place, both versions).
* 2.0.69 takes its shell snapshot when it starts: ``bash -c -l 'source ~/.bashrc; ...'``, so ``~/.bash_profile``
  and ``~/.bashrc`` written in turn 1 ran at turn 2's start (2.1.330 takes it only before its first Bash call); and
  it runs its own ``git status --short`` with no override, so a ``core.fsmonitor`` turn 1 set ran too (2.1.330 gives
  its git ``-c core.fsmonitor=``).

Now :meth:`~pytest_ifbench.agents.clis.claude_code.ClaudeCode.startup_state` compares the ``env`` entries that decide
what such a child runs or loads (``PATH``, ``LD_*``, ``GIT_*``, ``SHELL``...), and for versions before 2.1
(``for_version``) the shell start-up files and git's configuration files are in ``loads_at_start``: the run ends as
the agent's failure before Claude Code starts again. Other ``env`` entries and a
task's own ``env`` change nothing (:func:`test_a_task_env_and_a_harmless_env_the_agent_writes_change_nothing`).
Not reproduced, with the same probes: ``BASH_ENV``, ``ENV``, ``CLAUDE_CODE_SHELL``, ``CLAUDE_CODE_SHELL_PREFIX`` and
``NODE_OPTIONS`` in ``env`` (used only inside a Bash call, or not at all, at start-up), a ``/workspace/.env`` and a
``bunfig.toml`` (neither changed Claude Code's process).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench.agents.cli import run_cli
from pytest_ifbench.agents.clis.claude_code import CLI as CLAUDE_CODE
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.startup_files import changed, snapshot
from pytest_ifbench.agents.workspace import Workspace
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from tests._support import run_closing
from tests.agents._cli_scripts import text_of, turns_script
from tests.agents.test_cli_hooks_integrity import SET_JSON
from tests.agents.test_relay_integrity import MODEL, REAL_ANSWER, SHELL, refused

QUERIES = ("Do the task.", "Now the next one.")
#: Where every probe writes a line: the label, then its parent's command line.
RAN = "/workspace/PROBE_RAN"
PROBE = "/home/agent/.probe.sh"
MARKER = f"""#!/bin/sh
PATH=/usr/bin:/bin
echo "$1 <- $(tr '\\0' ' ' < /proc/$PPID/cmdline | cut -c1-200)" >> {RAN}
exit 0
"""
#: The agent's library: a line per process that loads it.
LIBRARY = f"""#include <stdio.h>
__attribute__((constructor)) static void probe(void) {{
  char line[256] = {{0}}; FILE *self = fopen("/proc/self/cmdline", "r"), *out = fopen("{RAN}", "a");
  if (self) {{ size_t n = fread(line, 1, 255, self); for (size_t i = 0; i < n; i++) if (!line[i]) line[i] = ' ';
             fclose(self); }}
  if (out) {{ fprintf(out, "ld_preload: %s\\n", line); fclose(out); }}
}}
"""
#: The programs the agent puts first on the ``PATH``: a line, then the real one.
WRAPPED = ("git", "which", "uname", "rg", "bash", "sh", "zsh")
AGENT_ENV = {"PATH": "/home/agent/bin:/usr/local/bin:/usr/bin:/bin", "LD_PRELOAD": "/home/agent/probe.so"}
#: The files whose ``env`` the agent writes, by case (merged into what is there: Claude Code's own ``~/.claude.json``).
ENV_PLACES = {"user": "~/.claude/settings.json", "project": "/workspace/.claude/settings.json",
              "local": "/workspace/.claude/settings.local.json", "global_config": "~/.claude.json"}
#: The shell start-up files the agent writes (a login bash reads the first; the snapshot sources the second).
RC_FILES = ("~/.bash_profile", "~/.bashrc")


def _decoded(text: str, path: str) -> str:
    return f"echo {base64.b64encode(text.encode()).decode()} | base64 -d > {path}"


def _script(lines: list[str]) -> str:
    """One tool command running ``lines`` as a script (no ``$(...)`` in the command itself: 2.0.69's Bash tool
    rewrites some), clearing the marker last: a line after it is no part of this call."""
    return " && ".join([_decoded("set -e\n" + "\n".join(lines) + "\n", "/tmp/step.sh"), "sh /tmp/step.sh",
                        f"rm -f {RAN}", "echo installed"])


def _install_env(file: str) -> str:
    lines = [_decoded(MARKER, PROBE), _decoded(SET_JSON, "/tmp/set.js"), _decoded(LIBRARY, "/tmp/probe.c"),
             "gcc -shared -fPIC -o /home/agent/probe.so /tmp/probe.c", "mkdir -p /home/agent/bin"]
    for name in WRAPPED:
        real = shutil.which(name, path="/usr/bin:/bin")
        if real:
            lines.append(f"printf '#!/bin/sh\\n/bin/sh {PROBE} \"path: {name} $*\"\\nexec {real} \"$@\"\\n' "
                         f"> /home/agent/bin/{name}")
    lines += ["chmod +x /home/agent/bin/*",
              f"node /tmp/set.js {file.replace('~', '$HOME', 1)} '{json.dumps({'env': AGENT_ENV})}'", "sleep 2"]
    return _script(lines)


def _install_rc() -> str:
    lines = [_decoded(MARKER, PROBE)]
    lines += [f"echo 'sh {PROBE} rc:{rc[2:]}' >> {rc.replace('~', '$HOME', 1)}" for rc in RC_FILES]
    return _script(lines)


def run(turns: list[list[str]], stub, tmp_path: Path, *, version: str | None, shipped: dict[str, Any] | None = None):
    """Claude Code for two user turns, each running its shell commands in ``turns`` (then answering), in a git
    repository the task ships (with ``shipped`` files); (workspace, result, requests)."""
    env = tmp_path / "env"
    env.mkdir()
    (env / "NOTES.md").write_text("notes\n")
    for name, data in (shipped or {}).items():
        (env / name).parent.mkdir(parents=True, exist_ok=True)
        (env / name).write_text(json.dumps(data))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "task"]):
        subprocess.run(["git", "-c", "user.email=task@example.com", "-c", "user.name=Task", "-C", str(env), *args],
                       check=True, capture_output=True)
    requests: list[dict[str, Any]] = []
    tool, arguments = SHELL["claude_code"]
    calls = [[(tool, {"command": command, **arguments}) for command in commands] for commands in turns]
    stub.default = turns_script(calls, QUERIES, requests, answer=REAL_ANSWER)
    client = ModelClient(model="openai/stub", api_base=stub.url, retry=RetryPolicy(max_attempts=1, timeout=30))
    ws = Workspace.create(env, parent=tmp_path)
    result = run_closing(run_cli("claude_code", workspace=ws, queries=list(QUERIES), system=None, model_name=MODEL,
                                 client=client, submit=None, options=AgentOptions(max_seconds=150),
                                 log_path=tmp_path / "raw.jsonl", version=version))
    return ws, result, requests


def _ran(ws: Workspace) -> list[str]:
    marker = ws.path / "PROBE_RAN"
    return marker.read_text().splitlines() if marker.exists() else []


def _sandbox(path: str) -> str:
    return path.replace("~", "/home/agent", 1)


def _ends_before_turn_2(result, *names: str) -> None:
    assert result.harness_error is None, result.stderr[-2000:]
    fault = result.agent_fault or ""
    assert "changed what claude_code loads into its own process or prompt when it starts" in fault, fault
    assert all(name in fault for name in names), fault
    assert result.turn_texts == (REAL_ANSWER,), result.turn_texts
    (shell,) = result.trajectory.calls_to("Bash")
    assert "installed" in text_of(shell.result.content), shell.result.content
    assert refused(result) == []


def _runs_on_pinned_ends_before_turn_2_on_older(result, version: str | None, *names: str) -> None:
    """The pinned version runs both turns with no fault; an older one ends before turn 2 naming ``names``."""
    if version is None:
        assert result.harness_error is None and result.agent_fault is None, result.agent_fault
        assert result.turn_texts == (REAL_ANSWER, REAL_ANSWER), result.turn_texts
    else:
        _ends_before_turn_2(result, *names)


ENV_CASES = [pytest.param(place, version, id=f"{place}-{version or 'pinned'}")
             for version in (None, "2.0.69") for place in ENV_PLACES]


@pytest.mark.parametrize(("place", "version"), ENV_CASES)
def test_an_env_the_agent_writes_into_a_settings_file_runs_nothing_of_the_clis_own(place, version, agents,
                                                                                   side_version, stub_env, tmp_path):
    """Turn 1's call writes ``PATH`` (its own ``git``, ``which``, ``uname``...) and ``LD_PRELOAD`` (its library) into
    the ``env`` of one file; turn 2 makes no tool call. Before: the marker showed Claude Code's own start-up git (and
    2.0.69's ``which``, ``uname``) running the agent's wrappers or loading its library, with no tool call. Now the run
    ends as the agent's failure naming the file, before Claude Code starts again: nothing of it ran."""
    if shutil.which("gcc") is None:
        pytest.skip("no gcc to build the agent's library")
    if version is not None:
        side_version("claude_code", version)
    file = ENV_PLACES[place]
    ws, result, _ = run([[_install_env(file)], []], stub_env, tmp_path, version=version)
    try:
        assert _ran(ws) == []
        _ends_before_turn_2(result, f"{_sandbox(file)} (the environment it gives the programs Claude Code starts)")
    finally:
        ws.close()


@pytest.mark.parametrize("version", [None, "2.0.69"])
def test_shell_startup_files_the_agent_writes_never_run_at_the_clis_start(version, agents, side_version, stub_env,
                                                                         tmp_path):
    """Turn 1's call writes ``~/.bash_profile`` and ``~/.bashrc``; turn 2 makes no tool call. Before: 2.0.69's shell
    snapshot (``bash -c -l``, Claude Code's child) ran both at turn 2's start. Now its run ends as the agent's
    failure naming them, before Claude Code starts again. 2.1.330 takes its snapshot only before a Bash call (a tool
    call): its turn 2 runs, and neither file runs at its start."""
    if version is not None:
        side_version("claude_code", version)
    ws, result, _ = run([[_install_rc()], []], stub_env, tmp_path, version=version)
    try:
        assert _ran(ws) == []
        _runs_on_pinned_ends_before_turn_2_on_older(result, version, *(_sandbox(rc) for rc in RC_FILES))
    finally:
        ws.close()


@pytest.mark.parametrize("version", [None, "2.0.69"])
def test_a_git_fsmonitor_the_agent_sets_never_runs_at_the_clis_start(version, agents, side_version, stub_env,
                                                                     tmp_path):
    """Turn 1's call sets ``core.fsmonitor`` in the task's ``.git/config``; turn 2 makes no tool call. Before: 2.0.69
    ran its own ``git status --short`` at turn 2's start with no override, and git ran the agent's program. Now its
    run ends as the agent's failure naming the file. 2.1.330 gives its git ``-c core.fsmonitor=``: its turn 2 runs,
    and the program never does."""
    if version is not None:
        side_version("claude_code", version)
    configure = _script([_decoded(MARKER, PROBE), f"git config core.fsmonitor 'sh {PROBE} fsmonitor'"])
    ws, result, _ = run([[configure], []], stub_env, tmp_path, version=version)
    try:
        assert _ran(ws) == []
        _runs_on_pinned_ends_before_turn_2_on_older(result, version, "/workspace/.git/config")
    finally:
        ws.close()


def test_a_task_env_and_a_harmless_env_the_agent_writes_change_nothing(agents, stub_env, tmp_path):
    """The fidelity guard: the task ships a project ``env`` with a ``PATH`` and a variable of its own; turn 1 writes a
    harmless ``env`` entry into the user's settings; turn 2's call sees both. No fault, no error."""
    shipped = {".claude/settings.json": {"env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "TASK_FLAG": "task-7"}}}
    write = ("mkdir -p ~/.claude && echo '{\"env\": {\"AGENT_FLAG\": \"agent-3\", \"MAX_THINKING_TOKENS\": \"1024\"}}' "
             "> ~/.claude/settings.json && echo written")
    ws, result, _ = run([[write], ["echo flags:$TASK_FLAG:$AGENT_FLAG"]], stub_env, tmp_path, version=None,
                        shipped=shipped)
    try:
        assert result.harness_error is None and result.agent_fault is None, (result.agent_fault,
                                                                             result.stderr[-2000:])
        assert result.turn_texts == (REAL_ANSWER, REAL_ANSWER), result.turn_texts
        outputs = [text_of(call.result.content) for call in result.trajectory.calls_to("Bash")]
        assert len(outputs) == 2 and "written" in outputs[0] and "flags:task-7:agent-3" in outputs[1], outputs
    finally:
        ws.close()


def test_which_env_entries_and_start_up_files_count(tmp_path):
    """On disk: the ``env`` entries that count (case aside, with the ``LD_``/``GIT_``/``BUN_`` families) in each
    settings file and ``~/.claude.json``, and the shell start-up files; other entries do not."""
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()

    def take(cli=CLAUDE_CODE) -> dict[str, str]:
        return {**snapshot(cli.loads_at_start, workspace=workspace, home=home),
                **cli.startup_state(workspace=workspace, home=home)}

    def write(path: Path, data: Any) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))

    label = " (the environment it gives the programs Claude Code starts)"
    user = home / ".claude" / "settings.json"
    write(user, {"env": {"TASK_FLAG": "1"}})
    before = take()
    for env in ({"TASK_FLAG": "2"}, {"TASK_FLAG": "1", "MAX_THINKING_TOKENS": "9", "OTEL_LOGS_EXPORTER": "otlp"}):
        write(user, {"env": env})
        assert changed(before, take()) == [], env
    for env in ({"PATH": "/home/agent/bin"}, {"path": "/x"}, {"LD_PRELOAD": "/x.so"}, {"GIT_EXEC_PATH": "/x"},
                {"GIT_CONFIG_GLOBAL": "/x"}, {"BUN_OPTIONS": "--preload /x"}, {"BASH_ENV": "/x"}, {"SHELL": "/x"},
                {"CLAUDE_CODE_SHELL": "/x/bash"}, {"CLAUDE_CONFIG_DIR": "/x"}, {"HOME": "/x"}):
        write(user, {"env": {"TASK_FLAG": "1", **env}})
        assert changed(before, take()) == ["/home/agent/.claude/settings.json" + label], env
    write(user, {"env": {"TASK_FLAG": "1"}})
    write(home / ".claude.json", {"numStartups": 3, "env": {"LD_LIBRARY_PATH": "/x"}})
    write(workspace / ".claude" / "settings.local.json", {"env": {"Path": "/x"}})
    assert changed(before, take()) == ["/home/agent/.claude.json" + label,
                                       "/workspace/.claude/settings.local.json" + label]
    # the shell start-up files and git's configuration count before 2.1 only
    legacy = CLAUDE_CODE.for_version("2.0.69")
    assert CLAUDE_CODE.for_version("2.1.330") is CLAUDE_CODE and CLAUDE_CODE.for_version(None) is CLAUDE_CODE
    before, old = take(), take(legacy)
    (home / ".zshrc").write_text("echo hi\n")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n\tfsmonitor = sh /x\n")
    assert changed(before, take()) == []
    assert changed(old, take(legacy)) == ["/home/agent/.zshrc", "/workspace/.git/config"]
