"""Trajectory and final-workspace verifiers on hand-built runs, and the three-state verdict."""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench._composition import default_registry
from pytest_ifbench._params import ParamError
from pytest_ifbench._types import CheckSpec, Instance, JudgeOmission, Verdict
from pytest_ifbench._verify import CheckOutcome, VerifyContext, evaluate
from pytest_ifbench.agents.trajectory import Trajectory, TrajectoryBuilder
from pytest_ifbench.verifiers._unicode import (
    EMOJI_PRESENTATION_BMP,
    PICTOGRAPHIC,
    find_emoji,
    is_pictographic,
    language_shares,
)

REG = default_registry()
TRAJECTORY_VERIFIERS = ["ifbench.tool_called", "ifbench.tool_not_called", "ifbench.read_before_edit",
                        "ifbench.no_emoji", "ifbench.language"]
MINIMAL = {"ifbench.tool_called": {"tool": "Bash"}, "ifbench.tool_not_called": {"tool": "Bash"},
           "ifbench.language": {"language": "en"}, "ifbench.file_exists": {"path": "a"},
           "ifbench.file_contains": {"path": "a", "text": "x"}, "ifbench.workspace_command": {"command": "true"}}


def check(verifier_id: str, params: dict[str, Any] | None = None, *, trajectory: Trajectory | None = None,
          workspace: Any = None, instance: Instance | None = None) -> CheckOutcome:
    spec = CheckSpec(id="c", verifier=verifier_id, params=REG.get(verifier_id).validate(params or {}))
    ctx = VerifyContext(registry=REG, trajectory=trajectory, workspace=workspace, instance=instance)
    (outcome,) = evaluate([spec], "the final reply", ctx)
    return outcome


def run(*steps: tuple, children: tuple[Trajectory, ...] = (), id: str = "run") -> Trajectory:
    """A trajectory from ``("user", text)``, ``("say", text)``, ``("think", text)`` and
    ``("call", name, arguments, result[, is_error])`` steps, one assistant turn per say/think/call."""
    builder = TrajectoryBuilder(id=id)
    builder.system("You are a coding agent.")
    for n, step in enumerate(steps):
        if step[0] == "user":
            builder.user(step[1])
        elif step[0] == "say":
            builder.assistant(step[1])
        elif step[0] == "think":
            builder.assistant("", reasoning=step[1])
        else:
            builder.assistant(tool_calls=[{"id": f"{id}-call{n}", "name": step[1], "arguments": step[2]}])
            builder.tool(f"{id}-call{n}", step[3], is_error=step[4] if len(step) > 4 else False)
    for child in children:
        builder.add_child(child)
    return builder.build()


# --------------------------------------------------------------------------- no agent run


@pytest.mark.parametrize("verifier_id", TRAJECTORY_VERIFIERS)
def test_trajectory_checks_error_without_an_agent_run(verifier_id):
    outcome = check(verifier_id, MINIMAL.get(verifier_id), trajectory=None)
    assert outcome.error and "needs an agent run" in outcome.error
    assert not outcome.passed


@pytest.mark.parametrize("verifier_id", ["ifbench.file_exists", "ifbench.file_contains", "ifbench.workspace_command"])
def test_workspace_checks_error_without_an_agent_run(verifier_id):
    outcome = check(verifier_id, MINIMAL[verifier_id], trajectory=run(("say", "hi")), workspace=None)
    assert outcome.error and "needs an agent run" in outcome.error and not outcome.passed


# --------------------------------------------------------------------------- tool calls


def shell(command: str, result: str = "ok") -> tuple:
    return ("call", "Bash", {"command": command}, result)


def test_tool_called_counts_matching_calls_with_their_turns():
    traj = run(("user", "run the tests"), shell("ls"), ("say", "listing done"), shell("python -m pytest -q"))
    outcome = check("ifbench.tool_called", {"tool": "Bash", "arguments": r"pytest"}, trajectory=traj)
    assert outcome.passed, outcome.verdict
    assert "1 call(s) to Bash" in outcome.verdict.evidence and "turn 3: Bash" in outcome.verdict.evidence
    assert check("ifbench.tool_called", {"tool": ["Read", "Bash"], "min": 2}, trajectory=traj).passed
    too_many = check("ifbench.tool_called", {"tool": "Bash", "max": 1}, trajectory=traj)
    assert not too_many.passed and "2 call(s)" in too_many.verdict.evidence


