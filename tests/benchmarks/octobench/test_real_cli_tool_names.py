"""The shipped Kilo instances' tool checks mean the same under the loop's kilo profile and the real Kilo CLI:
every check naming a Kilo 0.x tool (the profile's) also names the real Kilo 7.7.7 tool doing the same thing,
as recorded from the proxy's ``tools`` of a real run against the stub; the checks with no real equivalent are
not applicable under the real CLI and still decide under the profile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pytest_ifbench._composition import default_registry
from pytest_ifbench._types import CheckSpec
from pytest_ifbench._verify import VerifyContext, evaluate
from pytest_ifbench.agents.profiles import ToolRegistry
from pytest_ifbench.agents.trajectory import Trajectory, TrajectoryBuilder

SUITES = Path(__file__).resolve().parents[3] / "suites" / "octobench"
REGISTRY = default_registry()
#: The tool names real Kilo 7.7.7 sent through the proxy (a real run against the stub).
KILO_7_TOOLS = frozenset({"background_process", "bash", "board_post", "board_read", "cancel_wakeup", "edit", "glob",
                          "grep", "kilo_local_recall", "read", "schedule_wakeup", "skill", "task", "todowrite",
                          "webfetch", "write"})
#: The loop's kilo profile name -> the real CLI's tool for the same capability.
EQUIVALENT = {"read_file": "read", "execute_command": "bash", "write_to_file": "write", "apply_diff": "edit",
              "list_files": "glob", "search_files": "grep", "update_todo_list": "todowrite"}


def kilo_tool_checks():
    for path in sorted(SUITES.glob("*.yaml")):
        for instance in yaml.safe_load(path.read_text())["instances"]:
            if instance.get("scaffold") != "kilo":
                continue
            for check in instance["checks"]:
                if check["verifier"] in ("ifbench.tool_called", "ifbench.tool_not_called"):
                    tools = check["params"]["tool"]
                    yield f"{path.name}::{instance['id']}::{check['id']}", [tools] if isinstance(tools, str) else tools


def test_every_kilo_tool_check_names_the_real_clis_tool_too():
    missing = [(where, tools) for where, tools in kilo_tool_checks()
               if any(t in EQUIVALENT for t in tools) and not any(t in KILO_7_TOOLS for t in tools)
               and not where.endswith("relative-paths")]
    assert not missing, missing
    for where, tools in kilo_tool_checks():
        for name in tools:
            if name in EQUIVALENT and not where.endswith("relative-paths"):
                assert EQUIVALENT[name] in tools, (where, tools)


# ------------------------------------------------------------------ checks with no real-CLI equivalent

#: The shipped Kilo checks about Kilo 0.x tools the real CLI does not have: ``if_offered`` makes them not
#: applicable under it (metrics leave them out) instead of a vacuous pass or a certain failure.
NO_REAL_EQUIVALENT = ("relative-paths", "attempt-completion-once")


def shipped_kilo_check(check_id: str) -> CheckSpec:
    """The first shipped Kilo instance's check ``check_id``, validated by the verifier's param schema."""
    for path in sorted(SUITES.glob("*.yaml")):
        for instance in yaml.safe_load(path.read_text())["instances"]:
            for check in instance["checks"] if instance.get("scaffold") == "kilo" else ():
                if check["id"] == check_id:
                    return CheckSpec(id=check_id, verifier=check["verifier"],
                                     params=REGISTRY.get(check["verifier"]).validate(check["params"]))
    raise AssertionError(f"no shipped Kilo check {check_id}")


def kilo_run(offered: list[dict[str, Any]], *calls: tuple[str, dict[str, Any]]) -> Trajectory:
    builder = TrajectoryBuilder(id="kilo-run", tools=offered)
    builder.system("You are Kilo Code.")
    builder.user("fix the bug")
    for n, (name, arguments) in enumerate(calls):
        builder.assistant(tool_calls=[{"id": f"c{n}", "name": name, "arguments": arguments}])
        builder.tool(f"c{n}", "ok")
    builder.assistant("Fixed.")
    return builder.build()


def verdicts(trajectory: Trajectory) -> dict[str, Any]:
    ctx = VerifyContext(registry=REGISTRY, trajectory=trajectory)
    return {o.check.id: o for o in evaluate([shipped_kilo_check(c) for c in NO_REAL_EQUIVALENT], "Fixed.", ctx)}


def test_every_kilo_check_without_a_real_equivalent_is_marked_and_gated_on_the_offer():
    seen = 0
    for path in sorted(SUITES.glob("*.yaml")):
        for instance in yaml.safe_load(path.read_text())["instances"]:
            for check in instance["checks"] if instance.get("scaffold") == "kilo" else ():
                if check["id"] in NO_REAL_EQUIVALENT:
                    seen += 1
                    where = f"{path.name}::{instance['id']}::{check['id']}"
                    assert check["params"].get("if_offered") is True, where
                    assert check["metadata"]["real_cli"].startswith("no real equivalent: "), where
                    tools = check["params"]["tool"]
                    assert not set([tools] if isinstance(tools, str) else tools) & KILO_7_TOOLS, where
    assert seen >= 2 * 7


def test_under_the_real_kilo_tools_the_checks_are_not_applicable():
    offered = [{"name": name, "parameters": {"type": "object"}} for name in sorted(KILO_7_TOOLS)]
    run = kilo_run(offered, ("read", {"filePath": "/workspace/AGENTS.md"}),
                   ("edit", {"filePath": "/workspace/src/main.c", "oldString": "a", "newString": "b"}))
    for check_id, outcome in verdicts(run).items():
        assert outcome.error is None and not outcome.applicable and not outcome.passed, (check_id, outcome.verdict)
        assert "was offered in this run" in outcome.verdict.evidence


def test_under_the_kilo_profile_the_checks_still_decide():
    offered = list(ToolRegistry().profile("kilo").specs())
    assert {"read_file", "attempt_completion"} <= {t["function"]["name"] for t in offered}
    good = verdicts(kilo_run(offered, ("read_file", {"path": "AGENTS.md"}), ("attempt_completion", {"result": "done"})))
    assert all(o.applicable and o.passed for o in good.values()), {k: o.verdict for k, o in good.items()}
    bad = verdicts(kilo_run(offered, ("read_file", {"path": "/workspace/AGENTS.md"})))
    assert all(o.applicable and not o.passed for o in bad.values()), {k: o.verdict for k, o in bad.items()}
    assert "1 forbidden call(s)" in bad["relative-paths"].verdict.evidence
    assert "0 call(s) to attempt_completion" in bad["attempt-completion-once"].verdict.evidence
