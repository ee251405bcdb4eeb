"""``pytest --help`` on the agent options: the values each takes and its default, in English.

``--ifbench-agent-runner`` takes ``auto`` (docs/agents.md), which its help did not name; the limits' help read
"agent runs stop at this steps" and gave no default.
"""

from __future__ import annotations

import re

import pytest

#: The limits and their defaults, as docs/agents.md's table of ``protocol_options`` gives them.
LIMITS = {"max-steps": ("N", "30"), "max-tokens": ("N", "60000"), "max-seconds": ("SECONDS", "600"),
          "max-cost": ("USD", "0"), "command-timeout": ("SECONDS", "60")}


@pytest.fixture(scope="module")
def agent_help(tmp_path_factory) -> dict[str, str]:
    """Each agent option's help text from ``pytest --help`` (its own process), its lines joined."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=tmp_path_factory.mktemp("help"),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return dict(re.findall(r"--ifbench-agent-([a-z-]+)=[A-Z]+ (.*?)(?= --|$)", " ".join(proc.stdout.split())))


def test_the_runner_s_help_names_auto_loop_and_the_clis_and_its_default(agent_help):
    runner = agent_help["runner"]
    assert "auto (each instance's scaffold CLI where installed" in runner
    assert "loop (the built-in tool loop)" in runner and "claude_code, kilo, droid" in runner
    assert runner.endswith("default: the instance's protocol_options.runner, else loop")


@pytest.mark.parametrize("name", list(LIMITS))
def test_each_limit_s_help_says_what_it_stops_and_its_default(agent_help, name):
    unit, default = LIMITS[name]
    text = agent_help[name]
    assert "stop at this" not in text
    assert unit in text.split(";")[0], "the help says what the value is"
    assert text.endswith(f"default: the instance's protocol_options.{name.replace('-', '_')}, else {default}"), text