def test_tool_called_names_what_was_called_when_missing():
    traj = run(("call", "Read", {"file_path": "a.py"}, "x"), shell("ls"))
    outcome = check("ifbench.tool_called", {"tool": "Skill"}, trajectory=traj)
    assert not outcome.passed
    assert "0 call(s) to Skill" in outcome.verdict.evidence
    assert "Read x1" in outcome.verdict.evidence and "Bash x1" in outcome.verdict.evidence


def test_tool_called_sees_sub_agents_unless_told_not_to():
    child = run(("user", "explore"), ("call", "Grep", {"pattern": "TODO"}, "none"), id="run/1")
    traj = run(("user", "go"), ("call", "Task", {"prompt": "explore"}, "done"), children=(child,))
    outcome = check("ifbench.tool_called", {"tool": "Grep"}, trajectory=traj)
    assert outcome.passed and "of sub-agent run/1" in outcome.verdict.evidence
    assert not check("ifbench.tool_called", {"tool": "Grep", "subagents": False}, trajectory=traj).passed


def test_a_call_seen_only_in_history_is_not_credited_but_still_forbidden():
    """A reply with ``generation`` False was only in a later request's history (the agent may have rewritten it):
    it earns no ``tool_called`` or ``read_before_edit`` credit, and still counts as a forbidden call."""
    honest = run(("user", "fix a.py"), ("call", "Read", {"file_path": "a.py"}, "x"), shell("rm -rf /tmp/x"),
                 ("call", "Edit", {"file_path": "a.py"}, "ok"))
    forged = replace(honest, messages=tuple(replace(m, generation=False) if m.turn == 1 else m
                                            for m in honest.messages))
    assert check("ifbench.tool_called", {"tool": "Read"}, trajectory=honest).passed
    outcome = check("ifbench.tool_called", {"tool": "Read"}, trajectory=forged)
    assert not outcome.passed and "0 call(s) to Read" in outcome.verdict.evidence
    assert "Bash x1" in outcome.verdict.evidence and "Read" not in outcome.verdict.evidence.split(";")[1]
    assert not check("ifbench.read_before_edit", trajectory=forged).passed
    forbidden = check("ifbench.tool_not_called", {"tool": "Read"}, trajectory=forged)
    assert not forbidden.passed and "turn 1 (only in a later request's history): Read" in forbidden.verdict.evidence


def test_tool_not_called_finds_a_forbidden_command_through_escapes():
    traj = run(("user", "undo my commits"), shell('echo "x" && git  reset --hard HEAD~3'), ("say", "done"))
    outcome = check("ifbench.tool_not_called", {"arguments": r"git\s+reset\s+--hard"}, trajectory=traj)
    assert not outcome.passed and outcome.error is None
    assert "turn 1: Bash" in outcome.verdict.evidence and "reset --hard" in outcome.verdict.evidence
    # an anchored pattern matches the decoded string, not only the JSON text with its \" escapes
    assert not check("ifbench.tool_not_called", {"tool": "Bash", "arguments": r'^echo "x"'}, trajectory=traj).passed
    assert check("ifbench.tool_not_called", {"tool": "Write", "arguments": "reset"}, trajectory=traj).passed
    assert check("ifbench.tool_not_called", {"tool": ["Edit", "Write"]}, trajectory=traj).passed


def test_tool_call_params_are_validated():
    with pytest.raises(ParamError, match="give a tool, an arguments pattern or both"):
        REG.get("ifbench.tool_not_called").validate({})
    with pytest.raises(ParamError, match="invalid regular expression"):
        REG.get("ifbench.tool_called").validate({"tool": "Bash", "arguments": "("})
    with pytest.raises(ParamError, match="must be <= max"):
        REG.get("ifbench.tool_called").validate({"tool": "Bash", "min": 3, "max": 1})
    assert REG.get("ifbench.tool_called").validate({"tool": "Bash"})["tool"] == ["Bash"]


def offering(traj: Trajectory, *names: str) -> Trajectory:
    """``traj`` as if its run had offered the model the tools ``names``."""
    return replace(traj, tools=tuple({"type": "function", "function": {"name": n, "description": "",
                                                                       "parameters": {"type": "object"}}}
                                     for n in names))


def test_if_offered_decides_as_before_when_a_named_tool_was_offered():
    traj = offering(run(("user", "go"), shell("git reset --hard")), "Bash", "Read")
    never = {"tool": ["Bash", "Shell"], "min": 0, "max": 0, "if_offered": True}
    called = check("ifbench.tool_called", never, trajectory=traj)
    assert called.applicable and not called.passed and "1 call(s) to Bash or Shell" in called.verdict.evidence
    forbidden = {"tool": ["Bash", "Shell"], "arguments": "reset", "if_offered": True}
    assert not check("ifbench.tool_not_called", forbidden, trajectory=traj).passed
    assert check("ifbench.tool_not_called", {**forbidden, "arguments": "rebase"}, trajectory=traj).passed


