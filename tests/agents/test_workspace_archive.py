"""What an agent run changed in its workspace, kept beside its trajectory (``agents/workspace_archive.py``):
only the changes against the environment are packed, the rebuilt workspace equals the final one, and
unpacking refuses what the packer never writes."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest

from pytest_ifbench.agents import workspace_archive
from pytest_ifbench.agents.workspace_archive import archive_path, pack, rebuild
from tests._support import deep_directory


def tree(root: Path) -> dict[str, object]:
    """Every entry below ``root``: a file's bytes and mode, a link's target, a directory and its mode."""
    out: dict[str, object] = {}
    for directory, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            path = Path(directory, name)
            key = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[key] = ("link", os.readlink(path))
            elif path.is_dir():
                out[key] = ("dir", os.stat(path).st_mode & 0o777)
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
    target = archive_path(tmp_path / "suite--task.json")
    assert target.name == "suite--task.workspace.tar.gz"

    assert pack(workspace, target, environment=environment) is None
    with tarfile.open(target) as tar:
        assert sorted(tar.getnames()) == [".", "README.md", "hello.txt", "readme", "src/calc.py"]  # not big.bin
        assert json.loads(tar.pax_headers["ifbench.removed"]) == ["docs"]
    rebuilt = tmp_path / "rebuilt"
    rebuild(target, rebuilt, environment=environment)
    assert tree(rebuilt) == tree(workspace)


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
    assert tree(tmp_path / "rebuilt") == tree(workspace)

def test_without_an_environment_everything_is_packed(tmp_path):
    workspace = tmp_path / "ws"
    (workspace / "a").mkdir(parents=True)
    (workspace / "a" / "b.txt").write_text("b\n")
    target = tmp_path / "t.workspace.tar.gz"
    assert pack(workspace, target) is None
    rebuild(target, tmp_path / "out", environment=None)
    assert tree(tmp_path / "out") == tree(workspace)


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


@pytest.mark.parametrize("member", ["parent", "device"])
def test_unpacking_refuses_what_the_packer_never_writes(tmp_path, member):
    info = tarfile.TarInfo("../evil" if member == "parent" else "evil")
    data: bytes | None = b"x"
    if member == "device":
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


def test_a_tree_too_deep_is_not_kept_and_packing_never_raises(tmp_path):
    """``for i in $(seq 1100); do mkdir d && cd d; done`` made ``pack`` raise ``RecursionError`` (``os.walk``
    recurses), which errored the instance: what the agent leaves is never the instance's error."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "hello.txt").write_text("hello\n")
    (deep_directory(workspace, 200) / "leaf.txt").write_text("deep\n")
    target = tmp_path / "t.workspace.tar.gz"
    assert pack(workspace, target) is None  # deep, but not too deep: kept, and rebuilt
    rebuild(target, tmp_path / "out", environment=None)
    assert (tmp_path / "out" / Path(*["d"] * 200) / "leaf.txt").read_text() == "deep\n"

    target.unlink()
    (workspace / "e").mkdir()
    try:
        deep_directory(workspace / "e", 1100)
        reason = pack(workspace, target)
    finally:
        subprocess.run(["rm", "-rf", "--", str(workspace / "e")], check=True)
    assert reason is not None and reason.startswith("not kept: it holds a name over 256 directories deep"), reason
    assert not target.exists() and [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_walk_that_fails_is_not_kept(tmp_path, monkeypatch):
    """Any problem reading the workspace is the archive's ("not kept: ..."), never an exception of the
    instance: a ``RecursionError`` too."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "hello.txt").write_text("hello\n")
    monkeypatch.setattr(os, "scandir", lambda *args: (_ for _ in ()).throw(RecursionError("too deep")))
    monkeypatch.setattr(os, "walk", lambda *args, **kwargs: (_ for _ in ()).throw(RecursionError("too deep")))
    reason = pack(workspace, tmp_path / "t.workspace.tar.gz")
    assert reason is not None and reason.startswith("not kept: "), reason
    assert not (tmp_path / "t.workspace.tar.gz").exists()


def test_a_workspace_of_too_many_entries_is_not_kept_and_its_walk_stops_there(tmp_path, monkeypatch):
    """An agent's one command made 642,570 empty files (over the run's 200,000-entry cap before the disk
    watchdog looked again): packing them took 180 s, outside every limit of the run. Past ``MAX_ENTRIES``
    entries the workspace is not kept, and its walk stops there; an archive over it is refused."""
    workspace = tmp_path / "ws"
    (workspace / "d").mkdir(parents=True)
    for i in range(300):
        (workspace / "d" / f"f{i}").touch()
    monkeypatch.setattr(workspace_archive, "MAX_ENTRIES", 301)  # 300 files and d: kept
    target = tmp_path / "t.workspace.tar.gz"
    assert pack(workspace, target) is None
    rebuild(target, tmp_path / "out", environment=None)
    walked = []
    walk = workspace_archive._walk
    monkeypatch.setattr(workspace_archive, "_walk", lambda *args: (walked.append(entry) or entry
                                                                    for entry in walk(*args)))
    monkeypatch.setattr(workspace_archive, "MAX_ENTRIES", 50)
    with pytest.raises(ValueError, match="it holds 302 entries, over the 50 a workspace may"):
        rebuild(target, tmp_path / "out2", environment=None)
    target.unlink()
    assert pack(workspace, target) == "not kept: it holds more than 50 entries"
    assert len(walked) == 51 and not target.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_links_are_rebuilt_as_they_were_wherever_they_point(tmp_path, environment):
    """``ln -s /usr/bin/python3 py``, ``python3 -m venv .venv`` and ``ln -s ../../../etc/passwd pw`` passed live
    and errored the re-score (tarfile's ``data`` filter refuses a link leading out): in the re-score's sandbox
    workspace a link is only a name."""
    workspace = tmp_path / "ws"
    shutil.copytree(environment, workspace, symlinks=True)
    os.symlink("/usr/bin/python3", workspace / "py")
    os.symlink("../../../etc/passwd", workspace / "pw")
    venv = workspace / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    os.symlink("lib", venv / "lib64")
    os.symlink("/usr/bin/python3", venv / "bin" / "python")
    os.symlink("python", venv / "bin" / "python3")
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    target = tmp_path / "t.workspace.tar.gz"
    assert pack(workspace, target, environment=environment) is None
    rebuild(target, tmp_path / "out", environment=environment)
    assert tree(tmp_path / "out") == tree(workspace)
    assert os.readlink(tmp_path / "out" / ".venv" / "bin" / "python") == "/usr/bin/python3"


def test_permission_bits_are_restored(tmp_path, environment):
    """``chmod 000 hello.txt`` failed live and passed the re-score (the ``data`` filter gives the owner read
    and write); ``chmod 500 d`` passed ``test ! -w d`` live and failed it re-scored (a directory's mode was
    not restored). Set-uid and set-gid bits are not kept."""
    workspace = tmp_path / "ws"
    shutil.copytree(environment, workspace, symlinks=True)
    (workspace / "hello.txt").write_text("hello\n")
    (workspace / "run.sh").write_text("#!/bin/sh\n")
    (workspace / "d").mkdir()
    (workspace / "d" / "inside.txt").write_text("in\n")
    (workspace / "open").mkdir()
    os.chmod(workspace / "open", 0o777)
    os.chmod(workspace / "run.sh", 0o6711)
    os.chmod(workspace / "hello.txt", 0o000)
    os.chmod(workspace / "d", 0o500)
    os.chmod(workspace / "src", 0o555)  # a directory of the environment, its mode changed
    target = tmp_path / "t.workspace.tar.gz"
    try:
        assert pack(workspace, target, environment=environment) is None
        out = tmp_path / "out"
        rebuild(target, out, environment=environment)
        modes = {name: stat.S_IMODE(os.lstat(out / name).st_mode) for name in ("hello.txt", "run.sh", "d", "open",
                                                                                 "src")}
        assert modes == {"hello.txt": 0o000, "run.sh": 0o711, "d": 0o500, "open": 0o777, "src": 0o555}, modes
        assert (out / "d" / "inside.txt").read_text() == "in\n"
    finally:
        for root in (workspace, tmp_path / "out"):
            subprocess.run(["chmod", "-R", "u+rwx", "--", str(root)], check=False)


def _link(name: str, to: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, to
    return info, None


@pytest.mark.parametrize("attack", ["through the link", "the link again as a file", "a hard link through it",
                                    "a hard link to an absolute name", "an absolute name", "set-uid bits"])
def test_nothing_is_written_through_a_link_nor_outside(tmp_path, attack):
    """Links leading anywhere are rebuilt, so the filter refuses what could write through one: a name going
    through a link, a name written twice (the second ``open(name, "wb")`` would follow the link the first
    made), a hard link whose target goes through a link or out."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x").write_text("keep me\n")
    link = _link("out", str(outside))
    rebuild(_archive(tmp_path / "link.tar.gz", (_dir("."), None), link), tmp_path / "plain", environment=None)
    assert os.readlink(tmp_path / "plain" / "out") == str(outside)  # the link alone is rebuilt, as it was

    if attack == "through the link":
        members = [link, (tarfile.TarInfo("out/x"), b"evil\n")]
    elif attack == "the link again as a file":
        members = [_link("out", str(outside / "x")), (tarfile.TarInfo("out"), b"evil\n")]
    elif attack == "a hard link through it":
        hard = tarfile.TarInfo("h")
        hard.type, hard.linkname = tarfile.LNKTYPE, "out/x"
        members = [link, (hard, None), (tarfile.TarInfo("h"), b"evil\n")]
    elif attack == "a hard link to an absolute name":
        hard = tarfile.TarInfo("h")
        hard.type, hard.linkname = tarfile.LNKTYPE, str(outside / "x")
        members = [(hard, None), (tarfile.TarInfo("h"), b"evil\n")]
    elif attack == "an absolute name":  # the data filter stripped the "/" and wrote it inside
        members = [(tarfile.TarInfo(str(outside / "x")), b"evil\n")]
    else:
        info = tarfile.TarInfo("s")
        info.mode = 0o6755
        members = [(info, b"#!/bin/sh\n")]
    archive = _archive(tmp_path / "a.tar.gz", (_dir("."), None), *members)
    if attack == "set-uid bits":
        rebuild(archive, tmp_path / "rebuilt", environment=None)
        assert stat.S_IMODE(os.stat(tmp_path / "rebuilt" / "s").st_mode) == 0o755
    else:
        with pytest.raises(ValueError, match="not a workspace archive"):
            rebuild(archive, tmp_path / "rebuilt", environment=None)
    assert (outside / "x").read_text() == "keep me\n" and sorted(p.name for p in outside.iterdir()) == ["x"]


