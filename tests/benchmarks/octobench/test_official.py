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
from tests._support import set_field

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


SKILL, CHECK = ("checklist", "Skill.md"), ("checklist", "Skill.md", "checks", 0)
MALFORMED_ROWS = [
    (1, ("scaffold",), 5, "row 2 (skill-pdf-merge-001): scaffold: expected {name, version} or a scaffold name, got 5"),
    (1, ("scaffold", "name"), ["kilo"], "row 2 (skill-pdf-merge-001): scaffold.name: expected a string, got ['kilo']"),
    (1, ("scaffold", "version"), 0.9, "row 2 (skill-pdf-merge-001): scaffold.version: expected a string, got 0.9"),
    (1, ("system_prompt",), ["Reply in English."],
     "row 2 (skill-pdf-merge-001): system_prompt: expected a string, got ['Reply in English.']"),
    (1, ("category",), ["Skill"], "row 2 (skill-pdf-merge-001): category: expected a string, got ['Skill']"),
    (1, ("expected_skill",), {"name": "pdf"},
     "row 2 (skill-pdf-merge-001): expected_skill: expected a string, got {'name': 'pdf'}"),
    (1, ("image",), True, "row 2 (skill-pdf-merge-001): image: expected a string, got True"),
    (1, ("workspace_abs_path",), 5, "row 2 (skill-pdf-merge-001): workspace_abs_path: expected a string, got 5"),
    (1, (*SKILL, "description"), 5,
     "row 2 (skill-pdf-merge-001): checklist.Skill.md.description: expected a string, got 5"),
    (1, (*CHECK, "check_id"), True,
     "row 2 (skill-pdf-merge-001): checklist.Skill.md.checks[0].check_id: expected a string or an integer, got True"),
    (1, (*CHECK, "check_id"), ["x"],
     "row 2 (skill-pdf-merge-001): checklist.Skill.md.checks[0].check_id: expected a string or an integer, got ['x']"),
    (1, (*CHECK, "check_type"), ["compliance"],
     "row 2 (skill-pdf-merge-001): checklist.Skill.md.checks[0].check_type: expected a string, got ['compliance']"),
    (1, (*CHECK, "description"), ...,
     "row 2 (skill-pdf-merge-001): checklist.Skill.md.checks[0].description: expected a string, got None"),
    (1, ("instance_id",), 5, "row 2 (5): instance_id: expected a non-empty string, got 5"),
    (1, ("user_query",), ["Merge them.", 2],
     "row 2 (skill-pdf-merge-001): user_query: expected a list of strings, got ['Merge them.', 2]"),
    (2, ("conflict",), "safety",
     "row 3 (conflict-uq-sp-safety-001): conflict: expected {pair, scenario, sources: {A, B}}, got 'safety'"),
    (2, ("conflict", "sources", "B"), 5,
     "row 3 (conflict-uq-sp-safety-001): conflict.sources.B: expected a non-empty string, got 5"),
]


@pytest.mark.parametrize("row, path, value, said", MALFORMED_ROWS,
                         ids=[".".join(map(str, path)) + ("-removed" if value is ... else f"={value!r}")
                              for _, path, value, _ in MALFORMED_ROWS])
def test_a_malformed_official_row_is_a_collection_error_naming_file_row_and_field(pytester, row, path, value, said):
    """A scaffold (or its name) that is not text crashed the importer (a warning, the file left alone, then
    "not found"); a category, system prompt, version, check id or check type of another type was collected
    silently (as its repr, or dropped), and a conflict that is not a mapping was ignored."""
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    set_field(rows[row], path, value)
    (pytester.path / "octobench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for name in ("benchmark-md-emoji-test-001", "skill-pdf-merge-001", "conflict-uq-sp-safety-001", "5"):
        (pytester.path / "ws" / name).mkdir(parents=True)
    result = pytester.runpytest("octobench.jsonl", "--collect-only", "-q", "--octobench-workspaces=ws")
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, text[-1500:]
    assert f"octobench.jsonl: cannot read the official OctoBench file: {said}" in text, text[-1500:]
    assert "SuiteImportWarning" not in text


@pytest.mark.parametrize("name, second, said", [
    ("octobench.jsonl", "[1]", "row 2: expected a JSON object, got [1]"),
    ("octobench.jsonl", '{"instance_id": oops}', "line 2: not JSON (Expecting value, column 17)"),
    ("octobench.json", None, "row 2: expected a JSON object, got 'x'"),
    # Python refuses a number of over 4,300 digits with a ValueError: the importer crashed ("not found")
    ("octobench.jsonl", '{"instance_id": ' + "9" * 5000 + "}", "line 2: not JSON (Exceeds the limit (4300 digits)"),
], ids=["jsonl-row-not-an-object", "jsonl-line-not-json", "json-list-item-not-an-object", "jsonl-number-too-long"])
def test_a_row_that_is_not_an_object_is_named(pytester, name, second, said):
    """Before, the first was "Extra data: line 2 column 1", the second "line 1 column 17" (the decoder's own line
    of the row), the third named no row."""
    first = DATA.read_text(encoding="utf-8").splitlines()[0]
    text = f"[{first}, \"x\"]" if second is None else f"{first}\n{second}\n"
    (pytester.path / name).write_text(text, encoding="utf-8")
    result = pytester.runpytest(name, "--collect-only", "-q", "--octobench-workspaces=ws")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert f"{name}: cannot read the official OctoBench file: {said}" in out, out[-1500:]