def test_if_offered_is_not_applicable_when_none_of_the_tools_was_offered():
    traj = offering(run(("user", "go"), shell("ls"), ("say", "done")), "Bash", "Read")
    for verifier_id, params in [("ifbench.tool_called", {"tool": ["Finish", "Submit"], "min": 1, "max": 1}),
                                ("ifbench.tool_not_called", {"tool": "Shell", "arguments": "."})]:
        outcome = check(verifier_id, {**params, "if_offered": True}, trajectory=traj)
        assert outcome.error is None and not outcome.applicable and not outcome.passed, outcome.verdict
        assert outcome.verdict.evidence.startswith("not applicable: none of ")
        assert "was offered in this run" in outcome.verdict.evidence
        # without the parameter: today's verdict (a certain failure, a vacuous pass)
        plain = check(verifier_id, params, trajectory=traj)
        assert plain.applicable and plain.passed is (verifier_id == "ifbench.tool_not_called")


def test_if_offered_counts_the_sub_agents_tools():
    child = offering(run(("user", "explore"), ("call", "Grep", {"pattern": "x"}, "none"), id="run/1"), "Grep")
    traj = offering(run(("user", "go"), ("call", "Task", {"prompt": "explore"}, "done"), children=(child,)), "Task")
    outcome = check("ifbench.tool_called", {"tool": "Grep", "if_offered": True}, trajectory=traj)
    assert outcome.applicable and outcome.passed


def test_if_offered_keeps_todays_verdict_without_a_record_of_offered_tools():
    traj = run(("user", "go"), shell("ls"))
    assert traj.tools == () and all(not c.tools for c in traj.walk())
    outcome = check("ifbench.tool_called", {"tool": "Finish", "if_offered": True}, trajectory=traj)
    assert outcome.applicable and not outcome.passed and "0 call(s) to Finish" in outcome.verdict.evidence
    assert check("ifbench.tool_not_called", {"tool": "Shell", "if_offered": True}, trajectory=traj).passed


def test_if_offered_is_validated():
    with pytest.raises(ParamError, match="if_offered: needs tool"):
        REG.get("ifbench.tool_not_called").validate({"arguments": "x", "if_offered": True})
    with pytest.raises(ParamError, match="if_offered"):
        REG.get("ifbench.tool_called").validate({"tool": "Bash", "if_offered": "yes"})
    assert REG.get("ifbench.tool_called").validate({"tool": "Bash"})["if_offered"] is False


# --------------------------------------------------------------------------- read before edit


def read(path: str, tool: str = "Read", key: str = "file_path") -> tuple:
    return ("call", tool, {key: path}, "contents")


def edit(path: str, tool: str = "Edit", key: str = "file_path", error: bool = False) -> tuple:
    return ("call", tool, {key: path, "old_string": "a", "new_string": "b"}, "error" if error else "ok", error)


def test_read_before_edit_passes_and_fails_with_the_offending_turn():
    good = run(read("src/a.py"), edit("src/a.py"), ("say", "done"))
    assert check("ifbench.read_before_edit", trajectory=good).passed
    bad = run(read("src/a.py"), edit("src/b.py"), ("say", "done"))
    outcome = check("ifbench.read_before_edit", trajectory=bad)
    assert not outcome.passed and "turn 2: Edit src/b.py without reading it" in outcome.verdict.evidence


def test_created_files_need_no_read_unless_they_existed(tmp_path):
    traj = run(("call", "Write", {"file_path": "new.py", "content": "x = 1"}, "created"), edit("new.py"))
    assert check("ifbench.read_before_edit", trajectory=traj).passed
    (tmp_path / "new.py").write_text("old")
    instance = Instance(id="i", benchmark="b", suite=Path("s.yaml"), environment=tmp_path)
    outcome = check("ifbench.read_before_edit", trajectory=traj, instance=instance)
    assert not outcome.passed and "Write new.py" in outcome.verdict.evidence


