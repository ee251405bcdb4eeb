"""Git configuration the agent writes never runs as a CLI's own child: real Claude Code, Kilo and Droid runs whose
first tool call configures git to run commands, in a repository the task ships or one the agent makes.

Git runs commands its configuration names: ``core.fsmonitor`` (every command reading the index), the hooks of
``core.hooksPath`` (``post-index-change`` when the index is written, ``reference-transaction`` when a ref moves), a
filter's ``clean``/``smudge`` for the files ``.gitattributes`` gives it (``git status`` cleans a changed file to
compare it), ``diff.external``, a ``textconv``, ``core.pager``, a ``gpg.program`` with ``log.showSignature``... -- from
the repository's ``.git/config``, ``~/.gitconfig`` and ``~/.config/git/config``, all of which the agent's tool commands
write. So git a CLI runs itself (not as a tool call) ran the agent's command as the CLI's child.

What each CLI did (with the configuration of :func:`_configure` in all three places, a same-size change to a
tracked file and a ``.gitattributes`` giving every file the filter):

* Kilo 7.7.7 keeps snapshots of the workspace in a git repository of its own (``~/.local/share/kilo/snapshot``,
  ``--work-tree /workspace``) and materializes them through the workspace's own repository, after every step: right
  after the tool call that configured git, in that same turn, and in every later turn, it ran the fsmonitor of
  ``.git/config`` (``git ls-files``, ``update-index``, ``write-tree``, ``check-attr`` in ``/workspace``), the clean and
  smudge filters, the ``textconv`` and the hooks (``core.hooksPath``) of ``~/.gitconfig``, with no tool call for it.
  A comparison between two turns cannot help within one: Kilo now runs with ``"snapshot": false`` in
  ``KILO_CONFIG_CONTENT`` (ranked above every configuration file): no snapshot, and no git of Kilo's own that runs a
  configured command.
* Claude Code 2.1.330 puts ``git status``/branch/log into its prompt when it starts (turn 2's, under ``-c``, showed
  turn 1's), but runs its own git with ``-c core.hooksPath=/dev/null -c core.fsmonitor=``, every filter driver's
  commands overridden ("taken with the repository's own git filters off"), ``--no-ext-diff --no-textconv`` and
  ``--no-show-signature``: nothing ran, in turn 2 or later in turn 1.
* Droid 0.215.0 (single-turn) runs ``git status --short --branch`` once at session start -- the task's configuration,
  not the agent's -- and nothing of its own later in the turn; its Droid Shield, which ran git before each shell call
  holding ``git commit``, is off (``test_droid_mcp_integrity.py``).

The control: the agent's own last tool call runs ``git status`` and ``git diff`` there, and the configured commands
run (as that call's children): the test would see one the CLI ran. Setting ``user.email`` and committing stays
ordinary (:func:`test_an_agent_that_configures_its_identity_and_commits_is_no_fault`).
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench.agents.cli import run_cli
from pytest_ifbench.agents.clis.kilo import CLI as KILO
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.workspace import Workspace
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from tests._support import run_closing
from tests.agents._cli_scripts import ancestry_marker, text_of, turns_script
from tests.agents.test_relay_integrity import MODEL, REAL_ANSWER, SHELL, refused

QUERIES = ("Do the task.", "Now the next one.")
SCRIPT = "/home/agent/.git-marker.sh"
#: What every configured command runs: a line in the marker per run, the command's label, then the command lines of
#: its ancestors; `` [control]`` after the label when the control's tool call ran it (its environment holds
#: ``GIT_MARKER_CONTROL``, which the CLI's own git does not); a filter passes its input through.
MARKER = ancestry_marker("/workspace/GIT_RAN", "GIT_MARKER_CONTROL", width=300, passthrough=True)
#: The hooks installed (each a line in the marker).
HOOKS = ("post-index-change", "reference-transaction", "pre-commit", "post-commit", "post-checkout", "pre-auto-gc",
         "post-rewrite")
#: The command-running keys set (their value runs the marker with the label ``<place>-<what>``).
KEYS = {"core.fsmonitor": "fsmonitor", "filter.gm.clean": "clean", "filter.gm.smudge": "smudge",
        "diff.external": "diff-external", "diff.gm.textconv": "textconv", "core.pager": "pager",
        "gpg.program": "gpg"}
#: Where: the repository's, the user's and the XDG configuration file.
PLACES = {"L": "--local", "G": "--global", "X": "--file /home/agent/.config/git/config"}
#: After the label of what the control ran.
CONTROL = " [control]"
#: What the control's git must have run (the repository's own configuration ranks above the user's).
CONTROL_RAN = ("L-fsmonitor", "L-clean", "hook-post-index-change")


def _decoded(text: str, path: str) -> str:
    return f"echo {base64.b64encode(text.encode()).decode()} | base64 -d > {path}"


def _configure(*, init: bool) -> str:
    """The agent's first tool command: (``init``: make the workspace a repository, with an identity and a commit),
    then the marker, the hooks, every key in every place, the filter for every file and a same-size change to a
    tracked file (``git status`` must clean it to compare it)."""
    steps = ["cd /workspace"]
    if init:
        steps += ["git init -q", "git config user.email agent@example.com", "git config user.name Agent",
                  "git add -A", "git commit -qm start"]
    steps += [_decoded(MARKER, SCRIPT), "mkdir -p /home/agent/.hooks /home/agent/.config/git"]
    steps += [f"printf '#!/bin/sh\\nexec sh {SCRIPT} hook-{hook}\\n' > /home/agent/.hooks/{hook}" for hook in HOOKS]
    steps.append("chmod +x /home/agent/.hooks/*")
    for tag, scope in PLACES.items():
        steps += [f"git config {scope} {key} 'sh {SCRIPT} {tag}-{what}'" for key, what in KEYS.items()]
        steps += [f"git config {scope} core.hooksPath /home/agent/.hooks",
                  f"git config {scope} log.showSignature true"]
    steps += ["printf '* filter=gm diff=gm\\n' > .gitattributes", "sleep 1.1", "printf 'NOTES\\n' > NOTES.md",
              "echo configured"]
    return " && ".join(steps)


#: The control: the agent's own git in the repository (a tool call in the trajectory).
CONTROL_COMMAND = ("export GIT_MARKER_CONTROL=1; cd /workspace && git status --short && git log -1 --oneline && "
                   "git diff | head -3")


def scripted(cli: str, calls: dict[int, list[str]], requests: list[dict[str, Any]]):
    """The stub's reply: each user turn runs its shell commands in order, one a request, then answers."""
    tool, arguments = SHELL[cli]
    turns = [[(tool, {"command": command, **arguments}) for command in calls.get(turn, [])]
             for turn in range(len(QUERIES))]
    return turns_script(turns, QUERIES, requests, answer=REAL_ANSWER)


