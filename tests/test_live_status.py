"""The live status line: counts what the run did (in one process and under ``-n 2``), draws in place on a
terminal without changing pytest's own output, and prints plain lines otherwise."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable

import pytest

from pytest_ifbench.reports.live_status import add_up, status_line
from pytest_ifbench.sandbox import sandbox_problem
from pytest_ifbench.testing import Reply
from tests._support import stub_args, write_suite
from tests.agents.test_agent_suite import STEPS, call, scripted

SUITE = """
ifbench: 1
benchmark: livestatus
defaults:
  protocol: agent
  protocol_options: {runner: loop, max_steps: 2, max_seconds: 60}
instances:
  - id: write-a
    prompt: Create a.txt.
    checks:
      - {id: wrote, verifier: ifbench.tool_called, params: {tool: write_file}}
  - id: write-b
    prompt: Create b.txt.
    checks:
      - {id: wrote, verifier: ifbench.tool_called, params: {tool: write_file}}
  - id: write-c
    prompt: Create c.txt.
    checks:
      - {id: wrote, verifier: ifbench.tool_called, params: {tool: write_file}}
"""


def endless(body: dict) -> Reply:
    """Always one more write (the run ends at max_steps), each reply taking a little while."""
    return Reply(tool_calls=[{"function": {"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}}],
                 latency=0.4)


def final_line(out: str) -> str:
    lines = [line for line in out.splitlines() if line.startswith("ifbench: ")]
    assert lines, out[-3000:]
    return lines[-1]


def test_the_line_says_what_was_done_and_estimates_the_rest():
    snapshot = add_up([{"total": 40, "done": 3, "running": 1, "runs": 4, "steps": 30, "tokens": 1200, "cost": 0.5},
                       {"total": 40, "done": 5, "running": 1, "runs": 6, "steps": 27, "tokens": 800, "cost": 0.25}])
    assert snapshot == {"total": 40, "done": 8, "running": 2, "runs": 10, "steps": 57, "tokens": 2000, "cost": 0.75}
    assert status_line(snapshot, 125) == ("ifbench: 8/40 instances done, 2 agent runs going, 57 steps, "
                                          "2,000 tokens, $0.7500, 2m05s, ~8m20s left")
    # No agent run: no agent counts; nothing done yet: no estimate.
    assert status_line({"total": 2}, 3661) == "ifbench: 0/2 instances done, 0 tokens, $0, 1h01m"
    # Under --ifbench-max-cost: what the whole run paid, against its limit, in place of the agents' cost.
    assert status_line({"total": 2, "done": 1, "cost": 0.5, "limit": 20, "paid": 3.125}, 10) == (
        "ifbench: 1/2 instances done, 0 tokens, $3.1250 of $20.00 paid, 10s, ~10s left")


def _records(pytester) -> list[dict]:
    return json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]


def test_plain_lines_under_xdist_count_every_workers_steps(pytester, stub_env):
    stub_env.default = endless
    write_suite(pytester.path, "suites/live.yaml", SUITE)
    # Not a TTY: auto gives plain lines. One agent run at a time per worker keeps the items going for
    # >= 1.6 s after the first one starts (otherwise every run starts ahead of its item and may be over by then).
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env), "-n", "2", "--ifbench-agent-concurrency=1",
                                           "--ifbench-live-status-every=0.5")
    out = result.stdout.str()
    assert result.ret == 0, out[-3000:]
    records = _records(pytester)
    tokens = sum(r["tokens"]["prompt"] + r["tokens"]["completion"] for r in records)
    # The final line adds up both workers: 3 instances, 2 steps each, every token of the records.
    assert final_line(out).startswith(
        f"ifbench: 3/3 instances done, 0 agent runs going, 6 steps, {tokens:,} tokens, $0, ")
    assert stub_env.calls == 6
    # Lines came while the run went on, with a partial count.
    during = [line for line in out.splitlines() if line.startswith("ifbench: ")][:-1]
    assert during, out[-3000:]
    assert "\x1b[" not in out  # plain lines only: no cursor movement in a log


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "n2"])
def test_instances_that_are_not_agent_runs_count_their_tokens_and_cost(pytester, stub_env, workers):
    """A plain model's run pays for every instance too: the final line says what its records say (it said
    "0 tokens, $0" when only agent steps were counted)."""
    write_suite(pytester.path, "suites/plain.yaml", """
        ifbench: 1
        benchmark: plain
        instances:
          - {id: a, prompt: say hello, checks: [{id: w, verifier: ifbench.word_count, params: {min: 1}}]}
          - {id: b, prompt: say goodbye, checks: [{id: w, verifier: ifbench.word_count, params: {min: 1}}]}
          - id: c
            protocol: multi_turn
            turns:
              - {user: first, checks: [{id: w1, verifier: ifbench.word_count, params: {min: 1}}]}
              - {user: second, checks: [{id: w2, verifier: ifbench.word_count, params: {min: 1}}]}
        """)
    args = ["--model=openai/gpt-4o-mini", *stub_args(stub_env)[1:], "--ifbench-live-status=plain",
            "--ifbench-cache=cache", *workers]
    result = (pytester.runpytest_subprocess if workers else pytester.runpytest)("suites", *args)
    assert result.ret == 0, result.stdout.str()[-3000:]
    tokens, cost = _paid(_records(pytester))
    assert tokens > 0 and cost > 0 and stub_env.calls == 4
    assert final_line(result.stdout.str()).startswith(f"ifbench: 3/3 instances done, {tokens:,} tokens, ${cost:.4f}, ")
    assert _summary_totals(result.stdout.str()) == (tokens, f"${cost:.4f}")
    # Again from the cache: nothing paid, and the line says so (it counted the cached tokens as this run's).
    again = (pytester.runpytest_subprocess if workers else pytester.runpytest)("suites", *args)
    assert again.ret == 0 and stub_env.calls == 4, again.stdout.str()[-3000:]
    assert final_line(again.stdout.str()).startswith("ifbench: 3/3 instances done, 0 tokens, $0, ")
    assert _summary_totals(again.stdout.str()) == (0, "$0.0000")


def _paid(records: list[dict]) -> tuple[int, float]:
    """The prompt + completion tokens and the cost the run paid, as the records count them (cached replies apart)."""
    return (sum(r["tokens"]["prompt"] + r["tokens"]["completion"] for r in records),
            sum(r["cost"] or 0.0 for r in records))


def _summary_totals(out: str) -> tuple[int, str]:
    """The terminal summary's table row ``all``: its tokens (in + out) and its cost cell."""
    (row,) = [line.split() for line in out.splitlines() if line.split()[:1] == ["all"]]
    tokens_in, tokens_out = row[-2].split("/")
    return int(tokens_in) + int(tokens_out), row[-1]


