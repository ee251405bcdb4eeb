"""The shipped Kilo instances' tool checks mean the same under the loop's kilo profile and the real Kilo CLI:
every check naming a Kilo 0.x tool (the profile's) also names the real Kilo 7.7.7 tool doing the same thing,
as recorded from the proxy's ``tools`` of a real run against the stub."""

from __future__ import annotations

from pathlib import Path

import yaml

SUITES = Path(__file__).resolve().parents[3] / "suites" / "octobench"
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