def run(cli: str, calls: dict[int, list[str]], stub, tmp_path: Path, *, repository: bool):
    """``cli`` for as many user turns as ``calls`` names (one for Droid) in a workspace holding ``NOTES.md`` (a git
    repository with it committed, with ``repository``); (workspace, result, requests)."""
    env = tmp_path / "env"
    env.mkdir()
    (env / "NOTES.md").write_text("notes\n")
    if repository:
        git = ["git", "-c", "user.email=task@example.com", "-c", "user.name=Task", "-C", str(env)]
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "task"]):
            subprocess.run([*git, *args], check=True, capture_output=True)
    requests: list[dict[str, Any]] = []
    stub.default = scripted(cli, calls, requests)
    client = ModelClient(model="openai/stub", api_base=stub.url, retry=RetryPolicy(max_attempts=1, timeout=30))
    ws = Workspace.create(env, parent=tmp_path)
    queries = list(QUERIES[:len(calls)])
    result = run_closing(run_cli(cli, workspace=ws, queries=queries, system=None, model_name=MODEL, client=client,
                                 submit=None, options=AgentOptions(max_seconds=150), log_path=tmp_path / "raw.jsonl"))
    return ws, result, requests


def _ran(ws: Workspace) -> list[str]:
    marker = ws.path / "GIT_RAN"
    return marker.read_text().splitlines() if marker.exists() else []


def _outputs(result, tool: str) -> list[str]:
    return [text_of(call.result.content) for call in result.trajectory.calls_to(tool)]


