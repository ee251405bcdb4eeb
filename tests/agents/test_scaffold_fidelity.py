"""Each instance runs its own scaffold: the runner choice (--ifbench-agent-runner auto|loop|<cli>), CLI
versions side by side, Claude Code's replaced system prompt, and what stops a run at start-up."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from pytest_ifbench.agents.clis import AgentClis
from pytest_ifbench.agents.install import install, installed_versions, resolve_version
from pytest_ifbench.agents.options import AgentOptions, OptionError, agent_options, choose_runner
from pytest_ifbench.cli import main as _cli
from tests.agents.test_cli_runners import fake_install

CLIS = AgentClis()
PROFILES = ("generic", "claude_code", "kilo", "droid")


def choose(scaffold, flag, installed=("claude_code", "kilo", "droid"), **options):
    return choose_runner(AgentOptions(**options), scaffold=scaffold, flag=flag, clis=CLIS,
                         installed=lambda name: name in installed, profiles=PROFILES)


def test_the_runner_follows_the_instances_scaffold():
    # No flag: what the instance says.
    assert choose("droid", None, runner="kilo").runner == "kilo"
    # A CLI's name: an instance naming another CLI runs its own, never the flag's.
    assert choose("droid", "claude_code").runner == "droid"
    assert choose(None, "claude_code").runner == "claude_code"
    # auto: the real CLI where installed, else the loop with the scaffold's profile.
    assert choose("kilo", "auto").runner == "kilo"
    fallback = choose("kilo", "auto", installed=())
    assert (fallback.runner, fallback.tools) == ("loop", "kilo")
    assert choose(None, "auto").runner == "loop"
    # loop: every instance on the loop, with its scaffold's profile unless it asks for one.
    assert (choose("droid", "loop").runner, choose("droid", "loop").tools) == ("loop", "droid")
    assert choose("droid", "loop", tools="generic").tools == "droid"
    assert choose("droid", "loop", tools="claude_code").tools == "claude_code"


def test_version_and_system_prompt_options_are_validated():
    options = agent_options({"runner_version": "2.0.69", "system_prompt": "replace"})
    assert options.runner_version == "2.0.69" and options.system_prompt == "replace"
    with pytest.raises(OptionError, match="append or replace"):
        agent_options({"system_prompt": "prepend"})


def test_claude_code_replaces_its_system_prompt_where_asked():
    cli = CLIS.get("claude_code")
    assert cli.replaces_system and not CLIS.get("kilo").replaces_system
    argv = cli.invocation("/x/claude", "q", turn=0, model="m", system="S", replace_system=True).argv
    assert argv[-2:] == ("--system-prompt", "S") and "--append-system-prompt" not in argv


def test_versions_install_side_by_side(tmp_path, monkeypatch, capsys):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    npm = bindir / "npm"
    npm.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/argv\n')
    npm.chmod(npm.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(bindir))
    agents = tmp_path / "agents"
    assert install(["claude_code@2.0.69", "kilo"], agents) == 0
    calls = [line.split() for line in (tmp_path / "argv").read_text().splitlines()]
    assert calls == [
        ["install", "--prefix", str(agents / "versions" / "claude_code@2.0.69"), "--no-audit", "--no-fund",
         "@anthropic-ai/claude-code@2.0.69"],
        ["install", "--prefix", str(agents), "--no-audit", "--no-fund", "@kilocode/cli@7.7.7"]]
    assert install(["claude_code@;rm"], agents) == 2

    fake_install(agents, "claude_code")
    fake_install(agents / "versions" / "claude_code@2.0.69", "claude_code", "2.0.69")
    assert installed_versions("claude_code", agents) == ["2.1.330", "2.0.69"]
    assert resolve_version("claude_code", "2.0.69", agents) == (agents / "versions" / "claude_code@2.0.69", "2.0.69")
    assert resolve_version("claude_code", "1.0.0", agents) == (agents, "2.1.330")  # not installed: the pinned
    assert resolve_version("claude_code", None, agents) == (agents, "2.1.330")
    assert _cli.main(["agents", "status", "--dir", str(agents)]) == 1
    out = capsys.readouterr().out
    assert "claude_code: @anthropic-ai/claude-code@2.1.330: installed (also installed: 2.0.69)" in out


def test_agents_install_says_where(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IFBENCH_AGENTS_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert _cli.main(["agents", "install", "kilo"]) == 127
    assert capsys.readouterr().out.splitlines()[0] == f"installing into {tmp_path / 'mine'}"
    assert _cli.main(["agents", "status"]) == 1
    assert capsys.readouterr().out.splitlines()[0] == f"agent CLIs in {tmp_path / 'mine'}"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


SUITE = """
ifbench: 1
benchmark: fidelity
instances:
  - id: one
    protocol: agent
    scaffold: claude_code
    prompt: Say hi.
    checks:
      - {id: x, verifier: ifbench.tool_not_called, params: {arguments: 'reset --hard'}}
