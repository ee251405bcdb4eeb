"""The agent-CLI registry: a third-party CLI is one module plus one registration, and then it is a
runner like the shipped ones (the session's registry, ``ifbench agents status|install``, the runner)."""

from __future__ import annotations

import asyncio
import json
import stat
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_ifbench.agents.cli import cli_problem, install, run_cli
from pytest_ifbench.agents.clis import BUILTIN_CLIS, AgentCli, AgentClis, Invocation
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.cli import main as _cli
from pytest_ifbench.models.client import ModelClient

#: The one new module a package ships: its CLI's declaration.
ECHO_MODULE = '''
from pytest_ifbench.agents.clis import AgentCli, Invocation, write_home


class Echo(AgentCli):
    __slots__ = ()

    def configure(self, ws, *, url, model, system):
        write_home(ws, ".echo/config.json", '{"base_url": "%s/v1"}' % url)
        return {"ECHO_MODEL": model}

    def invocation(self, binary, query, *, turn, model, system):
        return Invocation(argv=(binary, "--resume" if turn else "--new", query))


CLI = Echo(name="echo_cli", package="@example/echo-cli", version="1.2.3", binary="echo-cli", wire="openai_chat")
'''
#: ...and its one registration line, here in a conftest.
CONFTEST = '''
from ifbench_echo_cli import CLI


def pytest_ifbench_agent_clis(clis):
    clis.add(CLI)
'''


@pytest.fixture
def echo_plugin(tmp_path, monkeypatch) -> Path:
    """A folder on sys.path holding the CLI module and its registration (a conftest's text, as ``echo_conftest``)."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "ifbench_echo_cli.py").write_text(ECHO_MODULE)
    (folder / "echo_conftest.py").write_text(CONFTEST)
    monkeypatch.syspath_prepend(str(folder))
    for name in ("ifbench_echo_cli", "echo_conftest"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return folder


def fake_install(directory: Path, cli: AgentCli, version: str | None = None) -> None:
    (directory / "node_modules" / cli.package).mkdir(parents=True, exist_ok=True)
    manifest = directory / "node_modules" / cli.package / "package.json"
    manifest.write_text(json.dumps({"version": version or cli.version}))
    (directory / "node_modules" / ".bin").mkdir(exist_ok=True)
    (directory / "node_modules" / ".bin" / cli.binary).write_text("#!/bin/sh\n")


def test_the_registry_holds_the_shipped_clis_and_wire_formats():
    clis = AgentClis()
    assert clis.names() == ("claude_code", "kilo", "droid") == tuple(cli.name for cli in BUILTIN_CLIS)
    assert clis.wire_formats() == ("anthropic_messages", "openai_chat")
    assert {cli.wire for cli in clis} == {"anthropic_messages"} and not clis.get("droid").multi_turn
    with pytest.raises(ValueError, match="already registered"):
        clis.add(BUILTIN_CLIS[0])
    with pytest.raises(ValueError, match="already registered"):
        clis.add_wire_format(clis.wire_format("openai_chat"))
    with pytest.raises(KeyError, match="unknown agent CLI 'aider'"):
        clis.get("aider")
    assert AgentClis(builtins=False).names() == ()


def test_a_conftest_cli_is_in_the_sessions_registry(pytester, echo_plugin):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_seen='''
        from pytest_ifbench._state import STATE_KEY

        def test_registry(request):
            clis = request.config.stash[STATE_KEY].agent_settings.clis
            assert clis.names() == ("claude_code", "kilo", "droid", "echo_cli")
            assert clis.get("echo_cli").wire == "openai_chat"
            assert clis.wire_format("openai_chat").paths[0] == "/v1/chat/completions"
    ''')
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_plugin_cli_shows_in_ifbench_agents(echo_plugin, tmp_path, capsys, monkeypatch):
    assert _cli.main(["agents", "status", "--dir", str(tmp_path), "--plugin", "echo_conftest"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"agent CLIs in {tmp_path}"  # then the three shipped CLIs, then the plugin's
    assert out[4] == (f"echo_cli: @example/echo-cli@1.2.3: agent CLI echo_cli is not installed in {tmp_path}: "
                      "run `ifbench agents install echo_cli`") and len(out) == 5
    from ifbench_echo_cli import CLI

    fake_install(tmp_path, CLI)
    _cli.main(["agents", "status", "--dir", str(tmp_path), "--plugin", "echo_conftest"])
    assert "echo_cli: @example/echo-cli@1.2.3: installed" in capsys.readouterr().out.splitlines()
    assert _cli.main(["agents", "status", "--dir", str(tmp_path)]) == 1  # without the plugin: not listed
    assert "echo_cli" not in capsys.readouterr().out
    assert _cli.main(["agents", "install", "echo_cli", "--dir", str(tmp_path)]) == 2
    assert "unknown agent CLI(s): echo_cli" in capsys.readouterr().err
    assert _cli.main(["agents", "status", "--plugin", "ifbench_echo_cli"]) == 2
    assert "has no pytest_ifbench_agent_clis(clis) function" in capsys.readouterr().err

    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "npm").write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/argv\n')
    (bindir / "npm").chmod((bindir / "npm").stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(bindir))
    assert _cli.main(["agents", "install", "echo_cli", "--dir", str(tmp_path), "--plugin", "echo_conftest"]) == 0
    assert (tmp_path / "argv").read_text().split()[-1] == "@example/echo-cli@1.2.3"


def test_versions_a_cli_declares_supported_are_accepted(tmp_path):
    class Tool(AgentCli):
        __slots__ = ()

    clis = AgentClis()
    clis.add(Tool(name="tool", package="tool", version="2.0.0", binary="tool", supported=("1.9.0",)))
    fake_install(tmp_path, clis.get("tool"), "1.9.0")
    assert cli_problem("tool", tmp_path, clis) is None
    fake_install(tmp_path, clis.get("tool"), "1.8.0")
    assert "1.8.0 is installed, 2.0.0 is pinned" in cli_problem("tool", tmp_path, clis)
    assert "unknown agent CLI 'tool'" in cli_problem("tool", tmp_path)  # not in the shipped registry
    assert install(["tool"], tmp_path) == 2


def test_a_cli_whose_wire_format_is_not_registered_is_a_harness_error(tmp_path, monkeypatch, stub_env):
    class Gemini(AgentCli):
        __slots__ = ()

        def invocation(self, binary, query, *, turn, model, system):  # pragma: no cover - never reached
            return Invocation(argv=(binary,))

    clis = AgentClis()
    clis.add(Gemini(name="gem", package="gem", version="1.0.0", binary="gem", wire="google_genai"))
    fake_install(tmp_path / "agents", clis.get("gem"))
    monkeypatch.setenv("IFBENCH_AGENTS_DIR", str(tmp_path / "agents"))
    client = ModelClient(model="openai/stub", api_base=stub_env.url)
    result = asyncio.run(run_cli("gem", workspace=SimpleNamespace(root=tmp_path), queries=["hi"], system=None,
                                 model_name="m", client=client, submit=None, options=AgentOptions(),
                                 log_path=tmp_path / "raw.jsonl", clis=clis))
    assert result.harness_error == ("agent CLI gem speaks the wire format 'google_genai', which is not registered "
                                    "(known: anthropic_messages, openai_chat)")
    assert stub_env.calls == 0 and result.stop_reason == "error"
