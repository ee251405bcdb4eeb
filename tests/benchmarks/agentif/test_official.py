"""The importer on a fixture copy of the official layout (``data.jsonl`` + ``Attachments/``), and the YAML
form's validation and markers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ifbench._composition import default_registry
from pytest_ifbench.benchmarks.agentif import official
from pytest_ifbench.suite.format import SuiteError, parse_suite
from tests._support import set_field, write_suite

ROWS = [
    {"question_id": "taskif_1", "title": "Cheapest iPhone upgrade",
     "description": "Using plans.csv and photo.png, find the cheapest plan and write report.md.",
     "attachment_filenames": ["plans.csv", "photo.png"],
     "score_criteria": [{"content": "Names Plan B as the cheapest.", "score": 2},
                        {"content": "Writes report.md.", "score": 1},
                        {"content": "Uses a price that is not in plans.csv.", "score": -1}],
     "reference_answer_description": "Plan B (20/month).",
     "reference_answer_attachment_filenames": ["report_ref.md"]},
    {"question_id": "taskif_2", "title": "Haiku", "description": "Write a haiku about rain.",
     "attachment_filenames": [], "score_criteria": [{"content": "Three lines.", "score": 1},
                                                    {"content": "Mentions rain.", "score": 1}],
     "reference_answer_description": "", "reference_answer_attachment_filenames": []},
]


def official_layout(root: Path, rows=ROWS) -> Path:
    """``root/data.jsonl`` with ``Attachments/Questions`` and ``Attachments/Reference_answer`` beside it."""
    questions = root / "Attachments" / "Questions"
    questions.mkdir(parents=True)
    (questions / "plans.csv").write_text("plan,monthly\nA,30\nB,20\n")
    from PIL import Image

    Image.new("RGB", (40, 30), "green").save(questions / "photo.png")
    (questions / "unrelated.txt").write_text("must not reach the workspace")
    (root / "Attachments" / "Reference_answer").mkdir()
    (root / "Attachments" / "Reference_answer" / "report_ref.md").write_text("Plan B")
    data = root / "data.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return data


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IFBENCH_AGENTIF_CACHE", str(tmp_path / "cache"))


def test_official_rows_become_agentif_instances(tmp_path):
    data = official_layout(tmp_path / "release")
    suite = parse_suite(data, official.suite_data(data), default_registry(), protocols={"agentif"},
                        root=data.parent)
    first, second = suite.instances
    assert suite.benchmark == "agentif" and first.id == "taskif_1" and first.protocol == "agentif"
    assert first.prompt == ROWS[0]["description"] and first.metadata["title"] == "Cheapest iPhone upgrade"
    assert [(c.id, c.kind, c.points, c.params["criterion"]) for c in first.checks] == [
        ("c1", "bonus", 2.0, "Names Plan B as the cheapest."), ("c2", "bonus", 1.0, "Writes report.md."),
        ("c3", "penalty", 1.0, "Uses a price that is not in plans.csv.")]
    assert all(c.verifier == "agentif.rubric" for c in first.checks)
    assert sorted(p.name for p in first.environment.iterdir()) == ["photo.png", "plans.csv"]  # exactly these
    assert first.environment.is_relative_to(tmp_path / "cache")
    assert first.metadata["reference_answer"] == "Plan B (20/month)."
    assert first.metadata["reference_attachments"] == ["Attachments/Reference_answer/report_ref.md"]
    assert "with_attachments" in first.markers and "with_attachments" not in second.markers
    assert second.environment is None


def test_the_environment_is_built_once_per_content(tmp_path):
    data = official_layout(tmp_path / "release")
    one = official.suite_data(data)["instances"][0]["environment"]
    assert official.suite_data(data)["instances"][0]["environment"] == one
    (data.parent / "Attachments" / "Questions" / "plans.csv").write_text("plan,monthly\nA,10\n")
    assert official.suite_data(data)["instances"][0]["environment"] != one


def test_only_the_official_shape_is_recognised(tmp_path):
    (tmp_path / "other.jsonl").write_text('{"prompt": "x"}\n')
    assert official.suite_data(tmp_path / "other.jsonl") is None
    assert official.suite_data(tmp_path / "missing.jsonl") is None


def test_bad_rows_name_the_task_and_field(tmp_path):
    rows = [dict(ROWS[0], attachment_filenames=["nope.pdf"])]
    data = official_layout(tmp_path / "a", rows)
    with pytest.raises(SuiteError, match=r"instance 'taskif_1': attachment_filenames: missing under .*nope.pdf"):
        official.suite_data(data)
    rows = [dict(ROWS[1], score_criteria=[{"content": "Bad.", "score": -2}])]
    with pytest.raises(SuiteError, match="no positive item"):
        official.suite_data(official_layout(tmp_path / "b", rows))


YAML = """
ifbench: 1
benchmark: agentif
defaults: {protocol: agentif}
instances:
  - id: plan
    category: latent_inference
    environment: environments/plan
    prompt: Read notes.txt and plan the day.
    metadata: {domain: life, reference_answer: "A plan.", needs_web: true}
    checks:
      - {id: c1, verifier: agentif.rubric, kind: bonus, points: 2, category: logic, metadata: {aspect: content},
         params: {criterion: Has a plan.}}
      - {id: c2, verifier: agentif.rubric, kind: penalty, points: 1, category: negative_constraint,
         metadata: {aspect: form}, params: {criterion: Uses emoji.}}
