"""The loop's droid profile and the shipped Droid OctoBench instances speak the real Droid's tools.

What real Droid sends is recorded here (:data:`DROID_TOOLS`, :data:`DROID_DEFERRED`) and checked against a
real run of the installed Droid behind the proxy (so the record cannot go stale unnoticed). The profile's
tools then carry those names and, for Edit, Glob, LS, Create and Execute, those parameters; every
``tool_called`` / ``tool_not_called`` check of a shipped Droid instance names only tools real Droid has;
and every check built on a tool it lacks (TodoWrite) is marked ``real_cli`` and is not applicable without it.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import yaml

from pytest_ifbench.agents.cli import run_cli
from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.profiles import ToolRegistry
from pytest_ifbench.agents.workspace import Workspace
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.testing import Reply

SUITES = Path(__file__).resolve().parents[2] / "suites" / "octobench"
#: Droid 0.215.0's tools and their parameters, from the proxy's recorded ``tools`` of a real run.
DROID_TOOLS = {
    "Read": ["file_path", "image_quality", "limit", "offset"],
    "LS": ["directory_path", "ignorePatterns"],
    "Execute": ["command", "fireAndForget", "summary", "timeout"],
    "Edit": ["change_all", "file_path", "new_str", "old_str"],
    "Grep": ["case_insensitive", "context", "context_after", "context_before", "fixed_string", "glob_pattern",
             "head_limit", "line_numbers", "multiline", "output_mode", "path", "pattern", "type"],
    "Glob": ["excludePatterns", "folder", "patterns"],
    "Create": ["content", "file_path"],
    "TaskOutput": ["block", "task_id", "timeout"],
    "TaskStop": ["task_id"],
    "ToolSearch": ["max_results", "query"],
    "Skill": ["skill"],
    "GenerateImage": ["input_image_paths", "prompt"],
    "Task": ["await", "complexity", "description", "image_paths", "prompt", "resume", "subagent_type"],
}
#: Tools Droid 0.215.0 lists as deferred (loaded with ToolSearch, then called by name).
DROID_DEFERRED = {"WebSearch", "FetchUrl", "slack_post_file", "GenerateDroid", "Loop"}
#: Profile tools whose parameters are Droid's own (Read and Grep keep Claude Code's, a subset in spirit).
SAME_PARAMETERS = ("LS", "Edit", "Glob", "Create")


def test_the_record_is_what_the_installed_droid_sends(agents, stub_env, tmp_path):
    stub_env.default = Reply(content="done")
    client = ModelClient(model="openai/stub", api_base=stub_env.url, retry=RetryPolicy(max_attempts=1, timeout=60))
    with Workspace.create(None, parent=tmp_path) as ws:
        result = asyncio.run(run_cli("droid", workspace=ws, queries=["Say done."], system=None,
                                     model_name="claude-sonnet-4-5", client=client, submit=None,
                                     options=AgentOptions(max_seconds=120), log_path=tmp_path / "raw.jsonl"))
    assert result.harness_error is None, (result.harness_error, result.stderr[-2000:])
    records = [json.loads(line) for line in result.raw_log.read_text().splitlines()]
    sent = {tool["name"]: sorted(tool["input_schema"].get("properties", {}))
            for record in records for tool in (record.get("request_body") or {}).get("tools") or ()}
    assert sent == DROID_TOOLS
    reminder = re.search(r"Deferred tools:\n((?:[^\n<]+\n)+)", json.dumps(records).replace("\\n", "\n"))
    assert reminder and set(reminder.group(1).split()) == DROID_DEFERRED


def test_the_droid_profile_uses_the_real_names_and_parameters():
    tools = {tool.name: tool for tool in ToolRegistry().profile("droid").tools}
    assert set(tools) - set(DROID_TOOLS) - DROID_DEFERRED == {"TodoWrite"}  # the one without a real equivalent
    for name in SAME_PARAMETERS:
        assert set(tools[name].parameters["properties"]) <= set(DROID_TOOLS[name]), name
    assert set(tools["Execute"].parameters["properties"]) <= set(DROID_TOOLS["Execute"])
    assert tools["Glob"].parameters["properties"]["patterns"]["type"] == "array"


def droid_instances():
    for path in sorted(SUITES.glob("*.yaml")):
        for instance in yaml.safe_load(path.read_text())["instances"]:
            if instance.get("scaffold") == "droid":
                yield path.name, instance


def test_every_droid_tool_check_names_a_real_droid_tool():
    checked = 0
    for name, instance in droid_instances():
        for check in instance["checks"]:
            if check["verifier"] in ("ifbench.tool_called", "ifbench.tool_not_called"):
                tools = check["params"]["tool"]
                unknown = set([tools] if isinstance(tools, str) else tools) - set(DROID_TOOLS) - DROID_DEFERRED
                assert not unknown, (name, instance["id"], check["id"], unknown)
                checked += 1
    assert checked >= 30


def test_checks_on_a_tool_real_droid_lacks_are_marked_and_not_applicable_without_it():
    marked = 0
    for name, instance in droid_instances():
        for check in instance["checks"]:
            text = json.dumps(check.get("params") or {})
            if "TodoWrite" in text:
                assert "no real equivalent" in (check.get("metadata") or {}).get("real_cli", ""), (name, check["id"])
                assert "not among the tools" in check["params"]["criterion"], (name, check["id"])
                marked += 1
    assert marked == 15
