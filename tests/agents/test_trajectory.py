"""The trajectory data model: JSON round trips, the authors' form, queries, and the builder's partial files."""

from __future__ import annotations

import json

import pytest

from pytest_ifbench.agents.normalize import load_normalized
from pytest_ifbench.agents.trajectory import (
    Message,
    Trajectory,
    TrajectoryBuilder,
    messages_from_json,
    normalize_block,
    openai_call,
    openai_tool,
)

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "additionalProperties": False}


def test_tools_convert_to_openai_form_keeping_the_schema():
    anthropic = {"name": "Read", "description": "read", "input_schema": SCHEMA}
    openai = {"type": "function", "function": {"name": "Read", "description": "read", "parameters": SCHEMA}}
    assert openai_tool(anthropic) == openai_tool(openai) == openai
    assert openai_tool({"name": "Noop"})["function"]["parameters"] == {"type": "object", "properties": {}}
    with pytest.raises(ValueError, match="a tool needs a name"):
        openai_tool({"description": "nameless"})


def test_calls_convert_to_openai_form():
    expected = {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": '{"path": "é"}'}}
    assert openai_call({"type": "tool_use", "id": "c1", "name": "Read", "input": {"path": "é"}}) == expected
    assert openai_call({"name": "Read", "arguments": {"path": "é"}}, "c1") == expected
    assert openai_call(expected, "other") == expected


def test_blocks_drop_transport_keys_only():
    assert normalize_block({"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}, "citations": []}) \
        == {"type": "text", "text": "hi", "citations": []}
    assert normalize_block({"type": "redacted_thinking", "data": "opaque"}) == {
        "type": "thinking", "thinking": "", "redacted": True}
    assert normalize_block({"type": "tool_result", "tool_use_id": "c", "content": ["x"]}) == {
        "type": "tool_result", "tool_use_id": "c", "content": [{"type": "text", "text": "x"}], "is_error": False}
    with pytest.raises(ValueError, match="content block"):
        normalize_block(3)


def test_the_authors_messages_load_with_synthesised_call_ids():
    theirs = [
        {"role": "system", "content": [{"type": "text", "text": "sys A"}, {"type": "text", "text": "sys B"}]},
        {"role": "user", "content": "do it"},
        {"role": "assistant", "content": "Reading.", "reasoning_content": "think", "generation": True,
         "tool_calls": [{"name": "Read", "arguments": {"path": "a"}}, {"name": "Grep", "arguments": {"q": "b"}}]},
        {"role": "tool", "tool_name": "Grep", "content": "grep out"},
        {"role": "tool", "tool_name": "Read", "content": [{"type": "text", "text": "file a"}]},
        {"role": "assistant", "content": "", "reasoning_content": "", "generation": False},
    ]
    system, _, first, grep, read, last = messages_from_json(theirs)
    assert system.content == "sys A\n\nsys B" and len(system.blocks) == 2
    assert [c["id"] for c in first.tool_calls] == ["call_1_0", "call_1_1"]
    assert [b["type"] for b in first.blocks] == ["thinking", "text", "tool_use", "tool_use"]
    assert (grep.tool_call_id, read.tool_call_id, read.content) == ("call_1_1", "call_1_0", "file a")
    assert (last.turn, last.generation, last.blocks) == (2, False, ())
    with pytest.raises(ValueError, match="message 0: role must be one of"):
        messages_from_json([{"content": "no role"}])


def test_calls_seen_only_in_history_are_left_out_unless_asked_for():
    """A reply the relay never saw (``generation`` False: read back from a request's history, which the agent
    can rewrite) makes no call of the run; ``history=True`` lists it, marked."""
    trajectory = Trajectory.from_json({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "generation": False,
         "tool_calls": [{"id": "t1", "name": "Read", "arguments": {"file_path": "NOTES.md"}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "notes"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "t2", "name": "Bash", "arguments": {"c": "ls"}}]},
        {"role": "tool", "tool_call_id": "t2", "content": "a.py"}]})
    (bash,) = trajectory.tool_calls()
    assert (bash.name, bash.index, bash.turn, bash.generated, bash.result.content) == ("Bash", 0, 2, True, "a.py")
    assert trajectory.calls_to("Read") == ()
    read, bash = trajectory.tool_calls(history=True)
    assert (read.name, read.index, read.turn, read.generated, read.result.content) == ("Read", 0, 1, False, "notes")
    assert (bash.index, bash.generated) == (1, True) and len(trajectory.calls_to("Read", history=True)) == 1


def build_run(builder: TrajectoryBuilder) -> list[Trajectory]:
    """A small run; the trajectory read back from the builder's file after every step."""
    seen = []

    def step(result):
        seen.append(load_normalized(builder.path)[0])
        return result

    step(builder.system("Be careful."))
    step(builder.user("fix the bug"))
    step(builder.assistant("Looking.", reasoning="read first",
                           tool_calls=[{"id": "c1", "name": "Read", "arguments": {"path": "a.py"}},
                                       {"name": "Bash", "arguments": "{not json"}]))
    step(builder.tool("c1", "x = 1"))
    step(builder.tool("call_1_1", "syntax error", is_error=True))
    step(builder.assistant("Fixed it."))
    return seen


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_the_builder_leaves_a_readable_partial_trajectory_after_every_step(tmp_path, suffix):
    path = tmp_path / "runs" / f"run{suffix}"
    builder = TrajectoryBuilder(id="run-1", meta={"model": "m"}, path=path,
                                tools=[{"name": "Read", "description": "read", "input_schema": SCHEMA}])
    assert load_normalized(path)[0].messages == ()  # readable before the first step
    seen = build_run(builder)
    assert [len(t.messages) for t in seen] == [1, 2, 3, 4, 5, 6]
    assert seen[-1] == builder.build()
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary file left behind
    if suffix == ".jsonl":
        assert len(path.read_text(encoding="utf-8").splitlines()) == 1


def test_the_builder_records_calls_results_and_turns(tmp_path):
    builder = TrajectoryBuilder(id="run-1", path=tmp_path / "run.jsonl")
    build_run(builder)
    trajectory = builder.build()
    read, bash = trajectory.tool_calls()
    assert (read.id, read.turn, read.arguments, read.result.content) == ("c1", 1, {"path": "a.py"}, "x = 1")
    assert (bash.id, bash.name, bash.call["function"]["arguments"], bash.arguments) == (
        "call_1_1", "Bash", "{not json", {})
    assert (bash.result.tool_name, bash.result.is_error) == ("Bash", True)
    assert [m.turn for m in trajectory.assistant_turns()] == [1, 2]
    assert trajectory.assistant_turns()[0].reasoning_content == "read first"
    assert (trajectory.final_text(), trajectory.user_texts(), trajectory.system_text()) == (
        "Fixed it.", ("fix the bug",), "Be careful.")
    with pytest.raises(ValueError, match="no tool call 'c9' to answer"):
        builder.tool("c9", "?")


def test_a_child_trajectory_is_linked_and_round_trips(tmp_path):
    child = TrajectoryBuilder(id="run-1/1", parent_call_id="c1")
    child.user("look around")
    child.assistant("Nothing here.")
    parent = TrajectoryBuilder(id="run-1")
    parent.user("go")
    parent.assistant(tool_calls=[{"id": "c1", "name": "Task", "arguments": {"prompt": "look around"}}])
    parent.add_child(child.build())
    parent.tool("c1", "Nothing here.")
    trajectory = parent.build()
    assert [(t.id, t.parent, t.parent_call_id) for t in trajectory.walk()] == [
        ("run-1", None, None), ("run-1/1", "run-1", "c1")]
    data = json.loads(json.dumps(trajectory.to_json()))
    assert Trajectory.from_json(data) == trajectory
    assert data["messages"][1] == {
        "role": "assistant", "content": "", "reasoning_content": "", "turn": 1, "generation": True,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "Task",
                                                                   "arguments": '{"prompt": "look around"}'}}],
        "blocks": [{"type": "tool_use", "id": "c1", "name": "Task", "input": {"prompt": "look around"}}]}
    path = tmp_path / "both.json"
    path.write_text(json.dumps([data, data]), encoding="utf-8")
    assert load_normalized(path) == [trajectory, trajectory]


def test_queries_on_an_empty_trajectory():
    empty = Trajectory(id="x")
    assert (empty.assistant_turns(), empty.tool_calls(), empty.final_text(), empty.system_text()) == ((), (), "", "")
    assert Message.from_blocks("user", []).content == ""