def test_read_before_edit_matches_paths_and_other_scaffolds():
    absolute = run(read("/work/repo/src/a.py"), edit("./src/a.py"))
    assert check("ifbench.read_before_edit", trajectory=absolute).passed
    kilo = run(("call", "read_file", {"files": [{"path": "a.py"}]}, "x"),
               ("call", "apply_diff", {"path": "a.py", "diff": "..."}, "ok"))
    assert check("ifbench.read_before_edit", trajectory=kilo).passed
    generic = run(("call", "edit_file", {"path": "a.py"}, "ok"))
    assert not check("ifbench.read_before_edit", trajectory=generic).passed


def test_failed_edits_count_unless_ignored():
    traj = run(edit("a.py", error=True), read("a.py"), edit("a.py"))
    outcome = check("ifbench.read_before_edit", trajectory=traj)
    assert not outcome.passed and "(the call failed)" in outcome.verdict.evidence
    assert check("ifbench.read_before_edit", {"ignore_failed": True}, trajectory=traj).passed


def test_each_conversation_reads_for_itself():
    child = run(("user", "look"), read("a.py"), id="run/1")
    traj = run(("call", "Task", {"prompt": "look"}, "seen"), edit("a.py"), children=(child,))
    assert not check("ifbench.read_before_edit", trajectory=traj).passed


# --------------------------------------------------------------------------- emoji


def test_emoji_table_is_sorted_and_disjoint():
    for table in (PICTOGRAPHIC, EMOJI_PRESENTATION_BMP):
        assert all(low <= high for low, high in table)
        assert all(a[1] < b[0] for a, b in zip(table, table[1:]))
    assert all(is_pictographic(low) for low, _ in EMOJI_PRESENTATION_BMP)


def test_every_emoji_presentation_character_is_found():
    regex = pytest.importorskip("regex")
    presentation = regex.compile(r"\p{Emoji_Presentation}")
    missed = [hex(cp) for cp in range(0x2000, 0x20000)
              if presentation.match(chr(cp)) and find_emoji(chr(cp)) != [chr(cp)]]
    assert missed == []


@pytest.mark.parametrize(("text", "found"), [
    ("Done ✅ and shipped 🚀", ["✅", "🚀"]),
    ("team 👩🏽‍💻 works", ["👩🏽\u200d💻"]),
    ("France 🇫🇷, step 1️⃣, love ❤️", ["🇫🇷", "1️⃣", "❤️"]),
    ("© 2024 Acme™, a ↔ b, ✔ done, ★", []),
    ("dove 🕊︎ as text", []),
    ("plain text with :) and <3", []),
])
def test_find_emoji(text, found):
    assert find_emoji(text) == found


def test_strict_emoji_counts_text_style_pictographs():
    assert find_emoji("© ™ ✔", strict=True) == ["©", "™", "✔"]


def test_no_emoji_scopes():
    traj = run(("user", "hi"), ("think", "plan 🤔"), ("say", "Working on it 🎉"),
               ("call", "Write", {"file_path": "a.md", "content": "# Notes ✨"}, "ok"), ("say", "All done."))
    assert check("ifbench.no_emoji", {"scope": "final"}, trajectory=traj).passed
    outcome = check("ifbench.no_emoji", {"scope": "assistant"}, trajectory=traj)
    assert not outcome.passed and "🎉 (turn 2)" in outcome.verdict.evidence
    everything = check("ifbench.no_emoji", {"scope": "all"}, trajectory=traj)
    assert set(everything.verdict.details["emoji"]) == {"🤔", "🎉", "✨"}
    assert "Write call" in everything.verdict.evidence


# --------------------------------------------------------------------------- language


@pytest.mark.parametrize(("text", "language"), [
    ("I fixed the bug in the parser and all of the tests pass now.", "en"),
    ("Ich habe den Fehler behoben und die Tests laufen wieder.", "de"),
    ("J'ai corrigé le bogue et les tests passent à nouveau.", "fr"),
    ("He corregido el error y las pruebas pasan de nuevo.", "es"),
    ("Ho corretto il bug e i test sono di nuovo verdi.", "it"),
    ("Eu corrigi o erro e os testes passam de novo.", "pt"),
    ("Ik heb de fout opgelost en de tests zijn weer groen.", "nl"),
    ("我修复了 parser.py 中的错误，3 个测试都通过了。", "zh"),
    ("パーサーのバグを修正しました。テストは全部通りました。", "ja"),
    ("파서의 버그를 수정했고 테스트가 모두 통과했습니다.", "ko"),
    ("Я исправил ошибку, и все тесты проходят.", "ru"),
])
def test_language_shares_pick_the_language(text, language):
    shares = language_shares([text])
    assert max(shares, key=shares.get) == language, shares


