"""The kept workspace (``agents/workspace_archive.py``) against what an agent may leave: a special file the live
checks saw was dropped from the archive, so a re-score flipped their verdicts (it makes the workspace not
kept now); an environment file replaced by a directory made the archive unreadable at the re-score (members
are now applied in archive order, each replacing what the environment had at its name)."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import tarfile
from pathlib import Path

import pytest

from pytest_ifbench.agents.workspace_archive import pack, rebuild
from pytest_ifbench.sandbox import sandbox_problem
from tests._support import stub_args, write_agent_suite
from tests.agents.test_agent_suite import call, scripted
from tests.agents.test_workspace_archive import tree

needs_sandbox = pytest.mark.skipif(sandbox_problem() is not None, reason=f"agent sandbox: {sandbox_problem()}")


@pytest.fixture
def environment(tmp_path) -> Path:
    env = tmp_path / "env"
    (env / "src").mkdir(parents=True)
    (env / "src" / "a.py").write_text("x = 1\n")
    (env / "README.md").write_text("a workspace\n")
    (env / "docs").mkdir()
    (env / "docs" / "old.md").write_text("old\n")
    (env / "lib").mkdir()
    (env / "lib" / "keep.txt").write_text("keep\n")
    os.symlink("README.md", env / "readme")
    return env


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_a_special_file_the_agent_left_makes_the_workspace_not_kept(tmp_path, environment, kind):
    """``mkfifo build.lock out.txt``: live, ``file_exists`` saw both; the archive left them out, and the re-score
    decided the opposite (no-lock-left passed, out-exists failed). No archive can hold one a re-score's
    workspace can: the workspace is not kept, and a re-score says its workspace checks cannot be decided."""
    workspace = tmp_path / "ws"
    shutil.copytree(environment, workspace, symlinks=True)
    (workspace / "hello.txt").write_text("hello\n")
    (workspace / "lib" / "deeper").mkdir()
    if kind == "fifo":
        os.mkfifo(workspace / "lib" / "deeper" / "build.lock")
    else:
        with socket.socket(socket.AF_UNIX) as server:
            os.chdir(workspace / "lib" / "deeper")  # a socket's path is at most 107 bytes
            try:
                server.bind("build.lock")
            finally:
                os.chdir(tmp_path)
    target = tmp_path / "t.workspace.tar.gz"
    reason = pack(workspace, target, environment=environment)
    assert reason == ("not kept: it holds a special file (FIFO, socket or device), which a re-score cannot make "
                      "again: lib/deeper/build.lock"), reason
    assert not target.exists() and [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_what_replaced_an_environment_entry_is_rebuilt(tmp_path, environment):
    """``rm README.md && mkdir -p README.md/sub``: live, the run failed; the re-score errored "not a workspace
    archive: 'README.md/sub' goes through 'README.md', which is not a directory" (every member's replacement
    was decided before anything was removed). The other shapes too: a directory by a file, a link by a
    directory holding files, a directory by a link, a removal beside them."""
    workspace = tmp_path / "ws"
    shutil.copytree(environment, workspace, symlinks=True)
    os.unlink(workspace / "README.md")
    (workspace / "README.md" / "sub").mkdir(parents=True)
    (workspace / "README.md" / "sub" / "f.txt").write_text("f\n")
    shutil.rmtree(workspace / "docs")
    (workspace / "docs").write_text("now a file\n")
    os.unlink(workspace / "readme")
    (workspace / "readme" / "inner").mkdir(parents=True)
    (workspace / "readme" / "inner" / "g.txt").write_text("g\n")
    shutil.rmtree(workspace / "src")
    os.symlink("lib", workspace / "src")
    os.unlink(workspace / "lib" / "keep.txt")
    os.chmod(workspace / "README.md" / "sub", 0o500)
    target = tmp_path / "t.workspace.tar.gz"
    assert pack(workspace, target, environment=environment) is None
    rebuilt = tmp_path / "rebuilt"
    try:
        rebuild(target, rebuilt, environment=environment)
        assert tree(rebuilt) == tree(workspace)
    finally:
        for root in (workspace, rebuilt):
            if (root / "README.md" / "sub").is_dir():
                os.chmod(root / "README.md" / "sub", 0o700)


def _archive(path: Path, *members: tuple[tarfile.TarInfo, bytes | None], removed: object = ()) -> Path:
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT,
                      pax_headers={"ifbench.removed": json.dumps(removed)}) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _dir(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, 0o755
    return info


def test_replacing_member_by_member_still_refuses_a_name_written_twice(tmp_path, environment):
    """What a member replaces is the environment's, never what a member before it wrote: a forged archive
    writing ``x/y`` then ``x``, or ``README.md`` twice, is refused, and nothing outside is touched."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x").write_text("keep me\n")
    os.symlink(tmp_path / "outside", environment / "away")
    forged = [
        [(tarfile.TarInfo("x/y"), b"y"), (tarfile.TarInfo("x"), b"x")],
        [(tarfile.TarInfo("README.md"), b"one"), (tarfile.TarInfo("README.md"), b"two")],
        [(_dir("docs"), None), (tarfile.TarInfo("docs"), b"file")],
        [(tarfile.TarInfo("away/x"), b"evil")],
    ]
    for number, members in enumerate(forged):
        archive = _archive(tmp_path / f"{number}.tar.gz", *members)
        with pytest.raises(ValueError, match="written twice|goes through"):
            rebuild(archive, tmp_path / f"out{number}", environment=environment)
    assert (tmp_path / "outside" / "x").read_text() == "keep me\n"


