"""Real agent CLIs: installing and checking them, their configuration, and each one driven end to end
through the sandbox and the recording proxy by a scripted stub model.

The end-to-end tests install the pinned CLIs once into ``agents_dir()`` (``~/.cache/pytest-ifbench/agents``, or
``$IFBENCH_TEST_AGENTS_DIR``), shared between runs; they are skipped only when npm is missing, or
when the sandbox cannot run here (with its one-line reason).
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_ifbench.agents.cli import AGENT_CLIS, agents_dir, cli_problem, install, installed_version, run_cli
from pytest_ifbench.agents.clis import PLACEHOLDER_KEY, AgentClis
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.workspace import Workspace, sandbox_problem
from pytest_ifbench.cli import main as _cli
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.testing import Fault, Reply
from tests._support import FAKE_KEY

MODEL = "claude-sonnet-4-5"
#: The shipped CLI declarations by runner name.
SCAFFOLDS = {cli.name: cli for cli in AgentClis()}


def fake_install(directory: Path, name: str, version: str | None = None) -> None:
    package, pinned, binary = AGENT_CLIS[name]
    (directory / "node_modules" / package).mkdir(parents=True, exist_ok=True)
    (directory / "node_modules" / package / "package.json").write_text(json.dumps({"version": version or pinned}))
    (directory / "node_modules" / ".bin").mkdir(exist_ok=True)
    (directory / "node_modules" / ".bin" / binary).write_text("#!/bin/sh\n")


# --------------------------------------------------------------------------- install and status


def test_agents_dir_default_and_override(tmp_path, monkeypatch):
    monkeypatch.delenv("IFBENCH_AGENTS_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # not where the CLIs go: the per-user cache, shared by every checkout
    assert agents_dir() == tmp_path / "cache" / "pytest-ifbench" / "agents"
    monkeypatch.setenv("IFBENCH_AGENTS_DIR", str(tmp_path / "elsewhere"))
    assert agents_dir() == tmp_path / "elsewhere"


def test_cli_problem_names_the_install_command(tmp_path):
    assert "unknown agent CLI 'aider'" in cli_problem("aider", tmp_path)
    problem = cli_problem("kilo", tmp_path)
    assert problem == f"agent CLI kilo is not installed in {tmp_path}: run `ifbench agents install kilo`"
    fake_install(tmp_path, "kilo", "7.0.0")
    assert cli_problem("kilo", tmp_path) == (f"agent CLI kilo 7.0.0 is installed, 7.7.7 is pinned in {tmp_path}: "
                                             "run `ifbench agents install kilo`")
    fake_install(tmp_path, "kilo")
    assert cli_problem("kilo", tmp_path) is None and installed_version("kilo", tmp_path) == "7.7.7"
    assert all("\n" not in (cli_problem(name, tmp_path) or "") for name in AGENT_CLIS)


def test_install_runs_npm_with_the_pinned_specs(tmp_path, monkeypatch, capsys):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    npm = bindir / "npm"
    npm.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/argv\nexit 3\n')
    npm.chmod(npm.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(bindir))
    assert install(["kilo", "droid"], tmp_path / "agents") == 3
    assert (tmp_path / "argv").read_text().split() == [
        "install", "--prefix", str(tmp_path / "agents"), "--no-audit", "--no-fund", "@kilocode/cli@7.7.7",
        "droid@0.215.0"]
    assert install([], tmp_path / "agents") == 3
    assert (tmp_path / "argv").read_text().split()[-3:] == ["@anthropic-ai/claude-code@2.1.330",
                                                            "@kilocode/cli@7.7.7", "droid@0.215.0"]
    assert install(["aider"], tmp_path) == 2
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert install(["kilo"], tmp_path) == 127
    assert "npm is not on PATH" in capsys.readouterr().err


def test_ifbench_agents_command(tmp_path, capsys):
    fake_install(tmp_path, "droid")
    assert _cli.main(["agents", "status", "--dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out.pop(0) == f"agent CLIs in {tmp_path}"
    assert out[0].startswith("claude_code: @anthropic-ai/claude-code@2.1.330: agent CLI claude_code is not installed")
    assert out[2] == "droid: droid@0.215.0: installed" and len(out) == 3
    for name in ("claude_code", "kilo"):
        fake_install(tmp_path, name)
    assert _cli.main(["agents", "status", "--dir", str(tmp_path)]) == 0
    assert _cli.main(["agents", "install", "aider", "--dir", str(tmp_path)]) == 2
    assert "unknown agent CLI(s): aider" in capsys.readouterr().err
    assert _cli.main(["agents"]) == 2


# --------------------------------------------------------------------------- configuration


def fake_workspace(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(home=tmp_path, path=tmp_path / "workspace", uid=os.getuid(), gid=os.getgid())


def test_claude_code_is_configured_by_its_environment(tmp_path):
    scaffold = SCAFFOLDS["claude_code"]
    env = scaffold.configure(fake_workspace(tmp_path), url="http://127.0.0.1:9", model=MODEL, system="S")
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9" and env["ANTHROPIC_API_KEY"] == PLACEHOLDER_KEY
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1" and not list(tmp_path.iterdir())
    first = scaffold.invocation("/x/claude", "do it", turn=0, model=MODEL, system="S")
    assert first.argv == ("/x/claude", "-p", "--model", MODEL, "--permission-mode", "bypassPermissions",
                          "--output-format", "json", "--settings",
                          '{"disableAllHooks": true, "apiKeyHelper": "", "otelHeadersHelper": ""}',
                          "--append-system-prompt", "S") and first.stdin == "do it"
    assert scaffold.invocation("/x/claude", "more", turn=1, model=MODEL, system=None).argv[-1] == "-c"


def test_kilo_and_droid_keep_their_configuration_in_home(tmp_path):
    kilo = SCAFFOLDS["kilo"]
    env = kilo.configure(fake_workspace(tmp_path), url="http://127.0.0.1:9", model=MODEL, system="Be terse.")
    config = json.loads((tmp_path / ".config/kilo/kilo.json").read_text())
    assert config["provider"]["anthropic"]["options"] == {"baseURL": "http://127.0.0.1:9/v1",
                                                         "apiKey": PLACEHOLDER_KEY}
    assert config["model"] == f"anthropic/{MODEL}" and config["permission"]["bash"] == "allow"
    assert config["instructions"] == ["/home/agent/.config/kilo/ifbench-system.md"]
    assert (tmp_path / ".config/kilo/ifbench-system.md").read_text() == "Be terse."
    assert env["KILO_DISABLE_MODELS_FETCH"] == "1"
    call = kilo.invocation("/x/kilo", "say \"hi\" now", turn=1, model=MODEL, system=None)
    assert call.argv == ("/x/kilo", "run", "--auto", "--model", f"anthropic/{MODEL}", "--continue")
    assert call.stdin == 'say "hi" now'

    droid = SCAFFOLDS["droid"]
    assert droid.configure(fake_workspace(tmp_path), url="http://127.0.0.1:9", model=MODEL, system=None) == {}
    (entry,) = json.loads((tmp_path / ".factory/settings.json").read_text())["customModels"]
    assert entry["baseUrl"] == "http://127.0.0.1:9" and entry["provider"] == "anthropic" and entry["model"] == MODEL
    assert droid.invocation("/x/droid", "-q", turn=0, model=MODEL, system="S").argv == (
        "/x/droid", "exec", "--skip-permissions-unsafe", "-m", f"custom:{MODEL}", "-o", "json",
        "--settings", str(agents_dir() / "ifbench-droid-runtime-settings.json"), "--append-system-prompt", "S", "--",
        "-q")
    assert not droid.multi_turn and SCAFFOLDS["claude_code"].multi_turn and kilo.multi_turn


def test_run_cli_without_the_cli_is_a_harness_error(tmp_path, monkeypatch, stub_env):
    monkeypatch.setenv("IFBENCH_AGENTS_DIR", str(tmp_path / "none"))
    client = ModelClient(model="openai/stub", api_base=stub_env.url)
    ws = SimpleNamespace(root=tmp_path)
    result = asyncio.run(run_cli("kilo", workspace=ws, queries=["hi"], system=None, model_name=MODEL, client=client,
                                 submit=None, options=AgentOptions(), log_path=tmp_path / "raw.jsonl"))
    assert result.harness_error.startswith("agent CLI kilo is not installed") and result.stop_reason == "error"
    assert result.trajectory.messages == () and result.returncode is None
    fake_install(tmp_path / "none", "droid")
    result = asyncio.run(run_cli("droid", workspace=ws, queries=["a", "b"], system=None, model_name=MODEL,
                                 client=client, submit=None, options=AgentOptions(), log_path=tmp_path / "raw.jsonl"))
    assert "cannot continue a conversation offline" in result.harness_error and stub_env.calls == 0


@pytest.mark.parametrize(("script", "seconds", "expected"), [
    ("echo starting; echo 'fatal: cannot start' >&2; exit 3", 30,
     "claude_code made no model call (exit 3): fatal: cannot start"),
    ("exec sleep 30", 2, "claude_code did not finish within the run's 2s"),
])
def test_crashes_and_timeouts_of_a_cli_are_harness_errors(tmp_path, monkeypatch, stub_env, script, seconds, expected):
    problem = sandbox_problem()
    if problem is not None:
        pytest.skip(problem)
    fake_install(tmp_path / "agents", "claude_code")
    binary = tmp_path / "agents" / "node_modules" / ".bin" / "claude"
    binary.write_text(f"#!/bin/sh\n{script}\n")
    binary.chmod(0o755)
    monkeypatch.setenv("IFBENCH_AGENTS_DIR", str(tmp_path / "agents"))
    client = ModelClient(model="openai/stub", api_base=stub_env.url)
    with Workspace.create(None, parent=tmp_path) as ws:
        result = asyncio.run(run_cli("claude_code", workspace=ws, queries=["hi"], system=None, model_name=MODEL,
                                     client=client, submit=None, options=AgentOptions(max_seconds=seconds),
                                     log_path=tmp_path / "raw.jsonl"))
    assert result.harness_error == expected and stub_env.calls == 0
    assert result.stop_reason == ("timeout" if seconds == 2 else "error")


# --------------------------------------------------------------------------- the real CLIs, end to end

#: Each scaffold's own file-writing tool, as the scripted model calls it.
WRITE = {
    "claude_code": ("Write", {"file_path": "/workspace/hello.txt", "content": "hello from the stub\n"}),
    "kilo": ("write", {"filePath": "/workspace/hello.txt", "content": "hello from the stub\n"}),
    "droid": ("Create", {"file_path": "/workspace/hello.txt", "content": "hello from the stub\n"}),
}
#: Tools each pinned CLI is known to send (a subset: the full lists are in the test's failure message).
TOOLS = {
    "claude_code": {"Write", "Edit", "Read", "Bash", "Agent"},
    "kilo": {"write", "edit", "read", "bash", "glob", "grep", "task", "todowrite"},
    "droid": {"Create", "Edit", "Read", "Execute", "LS", "Glob", "Grep", "Task"},
}


def scripted(name: str, requests: list[dict]):
    """The stub's reply: the scaffold's write tool first, then a text answer once a tool result is back."""
    def reply(body: dict) -> Reply:
        requests.append(body)
        messages = body.get("messages") or []
        if not body.get("tools") or any(m.get("role") == "tool" for m in messages[-2:]):
            return Reply(content=f"Wrote hello.txt ({sum(m['role'] == 'tool' for m in messages)} tool results).")
        tool, arguments = WRITE[name]
        return Reply(tool_calls=[{"function": {"name": tool, "arguments": arguments}}])
    return reply


def drive(name: str, stub, tmp_path: Path, queries=("Create hello.txt",), system: str | None = "Answer briefly."):
    client = ModelClient(model="openai/stub", api_base=stub.url, retry=RetryPolicy(max_attempts=1, timeout=30))
    ws = Workspace.create(None, parent=tmp_path)
    result = asyncio.run(run_cli(name, workspace=ws, queries=list(queries), system=system, model_name=MODEL,
                                 client=client, submit=None, options=AgentOptions(max_seconds=90),
                                 log_path=tmp_path / "raw.jsonl"))
    return ws, result


@pytest.mark.parametrize("name", list(AGENT_CLIS))
def test_a_real_cli_writes_a_file_through_sandbox_and_proxy(name, agents, stub_env, tmp_path):
    requests: list[dict] = []
    stub_env.default = scripted(name, requests)
    ws, result = drive(name, stub_env, tmp_path)
    try:
        assert result.harness_error is None, (result.harness_error, result.stderr[-2000:])
        assert result.returncode == 0 and result.stop_reason == "end_turn"
        assert ws.read_bytes("hello.txt") == b"hello from the stub\n"
        assert result.final_text == "Wrote hello.txt (1 tool results)."
        records = [json.loads(line) for line in result.raw_log.read_text().splitlines()]
        assert len(records) >= 2 and {r["session_id"] for r in records} == {name}
        assert all(r["request_body"]["messages"] for r in records)
        sent = [t["function"]["name"] for t in requests[0]["tools"]]
        assert TOOLS[name] <= set(sent), f"{name} sent tools {sent}"
        assert any("Answer briefly." in json.dumps(r["request_body"].get("system")) for r in records)
        (call,) = result.trajectory.calls_to(WRITE[name][0])
        assert call.arguments == WRITE[name][1] and call.result is not None and not call.result.is_error
        assert result.trajectory.meta["runner"] == name and result.trajectory.meta["runner_version"]
        assert FAKE_KEY not in result.raw_log.read_text()
    finally:
        ws.close()


def test_claude_code_continues_the_conversation(agents, stub_env, tmp_path):
    requests: list[dict] = []
    stub_env.default = scripted("claude_code", requests)
    ws, result = drive("claude_code", stub_env, tmp_path, queries=("Create hello.txt", "Once more, please"),
                       system=None)
    try:
        assert result.harness_error is None, result.stderr[-2000:]
        users = [m.content for m in result.trajectory.messages if m.role == "user"]
        assert any("Create hello.txt" in u for u in users) and any("Once more, please" in u for u in users)
        assert result.final_text == "Wrote hello.txt (2 tool results)."
        assert len(result.trajectory.calls_to("Write")) == 2
    finally:
        ws.close()


def test_a_failing_model_is_a_harness_error_not_the_agents(agents, stub_env, tmp_path):
    stub_env.inject_faults(*[Fault(kind="status", status=500, message="upstream exploded")] * 5)
    ws, result = drive("claude_code", stub_env, tmp_path)
    try:
        assert result.harness_error.startswith("model call through the proxy failed: model call failed")
        assert "upstream exploded" in result.harness_error and result.stop_reason == "error"
        assert not ws.path.joinpath("hello.txt").exists()  # (Claude Code itself exits 0 after an API error)
        record = json.loads(result.raw_log.read_text().splitlines()[0])
        assert record["response_body"]["type"] == "error"
    finally:
        ws.close()


@pytest.mark.parametrize("name", sorted(SCAFFOLDS))
def test_the_shipped_smoke_suite_sees_each_real_clis_tool_use(name, agents, pytester, stub_env):
    """suites/agent_smoke.yaml's `used-a-tool` named the loop's tools only, so it failed under every real CLI
    (the README runs it under Claude Code)."""
    import shutil

    from tests._support import stub_args
    from tests.agents._cli_scripts import cli_script

    shipped = Path(__file__).resolve().parents[2] / "suites"
    (pytester.path / "suites").mkdir()
    shutil.copy(shipped / "agent_smoke.yaml", pytester.path / "suites")
    for environment in ("greeting", "notes"):
        shutil.copytree(shipped / "environments" / environment, pytester.path / "suites" / "environments" / environment)
    stub_env.default = cli_script(name)
    result = pytester.runpytest_subprocess("suites", "-k", "write-greeting", *stub_args(stub_env),
                                           f"--ifbench-agent-runner={name}")
    record = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"][0]
    assert record["agent"]["runner"] == name, result.stdout.str()[-2000:]
    checks = {check["id"]: check["passed"] for check in record["checks"]}
    assert checks["used-a-tool"] is True, record["checks"]


def test_an_agent_fault_says_why_the_cli_stopped_without_its_terminal_escapes():
    """Kilo's reason for exiting 1 (a permission it rejected) reached no report, and a limit's reason ended in
    a bare colour escape (``disk limit: \\x1b[0m``) or repeated itself."""
    from pytest_ifbench.agents.cli import _fault
    from pytest_ifbench.sandbox.backend import CommandResult

    said = ("\x1b[0m\n> code · claude\n\x1b[91m\x1b[1mError: \x1b[0mrun ended with an auto-rejected permission; "
            "pass --auto for autonomous use\n\x1b[0m\n")
    assert _fault("kilo", CommandResult(argv=("kilo",), returncode=1, stdout="", stderr=said, duration=1.0)) == (
        "kilo ended (exit 1) while the agent's tool call was running, without a final answer: Error: run ended "
        "with an auto-rejected permission; pass --auto for autonomous use")
    assert _fault("kilo", CommandResult(argv=("kilo",), returncode=None, stdout="", stderr="\x1b[0m\n", duration=1.0,
                                          limit="disk")) == (
        "the agent's commands hit the sandbox's disk limit")
    assert _fault("droid", CommandResult(argv=("droid",), returncode=137, stdout="", stderr="Error: bye\n",
                                          duration=1.0)) == (
        "droid ended (killed by signal 9) while the agent's tool call was running, without a final answer")


def test_a_cli_whose_configuration_cannot_be_written_is_a_harness_error(tmp_path, monkeypatch, stub_env):
    """Droid's overlay lies in the agents directory (agents/clis/droid.py): one that cannot be written there is the
    harness's error, said in one line, with no model call (it escaped run_cli as an OSError's traceback)."""
    agents = tmp_path / "agents"
    monkeypatch.setenv("IFBENCH_AGENTS_DIR", str(agents))
    fake_install(agents, "droid")
    (agents / "ifbench-droid-runtime-settings.json").mkdir()  # (root writes anywhere: a directory in the way)
    client = ModelClient(model="openai/stub", api_base=stub_env.url)
    workspace = SimpleNamespace(root=tmp_path, **vars(fake_workspace(tmp_path)))
    result = asyncio.run(run_cli("droid", workspace=workspace, queries=["hi"], system=None,
                                 model_name=MODEL, client=client, submit=None, options=AgentOptions(),
                                 log_path=tmp_path / "raw.jsonl"))
    assert result.harness_error.startswith("droid could not be configured: [Errno 21] Is a directory"), \
        result.harness_error
    assert result.stop_reason == "error" and stub_env.calls == 0
