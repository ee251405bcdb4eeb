"""Kilo's grep and glob tools work in the sandbox as they do on a developer's machine.

Kilo 7.7.7 runs ``rg`` for both: from the ``PATH``, else from its cache in HOME, else it downloads ripgrep from
GitHub -- which the sandbox cannot reach, so every grep and glob call answered "ripgrep execution failed:
Transport error (GET https://github.com/BurntSushi/ripgrep/releases/...)" where a bare Kilo would have searched. The
README's install line now installs ripgrep, and a Kilo run is refused at start-up where ``rg`` is not on the
sandbox's ``PATH`` (``AgentCli.needs``): an error of the machine, never a tool failure scored against the agent.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pytest_ifbench.agents.clis import SANDBOX_PATH
from pytest_ifbench.agents.clis.kilo import CLI as KILO
from pytest_ifbench.agents.install import cli_problem
from tests.agents._cli_scripts import text_of
from tests.agents.test_bun_cli_startup_integrity import run


def test_kilos_grep_and_glob_find_what_is_in_the_workspace(agents, stub_env, tmp_path):
    calls = [("grep", {"pattern": "needle-[0-9]+"}), ("glob", {"pattern": "**/*.txt"})]
    ws, result = run("kilo", [calls], stub_env, tmp_path,
                     shipped={"src/hay.txt": "straw\nneedle-42 here\n", "docs/other.md": "nothing\n"})
    try:
        assert result.harness_error is None and result.agent_fault is None, result.stderr[-2000:]
        outputs = {name: text_of(call.result.content) for name, _ in calls
                   for call in result.trajectory.calls_to(name)}
        assert set(outputs) == {"grep", "glob"}, outputs
        assert not any("ripgrep execution failed" in text for text in outputs.values()), outputs
        assert "hay.txt" in outputs["grep"] and "needle-42" in outputs["grep"], outputs["grep"]
        assert "hay.txt" in outputs["glob"] and "other.md" not in outputs["glob"], outputs["glob"]
    finally:
        ws.close()


def test_a_kilo_run_is_refused_where_rg_is_not_on_the_sandboxs_path(agents, monkeypatch, tmp_path):
    """``rg`` missing from the host's directories the sandbox sees: the problem names it and how to install it (the
    installation itself is fine)."""
    assert cli_problem("kilo", agents) is None
    real = shutil.which

    def which(program, mode=None, path=None):
        if program == "rg" and path == SANDBOX_PATH:
            return None
        return real(program, path=path) if mode is None else real(program, mode, path)

    monkeypatch.setattr(shutil, "which", which)
    problem = cli_problem("kilo", agents)
    assert problem == (f"agent CLI kilo needs on the sandbox's PATH ({SANDBOX_PATH}): `rg` ({dict(KILO.needs)['rg']})")
    assert "apt-get install ripgrep" in problem
    assert cli_problem("claude_code", agents) is None, "a CLI that needs nothing is not affected"


def test_the_readme_installs_what_a_cli_needs():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- ci:install-and-test -->", 1)[1]
    install = next(line for line in block.splitlines() if line.startswith("apt-get update && apt-get install"))
    assert " ripgrep " in install, install