"""


@pytest.fixture
def suite(pytester):
    from pytest_ifbench.sandbox import sandbox_problem

    if sandbox_problem() is not None:
        pytest.skip(sandbox_problem())
    write(pytester.path / "suites" / "s.yaml", SUITE)
    return pytester


def test_a_cli_on_the_embedded_model_stops_at_start_up_in_one_line(suite, tmp_path, monkeypatch):
    agents = tmp_path / "agents"
    fake_install(agents, "claude_code")
    monkeypatch.setenv("IFBENCH_AGENTS_DIR", str(agents))
    result = suite.runpytest_subprocess("suites", "-p", "no:cacheprovider", "--model=local/smollm2",
                                        "--ifbench-agent-runner=claude_code", "--ifbench-summary=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*agent CLI claude_code cannot run on local/smollm2: the model's context "
                                 "window is 4,096 tokens, and claude_code's own prompt*is about 21,000 tokens"])
    assert "Traceback" not in result.stderr.str() and "retry" not in result.stderr.str().lower()


@pytest.mark.parametrize("model", ["openai/gpt-3.5-turbo", "gpt-3.5-turbo"])
def test_a_hosted_model_whose_window_litellm_knows_is_checked_too(suite, tmp_path, monkeypatch, model):
    """litellm's table says gpt-3.5-turbo takes 16,385 tokens: Claude Code's own prompt does not fit, and
    every call would have failed (only the embedded model's window was known)."""
    agents = tmp_path / "agents"
    fake_install(agents, "claude_code")
    monkeypatch.setenv("IFBENCH_AGENTS_DIR", str(agents))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-for-the-start-up-check")
    result = suite.runpytest_subprocess("suites", "-p", "no:cacheprovider", f"--model={model}",
                                        "--ifbench-agent-runner=claude_code", "--ifbench-summary=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*agent CLI claude_code cannot run on {model}: the model's context "
                                 "window is 16,385 tokens, and claude_code's own prompt*is about 21,000 tokens"])


def test_a_missing_workspaces_directory_is_one_usage_error(suite, tmp_path):
    result = suite.runpytest_subprocess("suites", "-p", "no:cacheprovider", "--model=openai/stub",
                                        "--api-base=http://127.0.0.1:9/v1", "--ifbench-summary=",
                                        f"--ifbench-workspaces={tmp_path / 'nope'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--ifbench-workspaces {tmp_path / 'nope'}: no such directory*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_a_context_window_error_is_never_retried():
    from pytest_ifbench.models.call_errors import is_context_window_error, is_retryable

    class APIConnectionError(Exception):  # how litellm reports llama.cpp's error for local/ models
        pass

    local = APIConnectionError("litellm.APIConnectionError: Requested tokens (6031) exceed context window of 4096")
    assert is_context_window_error(local) and not is_retryable(local)
    assert is_retryable(APIConnectionError("Connection reset by peer"))
