"""The examples in examples/ work as documented."""

from __future__ import annotations

import shutil
from pathlib import Path

from pytest_ifbench.testing import Reply
from tests._support import stub_args

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_third_party_verifier_through_hook(pytester, stub_env):
    shutil.copytree(EXAMPLES, pytester.path / "examples")
    stub_env.add_rule("sea", Reply(content="The sea is wide. It is also deep."))
    result = pytester.runpytest("examples", *stub_args(stub_env), "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*examples/custom_verifier.yaml::two-sentences PASSED*"])
    assert stub_env.calls == 1, "the recorded instance needs no model"


def test_third_party_verifier_failure_message(pytester, stub_env):
    shutil.copytree(EXAMPLES, pytester.path / "examples")
    stub_env.add_rule("sea", Reply(content="The sea."))
    result = pytester.runpytest("examples", *stub_args(stub_env))
    result.stdout.fnmatch_lines(["*check 'two' failed*", "*1 sentence(s) (required 2..2)*"])


# The ready-made scale examples (examples/scale/): their shell parts, run here as the engines would run them.

SCALE = EXAMPLES / "scale"


def _k8s() -> dict:
    import yaml

    return {(doc["kind"], doc["metadata"]["name"]): doc
            for doc in yaml.safe_load_all((SCALE / "k8s-indexed-job.yaml").read_text()) if doc}


def _pod(job: dict) -> dict:
    return job["spec"]["template"]["spec"]


def _bulk(directory: Path, n: int) -> None:
    from tests._support import bulk_suite

    (directory / "suites").mkdir(parents=True)
    (directory / "suites" / "bulk.yaml").write_text(bulk_suite(n))


def _env(**extra: str) -> dict:
    import os
    import sys

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("IFBENCH_", "JOB_COMPLETION", "SLURM_", "PYTEST_", "GITHUB_", "CI_"))}
    return {**env, "PATH": f"{Path(sys.executable).parent}:{env['PATH']}", "OPENAI_API_KEY": "sk-fake", **extra}


def _local(script: str, server, results: Path) -> str:
    """An example's shell text with the model, the shared store and /results made local."""
    return (script.replace("--model=openai/gpt-4o-mini", f"--model=openai/stub --api-base={server.url} "
                           "-p no:cacheprovider --ifbench-trajectories= --ifbench-cache=cache")
            .replace("--ifbench-shared-cache=redis://ifbench-redis:6379/0", "")
            .replace(" -n 2", "").replace("/results", str(results)))


def test_examples_use_option_equals_value():
    """docs/scale.md: path options as `--opt=value` (two arguments can move pytest's rootdir)."""
    import re

    for path in SCALE.iterdir():
        text = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))
        assert not re.search(r"--(model|ifbench-[a-z-]+|alluredir)[ \\]+[\"'a-z0-9$/]", text), path.name


def test_k8s_manifest_shape():
    docs = _k8s()
    shards, merge = docs[("Job", "ifbench-shards")], docs[("Job", "ifbench-merge")]
    shard = _pod(shards)["containers"][0]
    assert shard["args"][0].startswith("exec "), "pytest must be PID 1 to get Kubernetes' SIGTERM"
    assert "/results/$IFBENCH_RUN_ID/" in shard["args"][0]
    assert _pod(merge)["serviceAccountName"] == "ifbench-merge"
    assert ("Role", "ifbench-merge") in docs and ("RoleBinding", "ifbench-merge") in docs
    wait = _pod(merge)["initContainers"][0]["args"][0]
    assert "Complete|Failed" in wait and "shard-" not in wait, "wait for the Job, not for files"
    assert "shard-*.partial.jsonl" in _pod(merge)["containers"][0]["args"][0]


def test_k8s_shard_exit_status_and_merge(tmp_path, stub_server):
    """A shard pod's command: exit 1 (instances failed) succeeds, 5 fails; the merge takes shard-*.json and
    any journal from this run's folder, and a folder without journals is no error."""
    import json
    import subprocess

    from pytest_ifbench.testing import Reply

    docs = _k8s()
    shard = _pod(docs[("Job", "ifbench-shards")])["containers"][0]["args"][0]
    merge = _pod(docs[("Job", "ifbench-merge")])["containers"][0]["args"][0]
    results = tmp_path / "results"
    _bulk(tmp_path, 6)
    stub_server.add_rule("question 4", Reply(content=""))  # q004 fails its check: pytest exits 1
    script = _local(shard, stub_server, results).replace("/run/ifbench", str(tmp_path / "run"))
    codes = [subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                            env=_env(IFBENCH_SHARDS="3", IFBENCH_RUN_ID="uid-1", JOB_COMPLETION_INDEX=str(i)))
             for i in range(3)]
    assert [c.returncode for c in codes] == [0, 0, 0], [c.stdout[-400:] for c in codes]
    assert any(" failed" in c.stdout for c in codes)
    nothing = subprocess.run(["sh", "-c", script + " -k nomatch"], cwd=tmp_path, capture_output=True,
                             env=_env(IFBENCH_SHARDS="3", IFBENCH_RUN_ID="uid-0", JOB_COMPLETION_INDEX="0"))
    assert nothing.returncode == 5, nothing.stdout
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run-id").write_text("uid-1")
    (results / "stale").mkdir()  # another run's folder on the same volume is not read
    (results / "stale" / "shard-0.json").write_text("{}")
    command = _local(merge, stub_server, results).replace("/run/ifbench", str(tmp_path / "run"))
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=_env())
    assert done.returncode == 0, done.stderr  # every shard finished: complete, failed checks and all
    merged = json.loads((results / "uid-1" / "merged.json").read_text())
    assert len(merged["instances"]) == 6 and not merged.get("not_run"), done.stderr