JUDGED_AGENT_SUITE = """
ifbench: 1
benchmark: judgedagent
defaults:
  protocol: agent
  protocol_options: {runner: loop, max_steps: 8, command_timeout: 20}
instances:
  - id: greet
    prompt: Create hello.txt containing hello, check it, then finish.
    checks:
      - {id: wrote, verifier: ifbench.tool_called, params: {tool: write_file}}
      - {id: summary, verifier: ifbench.judge, params: {criterion: The final answer says what was done.}}
"""


@pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "n2"])
def test_an_agent_run_s_judge_calls_count_and_its_cached_steps_do_not(pytester, stub_env, workers):
    """The final line says what the summary says: an agent instance's judge calls (in its record's
    ``judge_calls``, which the line skipped with the rest of an agent record) are paid for; its steps
    served from the cache on a re-run are not (the line counted them as paid)."""
    scripted(stub_env)
    write_suite(pytester.path, "suites/judged.yaml", JUDGED_AGENT_SUITE)
    args = ["--model=openai/gpt-4o-mini", *stub_args(stub_env)[1:], "--ifbench-live-status=plain",
            "--ifbench-cache=cache", *workers]
    result = pytester.runpytest_subprocess("suites", *args)
    assert result.ret == 0, result.stdout.str()[-3000:]
    (record,) = _records(pytester)
    assert record["agent"]["steps"] == 3 and len(record["judge_calls"]) == 1 and stub_env.calls == 4
    tokens, cost = _paid([record])
    assert cost > 0
    assert final_line(result.stdout.str()).startswith(
        f"ifbench: 1/1 instances done, 0 agent runs going, 3 steps, {tokens:,} tokens, ${cost:.4f}, ")
    assert _summary_totals(result.stdout.str()) == (tokens, f"${cost:.4f}")
    again = pytester.runpytest_subprocess("suites", *args)
    assert again.ret == 0 and stub_env.calls == 4, again.stdout.str()[-3000:]
    assert final_line(again.stdout.str()).startswith(
        "ifbench: 1/1 instances done, 0 agent runs going, 3 steps, 0 tokens, $0, ")
    assert _summary_totals(again.stdout.str()) == (0, "$0.0000")


