"""What an agent run changed in its workspace, kept beside its trajectory (``agents/workspace_archive.py``):
only the changes against the environment are packed, the rebuilt workspace equals the final one, and
unpacking refuses what the packer never writes."""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from pytest_ifbench.agents.workspace_archive import archive_path, pack, rebuild


def _tree(root: Path) -> dict[str, object]:
    """Every entry below ``root``: a file's bytes and mode, a link's target, a directory."""
    out: dict[str, object] = {}
    for directory, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            path = Path(directory, name)
            key = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[key] = ("link", os.readlink(path))
            elif path.is_dir():
                out[key] = "dir"
            else:
                out[key] = (path.read_bytes(), os.stat(path).st_mode & 0o777)
    return out


@pytest.fixture
def environment(tmp_path) -> Path:
    env = tmp_path / "env"
    (env / "src").mkdir(parents=True)
    (env / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (env / "README.md").write_text("calc\n")
    (env / "docs").mkdir()
    (env / "docs" / "old.md").write_text("old\n")
    (env / "big.bin").write_bytes(os.urandom(4096))
    os.symlink("README.md", env / "readme")
    return env


def test_only_the_changes_are_packed_and_the_rebuild_is_the_final_workspace(tmp_path, environment):
    workspace = tmp_path / "ws"
    shutil.copytree(environment, workspace, symlinks=True)
    (workspace / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")  # same size, other bytes
    (workspace / "hello.txt").write_text("hello\n")
    os.chmod(workspace / "README.md", 0o600)
    shutil.rmtree(workspace / "docs")
    os.unlink(workspace / "readme")
    (workspace / "readme").mkdir()  # a directory where a link was
    os.mkfifo(workspace / "pipe")
    target = archive_path(tmp_path / "suite--task.json")
    assert target.name == "suite--task.workspace.tar.gz"

    assert pack(workspace, target, environment=environment) is None
    with tarfile.open(target) as tar:
        assert sorted(tar.getnames()) == [".", "README.md", "hello.txt", "readme", "src/calc.py"]  # not big.bin
        assert json.loads(tar.pax_headers["ifbench.removed"]) == ["docs"]
    rebuilt = tmp_path / "rebuilt"
    rebuild(target, rebuilt, environment=environment)
    os.unlink(workspace / "pipe")  # never packed: the checks refuse special files anyway
    assert _tree(rebuilt) == _tree(workspace)


@pytest.mark.parametrize("change", ["nothing", "a removal only"])
def test_a_run_that_added_nothing_is_rebuilt(tmp_path, environment, change):
    """An archive with no member (its header alone, a run that changed nothing or only removed) could not be
    read back: the re-score errored "not a workspace archive: end of file header"."""
    workspace = tmp_path / "ws"
    shutil.copytree(environment, workspace, symlinks=True)
    if change != "nothing":
        os.unlink(workspace / "big.bin")
    target = tmp_path / "t.workspace.tar.gz"
    assert pack(workspace, target, environment=environment) is None
    rebuild(target, tmp_path / "rebuilt", environment=environment)
    assert _tree(tmp_path / "rebuilt") == _tree(workspace)

def test_without_an_environment_everything_is_packed(tmp_path):
    workspace = tmp_path / "ws"
    (workspace / "a").mkdir(parents=True)
    (workspace / "a" / "b.txt").write_text("b\n")
    target = tmp_path / "t.workspace.tar.gz"
    assert pack(workspace, target) is None
    rebuild(target, tmp_path / "out", environment=None)
    assert _tree(tmp_path / "out") == _tree(workspace)


def test_changes_over_the_limit_are_not_packed(tmp_path, environment):
    workspace = tmp_path / "ws"
    shutil.copytree(environment, workspace, symlinks=True)
    (workspace / "new.bin").write_bytes(b"x" * 2048)
    target = tmp_path / "t.workspace.tar.gz"
    assert pack(workspace, target, environment=environment, max_bytes=4000) is None  # big.bin is not a change
    reason = pack(workspace, target, environment=environment, max_bytes=1024)
    assert reason == "not kept: its changes hold 2,048 bytes of files, over the 1,024 kept"


def _archive(path: Path, *members: tuple[tarfile.TarInfo, bytes | None], removed: object = ()) -> Path:
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT,
                      pax_headers={"ifbench.removed": json.dumps(removed)}) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


@pytest.mark.parametrize("member", ["parent", "link-out", "device"])
def test_unpacking_refuses_what_the_packer_never_writes(tmp_path, member):
    info = tarfile.TarInfo("../evil" if member == "parent" else "evil")
    data: bytes | None = b"x"
    if member == "link-out":
        info.type, info.linkname, data = tarfile.SYMTYPE, "/etc/shadow", None
    elif member == "device":
        info.type, info.devmajor, info.devminor, data = tarfile.CHRTYPE, 1, 3, None
    archive = _archive(tmp_path / "a.tar.gz", (info, data))
    with pytest.raises(ValueError):
        rebuild(archive, tmp_path / "out", environment=None)
    assert not (tmp_path / "evil").exists()


@pytest.mark.parametrize("removed", [["../outside"], ["/etc/passwd"], "docs", [1]])
def test_a_removed_name_outside_the_workspace_is_refused(tmp_path, removed):
    (tmp_path / "outside").write_text("keep me\n")
    archive = _archive(tmp_path / "a.tar.gz", removed=removed)
    with pytest.raises(ValueError):
        rebuild(archive, tmp_path / "out", environment=None)
    assert (tmp_path / "outside").read_text() == "keep me\n"


def test_nothing_is_removed_through_a_link_of_the_environment(tmp_path):
    """A forged archive naming ``link/x``, where the environment's ``link`` leads out of it."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x").write_text("keep me\n")
    environment = tmp_path / "env"
    environment.mkdir()
    os.symlink(tmp_path / "outside", environment / "link")
    for archive in (_archive(tmp_path / "a.tar.gz", removed=["link/x"]),
                    _archive(tmp_path / "b.tar.gz", (tarfile.TarInfo("link/x"), b"evil"))):
        with pytest.raises(ValueError):
            rebuild(archive, tmp_path / archive.name.replace(".", "-"), environment=environment)
    assert (tmp_path / "outside" / "x").read_text() == "keep me\n"


def test_unpacking_refuses_a_bomb_and_garbage(tmp_path):
    archive = _archive(tmp_path / "a.tar.gz", (tarfile.TarInfo("big"), b"\0" * 4096))
    with pytest.raises(ValueError, match="over the 1,024 a workspace may"):
        rebuild(archive, tmp_path / "out", environment=None, max_bytes=1024)
    (tmp_path / "junk.tar.gz").write_bytes(b"not gzip")
    with pytest.raises(ValueError, match="not a workspace archive"):
        rebuild(tmp_path / "junk.tar.gz", tmp_path / "out2", environment=None)
