"""Raw proxy logs to trajectories: the authors' samples, then hand-built logs for each rule."""

from __future__ import annotations

import copy
import json

import pytest

from pytest_ifbench.agents.normalize import TrajectoryFileError, load_normalized, load_raw, normalize
from pytest_ifbench.agents.trajectory import Trajectory
from tests._support import shared_sample

RAW = "octobench-raw-trajectory-sample.jsonl"
NORMALIZED = "octobench-normalized-trajectory-sample.jsonl"
READ = {"name": "Read", "description": "Read a file", "input_schema": {
    "type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"],
    "additionalProperties": False}}
TASK = {"name": "Task", "description": "Launch a sub-agent", "input_schema": {
    "type": "object", "properties": {"prompt": {"type": "string"}, "description": {"type": "string"}}}}


def record(t, messages, response, *, session="s1", system="You are the main agent.", tools=(READ, TASK),
           model="claude-test"):
    return {"session_id": session, "biz_id": "", "request_time": t, "request_body": {
        "model": model, "max_tokens": 100, "metadata": {}, "system": [{"type": "text", "text": system}],
        "messages": copy.deepcopy(messages), "tools": list(tools)},
        "response_body": {"content": copy.deepcopy(response)}}


def user(*texts):
    return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}


def text(value):
    return {"type": "text", "text": value}


def use(ident, name="Read", **arguments):
    return {"type": "tool_use", "id": ident, "name": name, "input": arguments}


def result(ident, content, **extra):
    return {"type": "tool_result", "tool_use_id": ident, "content": content, **extra}


def chain(*steps, start=0, **kw):
    """Cumulative records: each step is (user message, response blocks); every request holds all earlier ones."""
    history, out = [], []
    for n, (message, response) in enumerate(steps):
        history.append(message)
        out.append(record(start + 10 * n, history, response, **kw))
        history.append({"role": "assistant", "content": response})
    return out


# --- the authors' samples -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample():
    """(ours from the raw sample, the authors' normalized records)."""
    ours = normalize(load_raw(shared_sample(RAW)))
    return ours, load_normalized(shared_sample(NORMALIZED))


def test_raw_sample_is_one_session_with_the_warmup_as_a_linked_child(sample):
    ours, theirs = sample
    assert len(ours) == 1 and len(theirs) == 2  # theirs: two unlinked records of the same session
    main = ours[0]
    assert main.id == "benchmark-md-emoji-test-001" and main.parent is None
    assert [m.role for m in main.messages] == ["system", "user", "assistant", "tool", "assistant"]
    # 6 records = 3 calls logged twice; the first main call is folded into the second.
    assert main.meta["calls"] == 2 and main.meta["records"] == 4
    (warmup,) = main.children
    assert (warmup.id, warmup.parent, warmup.parent_call_id) == (f"{main.id}/1", main.id, None)
    assert warmup.meta["link"] == "time" and warmup.meta["records"] == 2 and warmup.tools == ()
    # Both conversations have fewer than 3 assistant turns: the authors' default rule would drop them.
    assert len(main.assistant_turns()) == 2 and len(warmup.assistant_turns()) == 1


def test_warmup_matches_theirs_with_the_user_blocks_kept_apart(sample):
    ours, theirs = sample
    warmup, their_warmup = ours[0].children[0], theirs[0]
    assert [m.role for m in warmup.messages] == [m.role for m in their_warmup.messages] == ["system", "user",
                                                                                              "assistant"]
    # Same two system blocks; the second differs only by the run's environment (date, platform).
    assert len(warmup.messages[0].blocks) == len(their_warmup.messages[0].blocks) == 2
    assert warmup.messages[0].blocks[0] == their_warmup.messages[0].blocks[0]
    ours_user, their_user = warmup.messages[1], their_warmup.messages[1]
    # Theirs glues the two text blocks; ours keeps both and joins them with a blank line.
    assert len(ours_user.blocks) == 2 and ours_user.blocks[1]["text"] == "Warmup"
    assert "".join(b["text"] for b in ours_user.blocks) == their_user.content
    assert ours_user.content == ours_user.blocks[0]["text"] + "\n\nWarmup"
    assert their_user.content.endswith("</system-reminder>\nWarmup")
    assert [b["type"] for b in warmup.messages[2].blocks] == ["thinking", "text"]