def _as_seen(out: str) -> str:
    """What a terminal shows for ``out``: each ``ESC[nD ESC[K`` takes back the n characters before it."""
    screen: list[str] = []
    for piece in re.split(r"(\x1b\[\d+D\x1b\[K)", out):
        match = re.fullmatch(r"\x1b\[(\d+)D\x1b\[K", piece)
        if match:
            del screen[len(screen) - int(match.group(1)):]
        else:
            screen.extend(piece)
    return "".join(screen)


def _pytest_lines(out: str) -> list[str]:
    """pytest's lines, times blanked (two runs never take the same time)."""
    return [re.sub(r"\d+\.\d+ ?s\b", "T", line).strip("= ") for line in out.splitlines()
            if not line.startswith(("ifbench: ", "platform ", "rootdir", "plugins", "cachedir", "created:"))]


@pytest.mark.parametrize("workers", [["-n", "2"], []], ids=["xdist", "one-process"])
def test_on_a_terminal_the_line_is_drawn_in_place_and_leaves_pytests_output_as_it_was(pytester, stub_env, workers):
    stub_env.default = endless
    write_suite(pytester.path, "suites/live.yaml", SUITE)
    drawn = pytester.runpytest_subprocess("suites", *stub_args(stub_env), *workers, "--ifbench-live-status=tty",
                                          "--ifbench-no-cache")
    raw = drawn.stdout.str()
    assert drawn.ret == 0, raw[-3000:]
    assert re.search(r"  ifbench: \d/3 instances done, \d agent runs? going, \d+ steps?", raw), raw[-3000:]
    assert "\x1b[" in raw
    seen = _as_seen(raw)
    assert final_line(seen).startswith("ifbench: 3/3 instances done, 0 agent runs going, 6 steps, ")
    plain = pytester.runpytest_subprocess("suites", *stub_args(stub_env), *workers, "--ifbench-live-status=off",
                                          "--ifbench-no-cache")
    assert "ifbench: " not in plain.stdout.str()
    assert _pytest_lines(seen) == _pytest_lines(plain.stdout.str())  # the status left nothing behind


def test_one_process_counts_too(pytester, stub_env):
    stub_env.default = endless
    write_suite(pytester.path, "suites/live.yaml", SUITE)
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env), "--ifbench-live-status=plain",
                                           "--ifbench-live-status-every=0")
    out = result.stdout.str()
    assert result.ret == 0, out[-3000:]
    lines = [line for line in out.splitlines() if line.startswith("ifbench: ")]
    assert len(lines) == 1 and lines[0].startswith("ifbench: 3/3 instances done, 0 agent runs going, 6 steps, ")


SLOW_AGENT_SUITE = """
ifbench: 1
benchmark: slowagent
defaults:
  protocol: agent
  protocol_options: {runner: loop, max_steps: 8, command_timeout: 20}
instances:
  - id: nap
    prompt: Create hello.txt, take two naps, then finish.
    checks:
      - {id: wrote, verifier: ifbench.tool_called, params: {tool: write_file}}
"""

