"""Vibe Checker suites end to end against the stub server: both protocols, subtests, markers, metrics."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_ifbench.benchmarks.vericode import generate as gen
from pytest_ifbench.testing import Reply
from tests._support import stub_args

TASKS = {t["id"]: t for t in map(json.loads, (Path(gen.__file__).parent / "data" / "tasks.jsonl").open())}
BROKEN = "I rewrote it.\n\n```python\nraise SystemExit(3)\n```\n"


def scripted(body):
    """First turn (or single-turn): the task's reference solution. Editing rounds: broken code."""
    messages = body["messages"]
    if any(m["role"] == "assistant" for m in messages):
        return Reply(content=BROKEN)
    query = next(m["content"] for m in messages if m["role"] == "user")
    task = next(t for t in TASKS.values() if t["prompt"][:120] in query)
    return Reply(content=f"Here it is.\n\n```python\n{task['reference_solution']}```\n")


def test_both_protocols_end_to_end(pytester, stub_env):
    stub_env.default = scripted
    directory = pytester.path / "suites" / "vericode"
    assert gen.main(["--tasks", "fn_004", "--max-k", "2", "--out", str(directory), "--no-quick"]) == 0
    # no cache: the multi-turn dialogues open with k0's very request, and on a loaded machine one answered
    # and kept before another was sent is answered from the cache (7 calls, not 8)
    result = pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-full", "-m", "vericode",
                                "--strict-markers", "--ifbench-no-cache")
    assert stub_env.calls == 1 + 1 + 2 + 1 + 3  # k0, k1 single, k1 multi (2 turns), k2 single, k2 multi (3 turns)
    result.stdout.fnmatch_lines([
        "*vericode: instruction following and functionality*",
        "*k=0 (original prompt)*1*0*-*-*100.0%*-*",
        "*single_turn k=1*1*0*%*%*100.0%*0.0%*",
        "*single_turn k=2*1*0*%*%*100.0%*0.0%*",
        "*multi_turn k=1*1*0*%*%*0.0%*100.0%*",  # the last round's (broken) code is what counts
        "*multi_turn k=2*1*0*%*%*0.0%*100.0%*",
        "*vericode: IF by instruction position*",
        "*single_turn k=2*(1)*(1)*",
        "*vericode: IF by instruction category*",
        "*vericode: IF by instruction*",
    ])
    result.stdout.fnmatch_lines(["*fn_004-k2-multi*[[]functional[]]*"])
    doc = json.loads((pytester.path / "ifbench-results.json").read_text())
    by_id = {r["instance"]: r for r in doc["instances"]}
    assert len(by_id) == 5
    multi = by_id["fn_004-k2-multi"]
    assert [t["index"] for t in multi["turns"]] == [1, 2, 3]
    last = multi["turns"][-1]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert last[1]["content"] == by_id["fn_004-k0"]["turns"][0]["messages"][-1]["content"]
    instructions = [c for c in multi["checks"] if c["metadata"].get("role") == "instruction"]
    assert [c["metadata"]["position"] for c in instructions] == [1, 2]
    assert all(c["turn_ran"] == 3 for c in multi["checks"])
    functional = next(c for c in multi["checks"] if c["id"] == "functional")
    assert not functional["passed"] and functional["metadata"] == {"role": "functional"}
    single = by_id["fn_004-k2-single"]
    assert "Additional instructions:\n1. " in single["turns"][0]["messages"][-1]["content"]
    assert next(c for c in single["checks"] if c["id"] == "functional")["passed"]


def test_markers_select_protocol_and_k(pytester, stub_env):
    directory = pytester.path / "suites" / "vericode"
    gen.main(["--tasks", "fn_004", "--max-k", "2", "--out", str(directory), "--no-quick"])
    plain = pytester.runpytest("suites", *stub_args(stub_env), "--collect-only", "-q")
    plain.stdout.fnmatch_lines(["*5 deselected*"])  # marked full: not in a plain run
    selected = pytester.runpytest(
        "suites", *stub_args(stub_env), "--ifbench-full", "--strict-markers", "--collect-only", "-q",
        "-m", "vericode and k_2 and protocol_single_turn and category_functional and category_doc and livevibe")
    selected.stdout.fnmatch_lines(["suites/vericode/livevibe.yaml::fn_004-k2-single", "*1/5 tests collected*"])
    assert stub_env.calls == 0