def test_main_conversation_matches_theirs_where_the_runs_agree(sample):
    """The two samples are different runs of the same task (theirs answered in Chinese, with a newer date in the
    system prompt); the parts both runs share must come out identical."""
    ours, theirs = sample
    main, their_main = ours[0], theirs[1]
    roles = [m.role for m in main.messages]
    assert [m.role for m in their_main.messages][:4] == roles[:4]
    assert main.messages[0].blocks[0]["text"] == their_main.messages[0].blocks[0]["text"]
    reminder = main.messages[1].blocks[0]["text"]
    assert their_main.messages[1].content.startswith(reminder)
    assert main.messages[1].blocks[1]["text"].startswith("I'm a beginner")  # theirs: the same request in Chinese
    (ours_read,), their_read = main.calls_to("Read"), their_main.calls_to("Read")[0]
    assert ours_read.arguments == their_read.arguments == {"file_path": "/app/quick_sort_linked_list.cpp"}
    assert ours_read.result.content == their_read.result.content and ours_read.result.tool_name == "Read"
    # Ours keeps the call's real id and the result names it; theirs has neither (ids get synthesised on load).
    assert ours_read.id == "toolu_016UaenL9fjAGgP9zLSmNkzq" == ours_read.result.tool_call_id
    assert json.loads(shared_sample(NORMALIZED).read_text().splitlines()[1])["messages"][2]["tool_calls"] == [
        {"name": "Read", "arguments": {"file_path": "/app/quick_sort_linked_list.cpp"}}]
    assert their_read.id == "call_1_0" == their_read.result.tool_call_id
    # The last call's response is in: every response keeps its thinking and text.
    assert [[b["type"] for b in m.blocks] for m in main.assistant_turns()] == [["thinking", "text", "tool_use"],
                                                                             ["thinking", "text"]]
    assert main.final_text().startswith("Perfect! I've read the code.")
    assert all(m.generation for m in main.assistant_turns())


def test_tools_keep_the_whole_input_schema(sample):
    ours, theirs = sample
    main, their_main = ours[0], theirs[1]
    assert [t["function"]["name"] for t in main.tools] == [t["function"]["name"] for t in their_main.tools]
    for mine, their in zip(main.tools, their_main.tools):
        assert mine["function"]["description"] == their["function"]["description"]
        params, their_params = mine["function"]["parameters"], their["function"]["parameters"]
        assert {k: params[k] for k in their_params} == their_params
        # The authors keep only properties/required; the schema's other keys are ours only.
        assert set(params) - set(their_params) == {"additionalProperties", "$schema"}
        assert params["additionalProperties"] is False


def test_transport_keys_are_dropped_and_system_text_is_joined(sample):
    ours, theirs = sample
    main = ours[0]
    their_file = json.loads(shared_sample(NORMALIZED).read_text().splitlines()[1])
    assert "cache_control" in their_file["messages"][0]["content"][0]  # theirs carries them along
    assert not any("cache_control" in b for m in theirs[1].messages for b in m.blocks)  # dropped when loaded
    assert not any("cache_control" in b for m in main.messages for b in m.blocks)
    assert main.system_text() == "\n\n".join(b["text"] for b in main.messages[0].blocks)
    assert main.user_texts() == (main.messages[1].content,)


def test_both_samples_round_trip(sample):
    ours, theirs = sample
    for trajectory in [*ours, *theirs]:
        data = json.loads(json.dumps(trajectory.to_json()))
        assert Trajectory.from_json(data) == trajectory


# --- hand-built logs ------------------------------------------------------------------------------------------