CASES = [pytest.param("claude_code", True, id="claude_code-task_repository"),
         pytest.param("claude_code", False, id="claude_code-agent_repository"),
         pytest.param("kilo", True, id="kilo-task_repository"),
         pytest.param("kilo", False, id="kilo-agent_repository"),
         pytest.param("droid", True, id="droid-task_repository")]


@pytest.mark.parametrize(("cli", "repository"), CASES)
def test_git_configuration_the_agent_writes_runs_no_command_of_the_clis_own(cli, repository, agents, stub_env,
                                                                             tmp_path):
    """Turn 1's first call configures git (:func:`_configure`), its second runs no git; Claude Code and Kilo then
    start again for turn 2, one call running no git, and the control (the agent's own ``git status``/``git diff``).
    Droid (single-turn) runs all of it in one turn. Before: Kilo's snapshots ran the fsmonitor, filters, textconv and
    hooks right after the first call and in turn 2 (marker lines with no control in their ancestry). Now every run
    of a configured command is the control's, and the control's ran the fsmonitor, the clean filter and a hook."""
    later = ["sleep 1; echo later", CONTROL_COMMAND]
    first = [_configure(init=not repository), "sleep 2; echo second"]
    calls = {0: first + later} if cli == "droid" else {0: first, 1: later}
    ws, result, _ = run(cli, calls, stub_env, tmp_path, repository=repository)
    try:
        ran = _ran(ws)
        own = [line for line in ran if not line.split(" <- ")[0].endswith(CONTROL)]
        assert own == [], "\n".join(own)
        assert result.harness_error is None and result.agent_fault is None, (result.agent_fault,
                                                                             result.stderr[-2000:])
        assert result.turn_texts == (REAL_ANSWER,) * len(calls), result.turn_texts
        assert refused(result) == []
        outputs = _outputs(result, SHELL[cli][0])
        assert len(outputs) == 4 and "configured" in outputs[0], outputs
        labels = {line.split(" <- ")[0].removesuffix(CONTROL) for line in ran}
        assert set(CONTROL_RAN) <= labels, ran
    finally:
        ws.close()


@pytest.mark.parametrize("cli", ["claude_code", "kilo"])
def test_an_agent_that_configures_its_identity_and_commits_is_no_fault(cli, agents, stub_env, tmp_path):
    """The fidelity guard: turn 1 sets ``user.email``/``user.name`` (in the repository and ``~/.gitconfig``) and
    commits in the repository the task ships; turn 2 sees the commit. No fault, no error: git configuration that
    names no command is the agent's to set."""
    commit = ("cd /workspace && git config user.email agent@example.com && git config user.name Agent && "
              "git config --global user.email agent@example.com && echo more >> NOTES.md && "
              "git commit -qam 'agent work' && echo committed")
    calls = {0: [commit], 1: ["cd /workspace && git log --format=%ae:%s -1"]}
    ws, result, _ = run(cli, calls, stub_env, tmp_path, repository=True)
    try:
        assert result.harness_error is None and result.agent_fault is None, (result.agent_fault,
                                                                             result.stderr[-2000:])
        assert result.turn_texts == (REAL_ANSWER, REAL_ANSWER), result.turn_texts
        outputs = _outputs(result, SHELL[cli][0])
        assert len(outputs) == 2 and "committed" in outputs[0], outputs
        assert "agent@example.com:agent work" in outputs[1], outputs
    finally:
        ws.close()


def test_kilo_runs_without_snapshots_whatever_its_files_say(tmp_path):
    """On disk: Kilo's environment turns snapshots off (with formatters and language servers) in
    ``KILO_CONFIG_CONTENT``, which ranks above every configuration file the agent can write."""
    ws = Workspace.create(_empty(tmp_path / "env"), parent=tmp_path)
    try:
        env = KILO.configure(ws, url="http://127.0.0.1:1", model=MODEL, system=None)
    finally:
        ws.close()
    assert json.loads(env["KILO_CONFIG_CONTENT"]) == {"formatter": False, "lsp": False, "snapshot": False}


def _empty(path: Path) -> Path:
    path.mkdir()
    return path