def _verdicts(path: Path) -> tuple[str, dict[str, object]]:
    (record,) = json.loads(path.read_text())["instances"]
    return record["status"], {check["id"]: (check["passed"], check.get("error")) for check in record["checks"]}


def _rescored(pytester, stub_env) -> dict[str, object]:
    pytester.run("ifbench", "score", "--suite", "suites", "--trajectories", "traj", "--results", "rescored.json",
                 "--", *stub_args(stub_env))
    (record,) = json.loads((pytester.path / "rescored.json").read_text())["instances"]
    return record


SUITE = """
ifbench: 1
benchmark: agentdemo
defaults:
  protocol: agent
  protocol_options: {{max_steps: 4, command_timeout: 60}}
instances:
  - id: odd
    environment: env
    prompt: Leave an odd workspace.
    checks:
{checks}
"""


@needs_sandbox
def test_a_rescore_of_a_run_that_left_a_fifo_never_flips_its_verdicts(pytester, stub_env):
    checks = ("      - {id: no-lock-left, verifier: ifbench.file_exists, params: {path: build.lock, negate: true}}\n"
              "      - {id: out-exists, verifier: ifbench.file_exists, params: {path: out.txt}}")
    write_agent_suite(pytester.path, "suites/agents.yaml", SUITE.format(checks=checks))
    scripted(stub_env, [[call("bash", {"command": "mkfifo build.lock out.txt"}, 1)],
                        [call("finish", {"answer": "done"}, 2)]])
    pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-trajectories=traj")
    status, live = _verdicts(pytester.path / "ifbench-results.json")
    assert (status, live) == ("failed", {"no-lock-left": (False, None), "out-exists": (True, None)}), live

    record = _rescored(pytester, stub_env)
    assert record["status"] == "error", record  # not the opposite verdicts: an error saying why
    assert record["error"] == (
        "the run's final workspace was not kept: it holds a special file (FIFO, socket or device), which a "
        "re-score cannot make again: build.lock: its workspace checks cannot be decided again"), record["error"]


@needs_sandbox
def test_a_rescore_of_a_file_replaced_by_a_directory_gives_the_live_verdicts(pytester, stub_env):
    checks = ("      - {id: readme-dir, verifier: ifbench.workspace_command,\n"
              "         params: {command: 'test -d README.md/sub'}}\n"
              "      - {id: fixed, verifier: ifbench.file_contains, params: {path: README.md, text: fixed}}")
    write_agent_suite(pytester.path, "suites/agents.yaml", SUITE.format(checks=checks))
    scripted(stub_env, [[call("bash", {"command": "rm README.md && mkdir -p README.md/sub"}, 1)],
                        [call("finish", {"answer": "done"}, 2)]])
    pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-trajectories=traj")
    status, live = _verdicts(pytester.path / "ifbench-results.json")
    assert status == "failed" and live["readme-dir"] == (True, None) and live["fixed"][0] is False, live

    record = _rescored(pytester, stub_env)
    assert (record["status"], _verdicts(pytester.path / "rescored.json")[1]) == (status, live), record.get("error")