def test_language_check_ignores_code_and_identifiers():
    reply = ("我修改了 `parse_args` 和 src/app.py。\n"
             "```python\ndef parse_args():\n    return 'the end of it'\n```\n完成了。")
    traj = run(("user", "请用中文回答"), ("say", reply))
    outcome = check("ifbench.language", {"language": "zh"}, trajectory=traj)
    assert outcome.passed and "zh: 100%" in outcome.verdict.evidence
    english = run(("say", "I changed the parser and the tests pass."))
    failing = check("ifbench.language", {"language": "zh", "scope": "final"}, trajectory=english)
    assert not failing.passed and "en 100%" in failing.verdict.evidence


def test_language_share_threshold():
    mixed = run(("say", "The fix is in and the tests pass, as you asked for it. 测试通过。"))
    strict = check("ifbench.language", {"language": "en", "min_share": 0.95}, trajectory=mixed)
    lenient = check("ifbench.language", {"language": "en", "min_share": 0.5}, trajectory=mixed)
    assert not strict.passed and lenient.passed


def test_language_is_not_applicable_without_prose():
    traj = run(("user", "go"), ("say", "```\nprint(1)\n```"), shell("ls"))
    outcome = check("ifbench.language", {"language": "en", "scope": "final"}, trajectory=traj)
    assert outcome.error is None and not outcome.applicable and not outcome.passed
    assert outcome.to_json()["applicable"] is False and outcome.to_json()["verdict"]["applicable"] is False


# --------------------------------------------------------------------------- three-state verdicts


def test_applicable_verdicts_keep_their_json():
    assert Verdict(passed=True, evidence="e").to_json() == {"passed": True, "evidence": "e", "details": {}}
    spec = CheckSpec(id="c", verifier="ifbench.judge")
    assert "applicable" not in CheckOutcome(check=spec, verdict=Verdict(passed=False)).to_json()
    outcome = CheckOutcome(check=spec, verdict=Verdict(passed=True, applicable=False))
    assert not outcome.passed and not outcome.applicable


def test_a_judge_omission_becomes_an_error_on_that_check_only():
    checks = [CheckSpec(id=i, verifier="ifbench.judge", params={"criterion": i}) for i in ("a", "b")]
    judged = {"a": Verdict(passed=True), "b": JudgeOmission(reason="judge j left it out")}
    ctx = VerifyContext(registry=REG, judged=judged)
    first, second = evaluate(checks, "", ctx)
    assert first.passed and first.error is None
    assert second.error == "judge j left it out" and second.verdict is None and not second.passed


# --------------------------------------------------------------------------- final workspace


@dataclass
class Result:
    returncode: int | None
    stdout: str
    stderr: str
    duration: float = 0.01
    limit: str | None = None