"""


def test_yaml_form_markers_and_metadata(tmp_path):
    (tmp_path / "environments" / "plan").mkdir(parents=True)
    (tmp_path / "environments" / "plan" / "notes.txt").write_text("wake at 7")
    path = write_suite(tmp_path, "agentif.yaml", YAML)
    data = official.suite_data(path)
    suite = parse_suite(path, data, default_registry(), protocols={"agentif"})
    (task,) = suite.instances
    assert {"domain_life", "with_attachments", "needs_web"} <= set(task.markers) and task.category == "latent_inference"
    assert task.metadata["attachments"] == ["notes.txt"]
    assert [c.category for c in task.checks] == ["logic", "negative_constraint"]
    assert task.checks[0].metadata == {"aspect": "content"}


@pytest.mark.parametrize("old, new, message", [
    ("category: latent_inference", "category: other", "instance 'plan': category: expected one of"),
    ("domain: life", "domain: home", "metadata.domain: expected one of work, study, life"),
    ("category: logic", "category: style", r"checks\[0\].category: expected one of"),
    ("aspect: form", "aspect: looks", r"checks\[1\].metadata.aspect"),
    ("kind: bonus, points: 2", "kind: check", r"checks\[0\].kind: expected bonus or penalty"),
    ("defaults: {protocol: agentif}", "defaults: {protocol: agent}", "protocol: AgentIF tasks run with protocol"),
    # a reference file the judge would have been told "cannot be read", after the run was paid for
    ('needs_web: true}', 'needs_web: true, reference_attachments: [reference/plan/answer.md]}',
     r"metadata.reference_attachments\[0\]: expected a file relative to the suite file, got "
     r"'reference/plan/answer.md' \(not found\)"),
    ('needs_web: true}', 'needs_web: true, reference_attachments: reference/plan/answer.md}',
     "metadata.reference_attachments: expected a list of paths relative to the suite file"),
])
def test_yaml_form_errors(tmp_path, old, new, message):
    (tmp_path / "environments" / "plan").mkdir(parents=True)
    path = write_suite(tmp_path, "agentif.yaml", YAML.replace(old, new))
    with pytest.raises(SuiteError, match=message):
        official.suite_data(path)


def test_other_yaml_suites_are_left_to_the_core(tmp_path):
    path = write_suite(tmp_path, "x.yaml", "ifbench: 1\nbenchmark: demo\ninstances: []\n")
    assert official.suite_data(path) is None


MALFORMED_ROWS = [
    (("question_id",), 7, "data.jsonl: line 1: question_id: expected a task id (a non-empty string), got 7"),
    (("question_id",), ..., "data.jsonl: line 1: question_id: expected a task id (a non-empty string), got None"),
    (("score_criteria",), ...,
     "data.jsonl: instance 'taskif_1': score_criteria: expected a non-empty list of {content, score}, got None"),
    (("description",), ["Find it."],
     "data.jsonl: instance 'taskif_1': description: expected the task text (a non-empty string), got ['Find it.']"),
    (("description",), ...,
     "data.jsonl: instance 'taskif_1': description: expected the task text (a non-empty string), got None"),
    (("title",), 5, "data.jsonl: instance 'taskif_1': title: expected a string, got 5"),
    (("reference_answer_description",), ["Plan B"],
     "data.jsonl: instance 'taskif_1': reference_answer_description: expected a string, got ['Plan B']"),
    (("attachment_filenames",), 3,
     "data.jsonl: instance 'taskif_1': attachment_filenames: expected a list of file names, got 3"),
    (("attachment_filenames",), "plans.csv",
     "data.jsonl: instance 'taskif_1': attachment_filenames: expected a list of file names, got 'plans.csv'"),
    (("attachment_filenames", 0), None,
     "data.jsonl: instance 'taskif_1': attachment_filenames[0]: expected a file name in the release's Attachments "
     "folder, got None"),
    # a name leading out of the release would copy that file into the agent's workspace
    (("attachment_filenames", 0), "../../../etc/passwd", "data.jsonl: instance 'taskif_1': attachment_filenames[0]: "
     "expected a file name in the release's Attachments folder, got '../../../etc/passwd'"),
    (("attachment_filenames", 0), "/etc/passwd", "data.jsonl: instance 'taskif_1': attachment_filenames[0]: "
     "expected a file name in the release's Attachments folder, got '/etc/passwd'"),
    (("reference_answer_attachment_filenames",), True,
     "data.jsonl: instance 'taskif_1': reference_answer_attachment_filenames: expected a list of file names, got True"),
    (("reference_answer_attachment_filenames",), "report_ref.md", "data.jsonl: instance 'taskif_1': "
     "reference_answer_attachment_filenames: expected a list of file names, got 'report_ref.md'"),
    (("reference_answer_attachment_filenames", 0), 5,
     "data.jsonl: instance 'taskif_1': reference_answer_attachment_filenames[0]: expected a file name in the "
     "release's Attachments folder, got 5"),
    (("score_criteria", 0, "content"), None, "data.jsonl: instance 'taskif_1': score_criteria[0].content: "
     "expected the criterion text (a non-empty string), got None"),
    (("score_criteria", 0, "content"), ["Names Plan B."], "data.jsonl: instance 'taskif_1': score_criteria[0].content: "
     "expected the criterion text (a non-empty string), got ['Names Plan B.']"),
    (("score_criteria", 0, "score"), "2",
     "data.jsonl: instance 'taskif_1': score_criteria[0].score: expected a number, got '2'"),
    (("score_criteria", 2, "score"), float("nan"),
     "data.jsonl: instance 'taskif_1': score_criteria[2].score: expected a number, got nan"),
]


@pytest.mark.parametrize("path, value, said", MALFORMED_ROWS,
                         ids=[".".join(map(str, path)) + ("-removed" if value is ... else f"={value!r}")
                              for path, value, _ in MALFORMED_ROWS])
def test_a_malformed_official_row_is_a_collection_error_naming_file_task_and_field(pytester, path, value, said):
    """A first row without question_id or score_criteria was not recognised ("not found"); a list of file names
    given as a number crashed the importer (a warning, the file left alone, then "not found"), given as a string
    its letters were the file names; a question id, description, title or criterion of another type was collected
    as its repr (a criterion ``null`` as "None"), and a NaN score as a penalty of NaN points."""
    rows = json.loads(json.dumps(ROWS))
    set_field(rows[0], path, value)
    data = official_layout(pytester.path / "release", rows)
    result = pytester.runpytest(str(data), "--collect-only", "-q")
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, text[-1500:]
    assert said in text and "SuiteImportWarning" not in text, text[-1500:]


def test_a_number_too_long_to_read_is_a_collection_error_naming_the_line(pytester):
    """Python refuses to read a number of over 4,300 digits (a ValueError, not a JSONDecodeError): the importer
    crashed (a warning, the file left alone, then "not found")."""
    data = official_layout(pytester.path / "release")
    with data.open("a") as handle:
        handle.write('{"question_id": "taskif_9", "score": ' + "9" * 5000 + "}\n")
    result = pytester.runpytest(str(data), "--collect-only", "-q")
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, text[-1500:]
    assert "data.jsonl: line 3: not JSON (Exceeds the limit (4300 digits)" in text, text[-1500:]
    assert "SuiteImportWarning" not in text


def test_a_missing_reference_attachment_is_a_collection_error(pytester):
    """The judge was told the file "cannot be read" and decided without it, after the agent's run was paid."""
    data = official_layout(pytester.path / "release")
    (data.parent / "Attachments" / "Reference_answer" / "report_ref.md").unlink()
    result = pytester.runpytest(str(data), "--collect-only", "-q")
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, text[-1500:]
    assert "data.jsonl: instance 'taskif_1': reference_answer_attachment_filenames: missing under " in text, text
    assert "Reference_answer: report_ref.md" in text