#: Two steps that each take 1.5 s in the sandbox: a re-run from the cache still lasts that long, with
#: its model calls answered at once, so the plain lines show it while its steps are counted.
SLOW_STEPS = [
    [call("write_file", {"path": "hello.txt", "content": "hello\n"}, 1)],
    [call("bash", {"command": "sleep 1.5"}, 2)],
    [call("bash", {"command": "sleep 1.5"}, 3)],
    [call("finish", {"answer": "I wrote hello.txt and napped twice."}, 4)],
]


def _figures(line: str) -> tuple[int, int, str]:
    """A status line's steps (0 without agent counts), tokens and cost text."""
    steps = re.search(r", ([\d,]+) steps?, ", line)
    tokens, cost = re.search(r", ([\d,]+) tokens, (\$[\d.]+)", line).groups()
    return int(steps.group(1).replace(",", "")) if steps else 0, int(tokens.replace(",", "")), cost


@pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")
def test_an_agent_run_from_the_cache_shows_no_tokens_or_cost_while_it_runs(pytester, stub_env):
    """A resumed agent run's steps come from the cache: the line counts them as steps, never their
    tokens or cost (the board took every step as paid, and only the finished instance's record took
    them back: the line went up while the run went on)."""
    scripted(stub_env, SLOW_STEPS)
    write_suite(pytester.path, "suites/slow.yaml", SLOW_AGENT_SUITE)
    args = ["--model=openai/gpt-4o-mini", *stub_args(stub_env)[1:], "--ifbench-live-status=plain",
            "--ifbench-cache=cache"]
    first = pytester.runpytest_subprocess("suites", *args, "--ifbench-live-status-every=0")
    assert first.ret == 0 and stub_env.calls == 4, first.stdout.str()[-3000:]
    (record,) = _records(pytester)
    assert record["tokens"]["prompt"] > 0 and record["cost"] > 0  # the board had something to count
    again = pytester.runpytest_subprocess("suites", *args, "--ifbench-live-status-every=0.5")
    out = again.stdout.str()
    assert again.ret == 0 and stub_env.calls == 4, out[-3000:]
    lines = [line for line in out.splitlines() if line.startswith("ifbench: ")]
    during = [line for line in lines[:-1] if "1 agent run going" in line and _figures(line)[0] >= 1]
    assert during, out[-3000:]  # lines came while the run's (cached) steps were counted
    assert [_figures(line)[1:] for line in lines] == [(0, "$0")] * len(lines), lines
    assert final_line(out).startswith("ifbench: 1/1 instances done, 0 agent runs going, 4 steps, 0 tokens, $0, ")
    assert _summary_totals(out) == (0, "$0.0000")


SAMPLED_AGENT_SUITE = JUDGED_AGENT_SUITE.replace("  protocol_options:",
                                                 "  generation: {samples: 2}\n  protocol_options:")


def two_samples(judged: list[dict] | None = None, garbage: str | None = None) -> Callable[[dict], Reply]:
    """The stub for SAMPLED_AGENT_SUITE: each sample takes three steps, its answer numbered in the order the
    samples finish, so each sample's judge reads its own transcript. The judge passes every check, except
    that it answers garbage to a transcript holding ``garbage``; ``judged`` collects the judge requests."""
    answers = itertools.count()

    def answer(body: dict) -> Reply:
        if body.get("response_format"):
            if judged is not None:
                judged.append(body)
            if garbage is not None and garbage in json.dumps(body["messages"]):
                return Reply(content="Looks good to me!")
            ids = body["response_format"]["json_schema"]["schema"]["properties"]["checks"]["items"]["properties"]
            checks = [{"id": i, "reasoning": "seen", "result": "success"} for i in ids["id"]["enum"]]
            return Reply(content=json.dumps({"checks": checks}))
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if done < 2:
            return Reply(tool_calls=STEPS[done])
        return Reply(tool_calls=[call("finish", {"answer": f"I wrote hello.txt (answer {next(answers)})."}, 3)])

    return answer


@pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "n2"])
def test_every_sample_s_judge_calls_are_in_the_record_and_the_line(pytester, stub_env, workers):
    """An agent instance with two samples pays for each sample's steps and judge call: the record lists
    both judge calls (it listed sample 0's, while its tokens and cost counted both), and the final line
    says what the summary says (it took sample 1's judge call for agent steps the board had counted)."""
    stub_env.default = two_samples()
    write_suite(pytester.path, "suites/sampled.yaml", SAMPLED_AGENT_SUITE)
    result = pytester.runpytest_subprocess("suites", "--model=openai/gpt-4o-mini", *stub_args(stub_env)[1:],
                                           "--ifbench-live-status=plain", "--ifbench-cache=cache", *workers)
    out = result.stdout.str()
    assert result.ret == 0, out[-3000:]
    (record,) = _records(pytester)
    assert record["samples"] == 2 and stub_env.calls == 8  # 3 steps and a judge call per sample
    tokens, cost = _paid([record])
    assert cost > 0
    assert final_line(out).startswith(
        f"ifbench: 1/1 instances done, 0 agent runs going, 6 steps, {tokens:,} tokens, ${cost:.4f}, ")
    assert _summary_totals(out) == (tokens, f"${cost:.4f}")
    assert [call["cached"] for call in record["judge_calls"]] == [False, False]


@pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")
def test_a_sample_whose_judge_fails_keeps_the_other_sample_s_judge_call(pytester, stub_env):
    """Two samples; one sample's judge answers garbage (and again when asked to repair), so the instance
    errors. The errored record lists every judge call paid for, the other sample's too (it counted that
    call's tokens as agent steps: the record hid the call, and the line fell short of the summary)."""
    judged: list[dict] = []
    stub_env.default = two_samples(judged, garbage="(answer 0)")
    write_suite(pytester.path, "suites/sampled.yaml", SAMPLED_AGENT_SUITE)
    result = pytester.runpytest_subprocess("suites", "--model=openai/gpt-4o-mini", *stub_args(stub_env)[1:],
                                           "--ifbench-live-status=plain", "--ifbench-cache=cache")
    out = result.stdout.str()
    (record,) = _records(pytester)
    assert record["status"] == "error" and record["error_kind"] == "judge", out[-3000:]
    assert len(judged) == 3 and len(record["judge_calls"]) == 3  # the garbage, its repair, the other's verdict
    tokens, cost = _paid([record])
    assert final_line(out).startswith(
        f"ifbench: 1/1 instances done, 0 agent runs going, 6 steps, {tokens:,} tokens, ${cost:.4f}, ")
    assert _summary_totals(out) == (tokens, f"${cost:.4f}")


CHATTY_TEST = """
import time


def test_chatty():
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:
        print("CAPTURED-" * 4)
        time.sleep(0.00005)
"""


def test_a_test_s_captured_output_stays_captured_while_the_line_is_redrawn(pytester, stub_env):
    """The line is redrawn from a thread while a test runs with its output captured: the redraw reaches the
    terminal without lifting the capture, which would let the test's prints through (and, racing pytest's
    own suspending of the capture around a subtest's report, drop pytest's output into the capture)."""
    stub_env.default = endless
    write_suite(pytester.path, "suites/live.yaml", SUITE)
    pytester.makepyfile(test_chatty=CHATTY_TEST)
    result = pytester.runpytest_subprocess("suites", "test_chatty.py", *stub_args(stub_env),
                                           "--ifbench-live-status=tty", "--ifbench-no-cache")
    raw = result.stdout.str()
    assert result.ret == 0, raw[-3000:]
    assert "\x1b[" in raw  # the line was drawn while the test ran
    assert "CAPTURED-" not in raw, repr(raw[raw.index("test_chatty"):][:600])
