"""A scaffold is matched to its CLI and its loop tool profile however a suite spells it: ``Claude Code``,
``claude-code`` and ``claude_code`` are one scaffold (as the ``scaffold_claude_code`` marker already says),
under every ``--ifbench-agent-runner``; an unknown scaffold matches nothing and stays as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ifbench._types import Instance
from pytest_ifbench.agents import options as agent_options
from pytest_ifbench.agents.clis import AgentClis
from pytest_ifbench.agents.options import AgentOptions, choose_runner
from pytest_ifbench.agents.profiles import ToolRegistry
from pytest_ifbench.agents.session import AgentSettings, instance_options
from pytest_ifbench.suite.format import marker_name
from tests.agents.test_cli_runners import fake_install

CLIS = AgentClis()
PROFILES = ToolRegistry().profiles()
CLAUDE_CODE = ("Claude Code", "claude-code", "claude_code", "CLAUDE CODE", "ClaudeCode", " claude code ")
SPELLINGS = [*((s, "claude_code") for s in CLAUDE_CODE),
             ("Kilo Code", "kilo"), ("kilo", "kilo"), ("Kilo", "kilo"), ("kilo-dev", "kilo"),
             ("Factory Droid", "droid"), ("factory-droid", "droid"), ("Droid", "droid")]


def scaffold_slug(scaffold, **registries):
    # looked up when called, so the runner-choice tests below run (and fail) against a core without it
    return agent_options.scaffold_slug(scaffold, **registries)


def spelling_key(name):
    return agent_options.spelling_key(name)


def choose(scaffold, flag, *, installed=(), **options):
    return choose_runner(AgentOptions(**options), scaffold=scaffold, flag=flag, clis=CLIS,
                         installed=lambda name: name in installed, profiles=PROFILES)


def test_the_shipped_profiles_and_clis_are_what_this_file_assumes():
    assert {"claude_code", "kilo", "droid", "generic"} <= set(PROFILES)
    assert {"claude_code", "kilo", "droid"} <= set(CLIS.names())


@pytest.mark.parametrize(("spelling", "slug"), SPELLINGS)
def test_every_spelling_folds_to_the_registry_slug(spelling, slug):
    assert scaffold_slug(spelling, clis=CLIS, profiles=PROFILES) == slug
    # The scaffold_<slug> marker folds the same characters: a marker's slug names the same scaffold.
    assert spelling_key(marker_name("", spelling)) == spelling_key(spelling)
    assert scaffold_slug(marker_name("", spelling), clis=CLIS, profiles=PROFILES) == slug


@pytest.mark.parametrize("spelling", CLAUDE_CODE)
def test_loop_runner_gives_the_scaffolds_profile(spelling):
    run = choose(spelling, "loop")
    assert (run.runner, run.tools) == ("loop", "claude_code")
    # A profile the instance asks for still wins.
    assert choose(spelling, "loop", tools="kilo").tools == "kilo"


@pytest.mark.parametrize("spelling", CLAUDE_CODE)
def test_auto_runner_runs_the_installed_cli_else_the_loop_with_its_profile(spelling):
    assert choose(spelling, "auto", installed=("claude_code", "kilo", "droid")).runner == "claude_code"
    fallback = choose(spelling, "auto", installed=("kilo", "droid"))
    assert (fallback.runner, fallback.tools) == ("loop", "claude_code")


@pytest.mark.parametrize("spelling", CLAUDE_CODE)
def test_another_clis_runner_never_runs_a_claude_code_instance(spelling):
    assert choose(spelling, "droid").runner == "claude_code"
    assert choose(spelling, "kilo").runner == "claude_code"


@pytest.mark.parametrize(("spelling", "slug"), [("Kilo Code", "kilo"), ("Factory Droid", "droid")])
def test_other_display_names_run_their_own_cli(spelling, slug):
    assert choose(spelling, "claude_code").runner == slug
    assert choose(spelling, "auto", installed=(slug,)).runner == slug
    assert (choose(spelling, "loop").runner, choose(spelling, "loop").tools) == ("loop", slug)


@pytest.mark.parametrize("scaffold", ["aider", "Some Agent", "", None])
def test_an_unknown_scaffold_is_unchanged_and_matches_nothing(scaffold):
    assert scaffold_slug(scaffold, clis=CLIS, profiles=PROFILES) == scaffold
    assert choose(scaffold, "loop").tools == "generic"
    assert choose(scaffold, "droid").runner == "droid"
    assert choose(scaffold, "auto", installed=("claude_code", "kilo", "droid")).runner == "loop"


def test_a_plugin_cli_with_aliases_is_matched_by_them():
    from dataclasses import replace

    clis = AgentClis()
    clis.add(replace(CLIS.get("kilo"), name="my_agent", aliases=("My Agent Pro",)))
    assert scaffold_slug("my-agent-pro", clis=clis) == "my_agent"
    assert scaffold_slug("My Agent", clis=clis) == "my_agent"
    # An exact name is never folded onto another CLI's alias.
    assert scaffold_slug("kilo", clis=clis) == "kilo"


@pytest.mark.parametrize("spelling", ["Claude Code", "claude-code", "claude_code"])
def test_an_instance_picks_the_installed_cli_through_the_session(spelling, tmp_path, monkeypatch):
    """End to end through :func:`instance_options`: the CLI counts as installed because its package sits in the
    agents directory (faked, never run)."""
    monkeypatch.setenv("IFBENCH_AGENTS_DIR", str(tmp_path))
    instance = Instance(id="i", benchmark="b", suite=Path("s.yaml"), protocol="agent", scaffold=spelling)

    def options(flag):
        return instance_options(instance, AgentSettings(overrides={"runner": flag}))

    assert (options("auto").runner, options("auto").tools) == ("loop", "claude_code")
    assert (options("loop").runner, options("loop").tools) == ("loop", "claude_code")
    assert options("droid").runner == "claude_code"
    fake_install(tmp_path, "claude_code")
    assert options("auto").runner == "claude_code"


def test_the_core_agrees_with_the_benchmark_spellings_it_does_not_own():
    """A benchmark keeps its own table (it may import only the public API); every spelling of it folds in the
    core to the same slug, so an instance imported under either runs the same CLI and profile."""
    from pytest_ifbench.benchmarks.octobench import taxonomy

    for spelling, slug in taxonomy._SCAFFOLD_SPELLINGS.items():
        assert scaffold_slug(spelling, clis=CLIS, profiles=PROFILES) == slug == taxonomy.scaffold(spelling)
    for spelling in ("Claude Code", "Kilo Code", "Factory Droid", "kilo-dev", "claude_code"):
        assert scaffold_slug(spelling, clis=CLIS, profiles=PROFILES) == taxonomy.scaffold(spelling)
