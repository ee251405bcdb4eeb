"""What the rubric judge is shown of the agent's files (``benchmarks/agentif/materials.py``) whatever the agent
left: a tree deeper than the walk goes is left out with a note (it made the rubric raise ``RecursionError``,
and the instance was an error with its record lost), and a name or a text that is not valid UTF-8 reaches the
judge encodable (it made the judge call raise ``UnicodeEncodeError``)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench._types import CheckSpec
from pytest_ifbench.agents.workspace import Workspace
from pytest_ifbench.benchmarks.agentif import materials
from pytest_ifbench.benchmarks.agentif.judge import JudgeInput, build_messages
from pytest_ifbench.models.cache import cache_key
from pytest_ifbench.sandbox import sandbox_problem
from pytest_ifbench.testing import Reply
from tests._support import deep_directory, stub_args, write_suite

MAX_DEPTH = materials.MAX_DEPTH


class _Workspace:
    """The part of :class:`Workspace` the materials use: its files, read as the real one reads them."""

    read_bytes = Workspace.read_bytes

    def __init__(self, path: Path) -> None:
        self.path = path


@pytest.fixture
def deep_workspace(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "report.csv").write_text("plan,monthly\nB,20\n")
    for top, depth in (("e", 1200), ("f", 10)):
        (workspace / top).mkdir()
        (deep_directory(workspace / top, depth) / "leaf.txt").write_text(f"{depth}\n")
    yield workspace
    subprocess.run(["rm", "-rf", "--", str(workspace)], check=True)


def test_a_tree_deeper_than_the_walk_goes_is_left_out_with_a_note(deep_workspace):
    """``mkdir -p d/d/...`` 1,200 deep: ``os.walk`` recursed and raised ``RecursionError``, the rubric crashed
    and the record lost its turns and checks. What lies past the cap is left out, and said."""
    names, notes = materials.produced(_Workspace(deep_workspace), None)
    assert names == ["f/" + "d/" * 10 + "leaf.txt", "report.csv"], names
    assert len(notes) == 1 and notes[0].startswith(f"left out, over {MAX_DEPTH} directories deep: e/d/d/"), notes
    shown, notes = materials.produced_materials(_Workspace(deep_workspace), None, render=False)
    assert [m.name for m in shown] == names and "over 256 directories deep" in notes[0]
    assert materials.workspace_files(deep_workspace) == names  # the attachments' walk too


def test_names_and_texts_that_are_not_utf8_reach_the_judge_encodable(tmp_path):
    """``echo data > $'report\\xff.csv'``: the name became a lone surrogate, and building the judge call's cache
    key raised ``UnicodeEncodeError``. Names are shown encodable and printable (no line break a name could open
    a prompt section with), and so are texts and notes."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    odd = os.fsdecode(b"report\xff.csv")
    (workspace / odd).write_bytes(b"plan\xfe,monthly\nB,20\n")
    (workspace / "two\nlines.txt").write_text("hello\n")
    (workspace / os.fsdecode(b"bad\xffdir")).mkdir()
    (workspace / os.fsdecode(b"bad\xffdir") / "x.txt").write_text("x\n")
    ws = _Workspace(workspace)
    produced, notes = materials.produced_materials(ws, None, render=False)
    names = sorted(m.name for m in produced)
    assert names == ["bad\ufffddir/x.txt", "report\ufffd.csv", "two\\nlines.txt"], names
    assert all(m.name.isprintable() and m.text.encode() for m in produced)
    assert "plan\ufffd\tmonthly" in next(m.text for m in produced if m.name.startswith("report"))
    attachments = materials.from_paths(materials.attachment_paths(_Instance(workspace)), render=False)
    assert sorted(m.name for m in attachments) == names

    data = JudgeInput(question="Write report.csv.", answer="done", attachments=attachments, produced=produced,
                      reference="", reference_files=[], notes=notes)
    checks = [CheckSpec(id="c1", verifier="agentif.rubric", params={"criterion": "Wrote report.csv."})]
    messages = build_messages(data, checks, vision=False)
    assert cache_key(model="openai/judge", messages=messages, params={})


def test_a_note_naming_an_unreadable_file_is_encodable(tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / os.fsdecode(b"big\xff.bin")).write_bytes(b"x" * 64)
    monkeypatch.setattr(materials, "MAX_FILES", 0)
    _, notes = materials.produced(_Workspace(workspace), None)
    assert notes == ["1 more produced files not shown: big\ufffd.bin"], notes
    json.dumps(notes, ensure_ascii=False).encode()


class _Instance:
    def __init__(self, environment: Path) -> None:
        self.environment = environment


SUITE = """
ifbench: 1
benchmark: agentif
defaults:
  protocol: agentif
  protocol_options: {max_steps: 4, command_timeout: 60}
instances:
  - id: odd
    category: open_workflow
    environment: env
    prompt: Write report.csv.
    metadata: {domain: work, reference_answer: a report}
    checks:
      - {id: c1, verifier: agentif.rubric, kind: bonus, points: 1, category: factuality,
         metadata: {aspect: content}, params: {criterion: Wrote report.csv.}}
"""


def _call(name: str, arguments: dict[str, Any], n: int) -> dict[str, Any]:
    return {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


@pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")
def test_a_run_that_left_a_deep_tree_and_an_odd_name_is_judged_not_an_error(pytester, stub_env):
    """The two runs of the audit, end to end: the instance fails with the judge's verdict, its record whole."""
    (pytester.path / "suites" / "env").mkdir(parents=True)
    (pytester.path / "suites" / "env" / "README.md").write_text("a workspace\n")
    (pytester.path / "suites" / "conftest.py").write_text('collect_ignore = ["env"]\n')
    write_suite(pytester.path, "suites/agentif.yaml", SUITE)
    command = ("mkdir -p $(python3 -c \"print('/'.join(['d'] * 1200))\") && echo data > $'report\\xff.csv' "
               "&& echo ok")
    steps = [[_call("bash", {"command": command}, 1)], [_call("finish", {"answer": "done"}, 2)]]

    def answer(body: dict[str, Any]) -> Reply:
        if body.get("response_format"):
            return Reply(content=json.dumps({"criteria_results": [
                {"id": "c1", "satisfied": False, "reasoning": "no report.csv"}]}))
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return Reply(tool_calls=steps[min(done, len(steps) - 1)])

    stub_env.default = answer
    pytester.runpytest("suites", *stub_args(stub_env, "--judge-model=openai/stub"), "--ifbench-no-cache")
    (record,) = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
    assert record["status"] == "failed", record.get("error")
    assert [c["passed"] for c in record["checks"]] == [False] and record["turns"]
    judge_call = next(r for r in stub_env.requests if r.body and r.body.get("response_format"))
    prompt = judge_call.body["messages"][1]["content"]
    assert "--- file: report\ufffd.csv ---\n" in prompt
    assert f"[left out, over {MAX_DEPTH} directories deep: d/d/d/" in prompt