def test_duplicates_collapse_by_content_not_position():
    first, second = chain((user("read a.py"), [text("Reading."), use("t1", file_path="a.py")]),
                          (user("more"), [text("Done.")]))
    late_copy = copy.deepcopy(first) | {"request_time": 7}
    (trajectory,) = normalize([second, first, late_copy, copy.deepcopy(second)])
    assert trajectory.meta["calls"] == 2 and trajectory.meta["records"] == 4
    assert [m.role for m in trajectory.messages] == ["system", "user", "assistant", "user", "assistant"]


def test_cumulative_calls_fold_even_when_cache_marks_move_and_history_drops_thinking():
    calls = chain((user("read a.py"), [{"type": "thinking", "thinking": "plan", "signature": "sig"},
                                       text("Reading."), use("t1", file_path="a.py")]),
                  ({"role": "user", "content": [result("t1", "print(1)")]}, [text("It prints 1.")]))
    calls[0]["request_body"]["messages"][0]["content"][0]["cache_control"] = {"type": "ephemeral"}
    later = calls[1]["request_body"]["messages"]
    later[1]["content"] = [b for b in later[1]["content"] if b["type"] != "thinking"]
    later[1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    (trajectory,) = normalize(calls)
    assert trajectory.meta["calls"] == 2 and trajectory.children == ()
    first, last = trajectory.assistant_turns()
    assert first.reasoning_content == "plan" and first.turn == 1 and last.turn == 2
    assert [b["type"] for b in first.blocks] == ["thinking", "text", "tool_use"]
    assert "signature" not in first.blocks[0]
    assert trajectory.final_text() == "It prints 1."


def test_every_block_of_a_reply_is_kept():
    reply = [{"type": "thinking", "thinking": "A"}, text("Plan"), {"type": "thinking", "thinking": "B"}, text("Done"),
             use("t1", file_path="x")]
    (trajectory,) = normalize([record(1, [user("go")], reply)])
    (message,) = trajectory.assistant_turns()
    assert (message.content, message.reasoning_content) == ("Plan\n\nDone", "A\n\nB")
    assert [b["type"] for b in message.blocks] == ["thinking", "text", "thinking", "text", "tool_use"]
    assert message.tool_calls == ({"id": "t1", "type": "function",
                                   "function": {"name": "Read", "arguments": '{"file_path": "x"}'}},)


def test_a_reply_seen_only_in_history_is_marked_not_generated():
    calls = chain((user("one"), [text("first")]), (user("two"), [text("second")]), (user("three"), [text("third")]))
    (trajectory,) = normalize([calls[0], calls[2]])  # the middle call was never logged
    assert [(m.turn, m.content, m.generation) for m in trajectory.assistant_turns()] == [
        (1, "first", True), (2, "second", False), (3, "third", True)]


def test_a_retried_call_adds_no_message_but_its_reply_is_kept_in_meta():
    retry = record(5, [user("go")], [text("attempt one")])
    calls = chain((user("go"), [text("attempt two")]), (user("next"), [text("ok")]), start=10)
    (trajectory,) = normalize([retry, *calls])
    assert [m.content for m in trajectory.assistant_turns()] == ["attempt two", "ok"]
    assert trajectory.meta["abandoned"] == [{"request_time": 5.0, "after_message": 2,
                                             "blocks": [{"type": "text", "text": "attempt one"}]}]
    assert trajectory.meta["calls"] == 3


def test_warmups_with_the_same_message_but_other_system_prompts_are_not_retries():
    warmups = (record(t, [user("Warmup")], [text(f"Ready as {name}.")], system=f"You are {name}.", tools=())
               for t, name in ((1, "Plan"), (2, "Explore")))
    main = chain((user("go"), [text("Going.")]), start=10)
    (root,) = normalize(x for x in (*warmups, *main))  # any iterable
    assert [(c.final_text(), c.meta["link"], "abandoned" in c.meta) for c in root.children] == [
        ("Ready as Plan.", "time", False), ("Ready as Explore.", "time", False)]
    assert root.final_text() == "Going."


def test_tool_results_become_tool_messages_matched_to_their_calls():
    results = {"role": "user", "content": [result("t2", [text("B body")], is_error=True), result("t1", "A body"),
                                           text("<system-reminder>keep going</system-reminder>")]}
    calls = chain((user("read both"), [use("t1", file_path="a"), use("t2", "Grep", pattern="b")]),
                  (results, [text("Both read.")]), tools=(READ, {**READ, "name": "Grep"}))
    (trajectory,) = normalize(calls)
    assert [m.role for m in trajectory.messages] == ["system", "user", "assistant", "tool", "tool", "user", "assistant"]
    grep, read = trajectory.messages[3:5]
    assert (grep.tool_call_id, grep.tool_name, grep.content, grep.is_error) == ("t2", "Grep", "B body", True)
    assert (read.tool_call_id, read.tool_name, read.content, read.is_error) == ("t1", "Read", "A body", False)
    assert trajectory.user_texts() == ("read both", "<system-reminder>keep going</system-reminder>")
    calls_made = trajectory.tool_calls()
    assert [(c.index, c.turn, c.name, c.result) for c in calls_made] == [(0, 1, "Read", read), (1, 1, "Grep", grep)]
    assert trajectory.calls_to("Grep")[0].arguments == {"pattern": "b"}


def test_an_unanswered_call_has_no_result():
    (trajectory,) = normalize([record(1, [user("go")], [use("t1", file_path="a")])])
    (call,) = trajectory.tool_calls()
    assert call.result is None and trajectory.final_text() == ""


def test_sub_agents_become_children_linked_to_the_spawning_call():
    prompt_a, prompt_b = "Find every caller of parse() and list the files.", "Summarise the README in two lines."
    spawn = [text("Delegating."), use("task_a", "Task", description="callers", prompt=prompt_a),
             use("task_b", "Task", description="readme", prompt=prompt_b)]
    answers = {"role": "user", "content": [result("task_a", [text("parse() is called in a.py and b.py.")]),
                                           result("task_b", [text("The README explains setup. It is short.")])]}
    main = chain((user("audit the repo"), spawn), (answers, [text("All done.")]), start=100)
    sub = {"system": "You are a sub-agent.", "tools": (READ,)}
    # B starts first; A works for three turns (more than the main thread's two).
    sub_b = chain((user(prompt_b), [text("The README explains setup. It is short.")]), start=112, **sub)
    sub_a = chain((user("<system-reminder>ctx</system-reminder>", prompt_a), [use("r1", file_path="a.py")]),
                  ({"role": "user", "content": [result("r1", "parse()")]}, [use("r2", file_path="b.py")]),
                  ({"role": "user", "content": [result("r2", "parse()")]},
                   [text("parse() is called in a.py and b.py.")]), start=115, **sub)
    warmup = record(50, [user("<system-reminder>ctx</system-reminder>", "Warmup")], [text("Ready.")],
                    system="You are a planner.", tools=())
    side = record(101, [user("Title for: audit the repo")], [text("Repo audit")], model="claude-haiku", tools=())
    (root,) = normalize([*main, *sub_a, *sub_b, warmup, side])
    assert root.id == "s1" and root.final_text() == "All done."
    links = [(c.id, c.parent, c.parent_call_id, c.meta["link"], c.final_text()) for c in root.children]
    assert links == [("s1/1", "s1", None, "time", "Ready."), ("s1/2", "s1", None, "time", "Repo audit"),
                     ("s1/3", "s1", "task_b", "tool_call", "The README explains setup. It is short."),
                     ("s1/4", "s1", "task_a", "tool_call", "parse() is called in a.py and b.py.")]
    assert len(root.children[3].assistant_turns()) == 3 and root.children[3].system_text() == "You are a sub-agent."
    assert [t.id for t in root.walk()] == ["s1", "s1/1", "s1/2", "s1/3", "s1/4"]
    assert Trajectory.from_json(json.loads(json.dumps(root.to_json()))) == root


def test_a_sub_agent_is_linked_by_its_result_when_the_prompt_was_rewritten():
    final = "Found three TODO comments, all in src/core.py."
    main = chain((user("check todos"), [use("task_1", "Task", prompt="todos?")]),
                 ({"role": "user", "content": [result("task_1", f"{final}\nagentId: 42")]}, [text("ok")]))
    sub = record(5, [user("You are asked: look for TODO comments")], [text(final)], system="sub")
    (root,) = normalize([*main, sub])
    assert [(c.parent_call_id, c.meta["link"]) for c in root.children] == [("task_1", "tool_call")]


def test_a_short_conversation_is_kept_and_sessions_stay_apart():
    records = [record(1, [user("hi")], [text("hello")], session="b"), record(2, [user("yo")], [text("hey")])]
    trajectories = normalize(records)
    assert [(t.id, len(t.assistant_turns()), t.final_text()) for t in trajectories] == [("b", 1, "hello"),
                                                                                      ("s1", 1, "hey")]


def test_a_changed_system_prompt_is_inserted_where_it_took_effect():
    calls = chain((user("plan it"), [text("Plan: one step.")]), (user("now do it"), [text("Done.")]))
    calls[1]["request_body"]["system"] = [text("You are in code mode.")]
    (trajectory,) = normalize(calls)
    assert [m.role for m in trajectory.messages] == ["system", "user", "assistant", "user", "system", "assistant"]
    assert trajectory.system_text() == "You are the main agent.\n\nYou are in code mode."


def test_bodies_may_be_json_text_and_content_a_string():
    raw = record(1, [{"role": "user", "content": "hi"}], [text("hello")])
    raw["request_body"] = json.dumps(raw["request_body"] | {"system": "Be brief."})
    raw["response_body"] = json.dumps(raw["response_body"])
    (trajectory,) = normalize([raw])
    assert [(m.role, m.content) for m in trajectory.messages] == [("system", "Be brief."), ("user", "hi"),
                                                                 ("assistant", "hello")]


def test_a_malformed_record_names_its_position():
    with pytest.raises(ValueError, match=r"record 1: request_body needs a \"messages\" list"):
        normalize([record(1, [user("hi")], []), {"request_body": {}}])


# --- files -----------------------------------------------------------------------------------------------------


def write_lines(path, *lines):
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_load_raw_reads_a_log_with_a_line_separator_inside_a_string(tmp_path):
    rec = record(1, [user("a\u2028b")], [text("ok")])
    path = write_lines(tmp_path / "raw.jsonl", json.dumps(rec, ensure_ascii=False).encode(), b"")
    (trajectory,) = normalize(load_raw(path))
    assert trajectory.user_texts() == ("a\u2028b",)


@pytest.mark.parametrize(("bad", "reason"), [
    (b'{"request_body": ', "not JSON"),
    (b"[1, 2]", "expected one JSON object per model call"),
    (b'{"request_body": {"messages": "hi"}}', 'request_body needs a "messages" list'),
    (b'{"request_body": "{oops"}', "request_body is text but not JSON"),
    (b'{"request_body": {"messages": []}, "request_time": "soon"}', "neither a number nor an ISO time"),
    (b'{"request_body": {"messages": [\xff]}}', "not UTF-8"),
])
def test_a_bad_raw_line_names_file_and_line(tmp_path, bad, reason):
    good = json.dumps(record(1, [user("hi")], [text("ok")])).encode()
    path = write_lines(tmp_path / "raw.jsonl", good, b"", bad, good)
    with pytest.raises(TrajectoryFileError) as info:
        load_raw(path)
    assert str(info.value).startswith(f"{path}:3: ") and reason in str(info.value)


def test_a_bad_normalized_line_names_file_and_line(tmp_path):
    path = write_lines(tmp_path / "norm.jsonl", b'{"meta": {}, "tools": [], "messages": []}',
                       b'{"messages": [{"role": "robot", "content": "x"}]}')
    with pytest.raises(TrajectoryFileError, match=r"norm.jsonl:2: message 0: role must be one of"):
        load_normalized(path)
    with pytest.raises(TrajectoryFileError, match="cannot read"):
        load_raw(tmp_path / "missing.jsonl")