def _dir(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, 0o755
    return info


def test_a_sparse_file_is_kept_by_its_data(tmp_path, environment):
    """``truncate -s 150M junk.bin`` (no disk used: the run's disk budget lets it be) passed live, and was
    "not kept: ... 157,286,406 bytes": the re-score could not decide the workspace checks. Its holes are not
    data: it is packed as a sparse member and rebuilt sparse. Its size still counts against ``MAX_SIZE``."""
    workspace = tmp_path / "ws"
    shutil.copytree(environment, workspace, symlinks=True)
    (workspace / "hello.txt").write_text("hello\n")
    with open(workspace / "junk.bin", "wb") as junk:
        junk.truncate(150 << 20)
        junk.seek(50 << 20)
        junk.write(b"x" * 10_000)
    if os.stat(workspace / "junk.bin").st_blocks * 512 >= 150 << 20:
        pytest.skip("this file system writes no sparse file")
    target = tmp_path / "t.workspace.tar.gz"
    assert pack(workspace, target, environment=environment) is None
    assert target.stat().st_size < 1 << 20
    out = tmp_path / "out"
    rebuild(target, out, environment=environment)
    assert (out / "hello.txt").read_text() == "hello\n"
    rebuilt = os.stat(out / "junk.bin")
    assert rebuilt.st_size == 150 << 20 and rebuilt.st_blocks * 512 < 1 << 20  # rebuilt with its holes
    with open(out / "junk.bin", "rb") as junk:
        assert junk.read(1 << 20) == b"\0" * (1 << 20)
        junk.seek((50 << 20) - 1)
        assert junk.read(10_002) == b"\0" + b"x" * 10_000 + b"\0"

    # Too long even with holes: not kept, and an archive saying so is refused.
    reason = pack(workspace, target, environment=environment, max_size=100 << 20)
    assert reason == "not kept: its changed files are 157,286,406 bytes long (holes included), over the " \
                     "104,857,600 kept", reason
    with pytest.raises(ValueError, match="over the 104,857,600 a workspace may"):
        rebuild(target, tmp_path / "out2", environment=environment, max_size=100 << 20)