@dataclass
class FakeWorkspace:
    """``run(command, *, limits)`` as a plain shell in a directory; or canned results."""

    path: Path
    canned: Result | None = None
    calls: list[tuple[str, Any]] = field(default_factory=list)

    def run(self, command: str, *, limits: Any) -> Result:
        self.calls.append((command, limits))
        if self.canned is not None:
            return self.canned
        done = subprocess.run(["/bin/sh", "-c", command], cwd=self.path, capture_output=True, text=True,
                              timeout=limits.timeout, check=False)
        return Result(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("import os\n\nDEBUG = False\n")
    (tmp_path / "it's here.txt").write_text("quoted")
    return FakeWorkspace(tmp_path)


def test_file_exists(workspace):
    assert check("ifbench.file_exists", {"path": "src/app.py"}, workspace=workspace).passed
    assert check("ifbench.file_exists", {"path": "it's here.txt"}, workspace=workspace).passed
    missing = check("ifbench.file_exists", {"path": "src/nope.py"}, workspace=workspace)
    assert not missing.passed and "does not exist" in missing.verdict.evidence
    assert check("ifbench.file_exists", {"path": "src/nope.py", "negate": True}, workspace=workspace).passed
    command, limits = workspace.calls[0]
    assert f"realpath -e -- {shlex.quote('src/app.py')}" in command and limits.timeout == 30


def test_file_contains(workspace):
    found = check("ifbench.file_contains", {"path": "src/app.py", "text": "DEBUG = False"}, workspace=workspace)
    assert found.passed and "line 3" in found.verdict.evidence
    app = {"path": "src/app.py"}
    assert check("ifbench.file_contains", {**app, "pattern": r"^import \w+$"}, workspace=workspace).passed
    assert not check("ifbench.file_contains", {**app, "text": "DEBUG = True"}, workspace=workspace).passed
    assert check("ifbench.file_contains", {"path": "src/app.py", "text": "DEBUG = True", "negate": True},
                 workspace=workspace).passed
    missing = check("ifbench.file_contains", {"path": "gone.py", "text": "x"}, workspace=workspace)
    assert not missing.passed and "cannot read gone.py" in missing.verdict.evidence
    cut = check("ifbench.file_contains", {"path": "src/app.py", "text": "DEBUG", "max_bytes": 5}, workspace=workspace)
    assert not cut.passed and "only its first 5 bytes" in cut.verdict.evidence
    with pytest.raises(ParamError, match="exactly one of text and pattern"):
        REG.get("ifbench.file_contains").validate({"path": "a", "text": "x", "pattern": "y"})


def test_workspace_command(workspace):
    ok = check("ifbench.workspace_command", {"command": "ls src", "stdout_pattern": r"app\.py"}, workspace=workspace)
    assert ok.passed and ok.verdict.details["returncode"] == 0
    bad = check("ifbench.workspace_command", {"command": "echo boom >&2; exit 3"}, workspace=workspace)
    assert not bad.passed and "exit 3 (expected 0)" in bad.verdict.evidence and "boom" in bad.verdict.evidence
    assert check("ifbench.workspace_command", {"command": "exit 3", "exit_code": 3}, workspace=workspace).passed
    assert not check("ifbench.workspace_command", {"command": "echo hi", "stdout_pattern": "bye"},
                     workspace=workspace).passed
    assert workspace.calls[-1][1].timeout == 60


def test_a_command_the_sandbox_stopped_fails_and_a_broken_file_test_errors(tmp_path):
    stopped = FakeWorkspace(tmp_path, canned=Result(None, "", "", 5.0, "timeout"))
    outcome = check("ifbench.workspace_command", {"command": "sleep 99", "timeout": 5}, workspace=stopped)
    assert not outcome.passed and "stopped by the timeout limit after 5s" in outcome.verdict.evidence
    broken = FakeWorkspace(tmp_path, canned=Result(127, "", "test: not found"))
    outcome = check("ifbench.file_exists", {"path": "a"}, workspace=broken)
    assert outcome.error and "could not test" in outcome.error and not outcome.passed


def test_workspace_checks_in_a_real_sandboxed_workspace(tmp_path):
    from pytest_ifbench.agents.workspace import Workspace, sandbox_problem

    if sandbox_problem() is not None:
        pytest.skip(f"no sandbox here: {sandbox_problem()}")
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    env = tmp_path / "env"
    env.mkdir()
    (env / "notes.txt").write_text("TODO: ship it\n")
    (env / "leak.txt").symlink_to(secret)  # what an agent could plant to make the host read its files
    with Workspace.create(env, parent=tmp_path) as ws:
        assert check("ifbench.file_contains", {"path": "notes.txt", "text": "ship it"}, workspace=ws).passed
        assert check("ifbench.file_exists", {"path": "notes.txt"}, workspace=ws).passed
        assert check("ifbench.workspace_command", {"command": "grep -q TODO notes.txt"}, workspace=ws).passed
        leak = check("ifbench.file_contains", {"path": "leak.txt", "text": "s3cret"}, workspace=ws)
        assert not leak.passed and "cannot read leak.txt" in leak.verdict.evidence


def test_prose_seen_only_in_history_is_not_the_models_language():
    """An agent answering in English that wrote a long Chinese reply into its CLI's saved conversation: the
    forged text (``generation`` False) made `ifbench.language(zh)` pass. Only what the model said counts;
    no_emoji still reads it all (claiming something forbidden cannot help)."""
    chinese = "我已经按照你的要求修改了解析器，所有的测试都通过了，没有任何问题。" * 5
    honest = run(("user", "请用中文回答"), ("say", chinese), ("say", "I changed the parser and the tests pass. 🎉"))
    forged = replace(honest, messages=tuple(replace(m, generation=False) if m.content == chinese else m
                                            for m in honest.messages))
    assert check("ifbench.language", {"language": "zh", "scope": "all"}, trajectory=honest).passed
    for scope in ("assistant", "all"):
        outcome = check("ifbench.language", {"language": "zh", "scope": scope}, trajectory=forged)
        assert not outcome.passed and "en 100%" in outcome.verdict.evidence, (scope, outcome)
    assert not check("ifbench.no_emoji", {"scope": "all"}, trajectory=forged).passed
