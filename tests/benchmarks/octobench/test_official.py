"""OctoBench's official rows, read unchanged: instances, checks, markers, scaffolds, the offline message,
``--octobench-workspaces``, and ``ifbench generate octobench import``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pytest_ifbench._composition import build_registry, command_plugin_manager
from pytest_ifbench.benchmarks.octobench import official, taxonomy
from pytest_ifbench.benchmarks.octobench.generate import main as generate
from pytest_ifbench.suite.format import parse_suite

DATA = Path(__file__).parent / "data" / "official-sample.jsonl"


def suite(settings: official.Settings | None = None) -> dict:
    return official.official_suite(official.load_rows(DATA), settings or official.Settings(recorded=True))


def test_rows_import_unchanged():
    data = suite()
    first, skill, conflict = data["instances"]
    assert first["id"] == "benchmark-md-emoji-test-001"
    assert first["turns"] == [{"user": json.loads(DATA.read_text().splitlines()[0])["user_query"][0]}]
    assert "system" not in first  # an empty system_prompt sends none
    assert first["category"] == "agents_md" and first["scaffold"] == "claude_code"
    # The version the authors ran (run where installed, reported beside the one that ran); a row's
    # system prompt replaces the scaffold's own, as the authors ran it.
    assert first["protocol_options"] == {"runner": "claude_code", "tools": "claude_code", "runner_version": "2.0.14"}
    assert skill["protocol_options"] == {"runner": "kilo", "tools": "kilo", "runner_version": "0.9.0",
                                         "system_prompt": "replace"}
    assert first["metadata"]["official"]["image"].startswith("registry.example.invalid/")
    assert len(first["checks"]) == 32
    check = first["checks"][0]
    assert check["id"] == "SP_role_alignment" and check["verifier"] == "ifbench.judge"
    assert check["category"] == "system_prompt"
    assert check["metadata"] == {"check_type": "compliance", "source": "SP"}
    assert check["params"]["criterion"].startswith("检查 assistant 的行为")
    assert {c["category"] for c in first["checks"]} == {"system_prompt", "system_reminder", "user_query",
                                                        "agents_md", "tool_schema"}
    assert skill["scaffold"] == "kilo" and skill["category"] == "skill_md" and len(skill["turns"]) == 2
    assert skill["metadata"]["official"]["expected_skill"] == "pdf"
    assert skill["system"] == "You are a coding agent. Reply in English."
    assert conflict["markers"] == ["conflict"] and conflict["scaffold"] == "droid"
    assert conflict["metadata"]["conflict"]["pair"] == "UQ vs SP"
    sides = [c for c in conflict["checks"] if c["verifier"] == "octobench.conflict_attribution"]
    assert [c["params"]["side"] for c in sides] == ["A", "B"] and not any(c["scored"] for c in sides)


def test_suite_validates_with_markers(tmp_path):
    registry = build_registry(command_plugin_manager().hook)
    parsed = parse_suite(DATA, suite(), registry, protocols={"agent", "octobench_reflect"})
    first, skill, conflict = parsed.instances
    assert first.benchmark == "octobench" and first.protocol == "agent"
    assert conflict.markers == ("conflict",)
    assert [c.category for c in skill.checks][:2] == ["skill_md", "skill_md"]


@pytest.mark.parametrize(("spelling", "slug"), [
    ("SP", "system_prompt"), ("System Prompt", "system_prompt"), ("System reminder", "system_reminder"),
    ("User query", "user_query"), ("User Query", "user_query"), ("Agents.md", "agents_md"),
    ("AGENTS.md", "agents_md"), ("Claude.md", "agents_md"), ("Skill", "skill_md"), ("Skill.md", "skill_md"),
    ("memory", "memory"), ("Tool schema", "tool_schema"),
])
def test_category_spellings(spelling, slug):
    assert taxonomy.source(spelling) == slug


@pytest.mark.parametrize(("name", "slug"), [("claudecode", "claude_code"), ("kilo-dev", "kilo"),
                                            ("droid", "droid"), (None, "claude_code"), ("cursor", None)])
def test_scaffold_names(name, slug):
    assert taxonomy.scaffold(name) == slug


def test_bad_rows_name_row_and_field():
    row = json.loads(DATA.read_text().splitlines()[1])
    with pytest.raises(official.OfficialFormatError, match=r"row 1 \(skill-pdf-merge-001\): scaffold.name"):
        official.instance({**row, "scaffold": {"name": "cursor"}}, 0, official.Settings())
    with pytest.raises(official.OfficialFormatError, match="user_query"):
        official.instance({**row, "user_query": [1]}, 0, official.Settings())
    with pytest.raises(official.OfficialFormatError, match="conflict.scenario"):
        official.instance({**row, "conflict": {"pair": "UQ vs SP", "scenario": "tone", "sources": {}}}, 0,
                          official.Settings())


def test_json_list_is_read_too(tmp_path):
    rows = official.load_rows(DATA)
    listed = tmp_path / "octobench.json"
    listed.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    assert official.load_rows(listed) == rows


def test_offline_file_says_what_to_do(pytester):
    path = pytester.path / "octobench.jsonl"
    path.write_text(DATA.read_text(encoding="utf-8"), encoding="utf-8")
    result = pytester.runpytest(str(path), "--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*official OctoBench environments are Docker images*--octobench-workspaces DIR*"])
    for name in ("benchmark-md-emoji-test-001", "skill-pdf-merge-001", "conflict-uq-sp-safety-001"):
        (pytester.path / "ws" / name).mkdir(parents=True)
    result = pytester.runpytest(str(path), "--collect-only", "-q", "-p", "no:cacheprovider",
                                "--octobench-workspaces=ws", "-m", "scaffold_droid and conflict")
    result.stdout.fnmatch_lines(["*octobench.jsonl::conflict-uq-sp-safety-001*", "*1/3 tests collected*"])


def test_workspaces_and_reflect_settings():
    data = suite(official.Settings(workspaces=Path("/ws"), reflect=True, compat="reference"))
    official.apply_settings(data, official.Settings(workspaces=Path("/ws"), reflect=True, compat="reference"))
    first = data["instances"][0]
    assert first["environment"] == "/ws/benchmark-md-emoji-test-001"
    assert first["protocol"] == "octobench_reflect" and first["metadata"]["compat"] == "reference"
    with pytest.raises(official.OfficialFormatError, match="Docker images"):
        official.apply_settings(suite(), official.Settings())


def test_generate_import(tmp_path, capsys):
    out = tmp_path / "suite.yaml"
    assert generate(["import", str(DATA), "-o", str(out)]) == 0
    data = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert data["benchmark"] == "octobench" and len(data["instances"]) == 3
    assert data["instances"] == suite()["instances"]
    assert "wrote 3 instances" in capsys.readouterr().out


def test_suite_yaml_compat_option(tmp_path):
    from pytest_ifbench.suite.format import SuiteError

    path = tmp_path / "octo.yaml"
    text = ("ifbench: 1\nbenchmark: octobench\noptions: {compat: %s}\ninstances:\n  - id: a\n    prompt: hi\n"
            "    checks: [{id: c, verifier: ifbench.judge, params: {criterion: ok}}]\n")
    path.write_text(text % "reference", encoding="utf-8")
    assert official.suite_data(path, official.Settings())["instances"][0]["metadata"]["compat"] == "reference"
    assert official.suite_data(path, official.Settings(compat="paper"))["instances"][0]["metadata"]["compat"] == "paper"
    path.write_text(text % "strict", encoding="utf-8")
    with pytest.raises(SuiteError, match="options.compat: expected paper or reference"):
        official.suite_data(path, official.Settings())
    other = tmp_path / "other.yaml"
    other.write_text(text.replace("octobench", "demo") % "reference", encoding="utf-8")
    assert official.suite_data(other, official.Settings()) is None
