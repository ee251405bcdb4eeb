"""Workspaces and the adversarial corpus: every hostile command is contained, the host is unchanged,
and the next ordinary command in the same workspace still works."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from pytest_ifbench.agents.workspace import CommandResult, Limits, ProxyRoute, SandboxUnavailable, Workspace
from pytest_ifbench.sandbox import make_backend, use_backend
from tests.sandbox._support import (
    Sampler,
    container_pid,
    memfd_holders,
    memory_files,
    relay_echo,
    shared_memory_to_myself,
)
from tests.sandbox.dockerd import private_engine

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (commands then run as another uid)")

#: A uid no other test or process uses, so its host processes can be counted exactly.
COUNTED_UID = 64123
QUICK = Limits(timeout=20.0)


@pytest.fixture(scope="module")
def docker_host():
    with private_engine("dockerd") as host:
        yield host


@pytest.fixture(params=["bubblewrap", "docker"])
def backend(request, monkeypatch):
    """Every test of the corpus runs against each backend, with the same expectations."""
    if request.param == "docker":
        monkeypatch.setenv("DOCKER_HOST", request.getfixturevalue("docker_host"))
    chosen = make_backend(request.param)
    problem = chosen.problem()
    if problem is not None:
        pytest.skip(problem)
    return chosen


@pytest.fixture
def ws(tmp_path, backend):
    with Workspace.create(None, parent=tmp_path, backend=backend) as workspace:
        yield workspace


def still_works(ws: Workspace) -> None:
    res = ws.run("echo still-$((20 + 22))", limits=QUICK)
    assert res.ok and res.stdout == "still-42\n", res


def host_pids(*, marker: str | None = None, uid: int | None = None) -> list[int]:
    """Host processes (not zombies) whose argv contains ``marker`` / whose real uid is ``uid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("State", "").strip().startswith("Z"):
            continue
        if marker is not None and marker.encode() not in cmdline:
            continue
        if uid is not None and int(fields["Uid"].split()[0]) != uid:
            continue
        found.append(int(entry))
    return found


# --- the workspace itself --------------------------------------------------------------------------

def test_state_persists_across_commands_and_the_environment_is_copied(tmp_path, backend):
    env = tmp_path / "env"
    (env / ".git").mkdir(parents=True)
    (env / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (env / "CLAUDE.md").write_text("be brief\n")
    (env / "inside").symlink_to("CLAUDE.md")
    (env / "outside").symlink_to("/etc/hostname")
    with Workspace.create(env, parent=tmp_path, backend=backend) as ws:
        assert ws.run("echo x > f", limits=QUICK).ok
        res = ws.run("cat f; cat CLAUDE.md inside; cat .git/HEAD; readlink outside; pwd; id -u", limits=QUICK)
        assert res.stdout.splitlines() == ["x", "be brief", "be brief", "ref: refs/heads/main", "/etc/hostname",
                                           "/workspace", str(ws.uid)], res
        assert (ws.path / "f").read_text() == "x\n" and (ws.path / "outside").is_symlink()
    assert (env / "CLAUDE.md").read_text() == "be brief\n" and not (env / "f").exists()


def test_two_workspaces_are_independent(tmp_path, backend):
    with (Workspace.create(None, parent=tmp_path, backend=backend) as a,
          Workspace.create(None, parent=tmp_path, backend=backend) as b):
        assert a.run("echo a > f; echo a > ~/h; echo a > /tmp/t; sleep 2 & echo started", limits=QUICK).ok
        res = b.run("ls -A . ~ /tmp; ps -e -o comm=", limits=QUICK)
        assert res.ok and "f" not in res.stdout.split() and "sleep" not in res.stdout, res
        assert a.run("cat f ~/h /tmp/t", limits=QUICK).stdout == "a\na\na\n"


def test_close_removes_everything_and_keep_keeps_it(tmp_path, backend):
    ws = Workspace.create(None, parent=tmp_path, backend=backend)
    ws.run("mkdir -p deep/er && echo x > deep/er/f && chmod 000 deep && echo y > ~/h", limits=QUICK)
    ws.close()
    ws.close()  # idempotent
    assert not ws.root.exists() and not ws.path.exists()
    with pytest.raises(RuntimeError):
        ws.run("true")
    kept = Workspace.create(None, parent=tmp_path, keep=True, backend=backend)
    with kept:
        kept.run("echo x > f", limits=QUICK)
    assert (kept.path / "f").read_text() == "x\n"
    assert sorted(p.name for p in kept.root.iterdir()) == ["home", "tmp", "workspace"]  # no quota record
    shutil.rmtree(kept.root)


def test_results_serialise_and_arun_works(ws):
    res = asyncio.run(ws.arun(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], limits=QUICK, stdin=""))
    assert (res.returncode, res.stdout, res.stderr, res.limit) == (3, "out\n", "err\n", None)
    assert CommandResult.from_json(res.to_json()) == res
    assert ws.run("cat", stdin="fed\n", limits=QUICK).stdout == "fed\n"
    assert set(ws.run(["env"], env={"EXTRA": "1", "TERM": "xterm"}, limits=QUICK).stdout.splitlines()) == {
        "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/agent", "TMPDIR=/tmp", "LANG=C.UTF-8", "TERM=xterm",
        "EXTRA=1", "PWD=/workspace"}  # bubblewrap sets PWD


def test_read_bytes_refuses_planted_links_and_fifos(ws):
    assert ws.run("mkdir d; echo data > d/out.txt; ln -s /etc/passwd link; ln -s /workspace/d dlink; mkfifo pipe",
                  limits=QUICK).ok
    assert ws.read_bytes("d/out.txt") == b"data\n"
    for planted in ("link", "dlink/out.txt"):
        with pytest.raises(OSError):
            ws.read_bytes(planted)
    with pytest.raises(ValueError):
        ws.read_bytes("pipe")
    with pytest.raises(ValueError):
        ws.read_bytes("../x")


def test_special_files_in_the_environment_are_refused(tmp_path, backend):
    env = tmp_path / "env"
    env.mkdir()
    os.mkfifo(env / "fifo")
    parent = tmp_path / "parent"
    parent.mkdir()
    with pytest.raises((ValueError, shutil.Error)):
        Workspace.create(env, parent=parent, backend=backend)
    assert not any(parent.iterdir())  # nothing half-made is left behind


class _Missing:
    """A backend that cannot run here."""

    name = "missing"

    def problem(self):
        return "the missing backend is not installed: apt-get install missing"

    def open(self, dirs):
        raise AssertionError("never opened")


def test_unavailable_sandbox_raises_the_reason(tmp_path):
    with pytest.raises(SandboxUnavailable, match="apt-get"):
        Workspace.create(None, parent=tmp_path, backend=_Missing())
    previous = use_backend(_Missing())
    try:
        with pytest.raises(SandboxUnavailable, match="apt-get install missing"):
            Workspace.create(None, parent=tmp_path)
    finally:
        use_backend(previous)
    assert not any(tmp_path.iterdir())


# --- the adversarial corpus ------------------------------------------------------------------------

@needs_root
def test_fork_bomb_is_bounded_killed_and_leaves_nothing(tmp_path, backend):
    limits = Limits(timeout=4.0, max_processes=64)
    peak = [0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], len(host_pids(uid=COUNTED_UID)))
            time.sleep(0.05)

    with Workspace.create(None, parent=tmp_path, uid=COUNTED_UID, backend=backend) as ws:
        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            res = ws.run("bomb() { bomb | bomb & }; bomb; sleep 30", limits=limits)
        finally:
            stop.set()
            sampler.join()
        assert res.limit in ("processes", "timeout") and res.returncode is None, res
        assert res.duration < limits.timeout + 3
        assert 0 < peak[0] <= limits.max_processes
        assert host_pids(uid=COUNTED_UID) == []
        still_works(ws)


def test_infinite_loop_hits_the_timeout(ws):
    res = ws.run("while :; do :; done", limits=Limits(timeout=1.5))
    assert res.limit == "timeout" and res.returncode is None and res.duration < 4.5, res
    still_works(ws)


def test_cpu_limit(ws):
    res = ws.run("while :; do :; done", limits=Limits(timeout=20, cpu_seconds=1))
    assert res.limit == "cpu" and res.returncode == 128 + 24 and res.duration < 10, res
    still_works(ws)


def test_huge_allocation_hits_the_memory_limit(ws):
    res = ws.run("python3 -c 'b = bytearray(8 << 30); print(len(b))'", limits=Limits(timeout=20, memory_mb=512))
    assert res.limit == "memory" and res.returncode != 0 and "MemoryError" in res.stderr, res
    still_works(ws)


@needs_root
def test_writes_outside_land_only_in_private_dirs_or_fail(ws):
    marker = f"ifbench-marker-{uuid.uuid4().hex}"
    res = ws.run(
        f"echo h > $HOME/{marker}; echo t > /tmp/{marker}; "
        f"for d in /root /etc /work/main /usr {os.getcwd()}; do "
        f"  (mkdir -p $d && echo x > $d/{marker}) 2>/dev/null && echo WROTE $d; done; echo done",
        limits=QUICK)
    # Only a checkout under /tmp can be "written": it is then the sandbox's private /tmp (checked below).
    wrote = [line.split(" ", 1)[1] for line in res.stdout.split("\n") if line.startswith("WROTE ")]
    assert res.stdout.strip().endswith("done") and all(d == "/tmp" or d.startswith("/tmp/") for d in wrote), res
    assert (ws.home / marker).read_text() == "h\n" and (ws.tmp / marker).read_text() == "t\n"
    for d in ("/root", "/etc", "/work/main", "/usr", "/tmp", os.path.expanduser("~"), os.getcwd()):
        assert not os.path.exists(os.path.join(d, marker)), d
    still_works(ws)


@needs_root
def test_other_users_files_are_unreadable(ws, tmp_path):
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    secrets.chmod(0o755)
    for name, owner in (("root-only", 0), ("other-user", 4321)):
        path = secrets / name
        path.write_text("SECRET\n")
        path.chmod(0o600)
        os.chown(path, owner, owner)
    res = ws.run(f"ls {secrets}; cat {secrets}/root-only {secrets}/other-user /etc/shadow; ls /root",
                 limits=QUICK, extra_ro=[secrets])
    assert "root-only" in res.stdout and "SECRET" not in res.stdout + res.stderr, res
    assert res.stderr.count("Permission denied") == 3 and "/root" in res.stderr, res
    still_works(ws)


def test_network_is_unreachable(ws):
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        server.settimeout(0.5)
        res = ws.run(f"(exec 3<>/dev/tcp/127.0.0.1/{port}) && echo CONNECTED; "
                     "(exec 3<>/dev/tcp/1.1.1.1/80) && echo CONNECTED; "
                     "python3 -c 'import socket; socket.getaddrinfo(\"example.com\", 80)' 2>&1 | tail -1",
                     limits=QUICK)
        assert "CONNECTED" not in res.stdout, res
        assert "Connection refused" in res.stderr and "unreachable" in res.stderr, res
        assert "gaierror" in res.stdout, res
        with pytest.raises(TimeoutError):
            server.accept()
    still_works(ws)


def test_background_processes_do_not_outlive_the_command(ws):
    marker = f"ifbench-bg-{uuid.uuid4().hex[:12]}"
    sleeper = f"bash -c 'exec -a {marker} sleep 1000'"
    res = ws.run(f"{sleeper} & nohup {sleeper} >/dev/null 2>&1 & setsid {sleeper} & "
                 f"( ( {sleeper} & ) & ) ; {sleeper} & disown; sleep 0.3; ps -e -o args= | grep -c {marker}",
                 limits=QUICK)
    assert res.ok and int(res.stdout.split()[-1]) >= 5 and res.duration < 10, res
    assert host_pids(marker=marker) == []
    still_works(ws)


def test_killing_the_parents_changes_nothing_outside(ws):
    res = ws.run(f"kill -9 1; echo after-init $?; kill -9 {os.getpid()}; echo pytest $?; "
                 "sleep 100 & kill -9 -1; echo survived; ls /proc | grep -c '^[0-9]'", limits=QUICK)
    lines = res.stdout.splitlines()
    assert lines[0].startswith("after-init") and lines[1] == "pytest 1" and lines[2] == "survived", res
    assert int(lines[3]) <= 6, res  # pid 1, the shell, ls, grep (and a zombie): no host process is there
    assert res.returncode == 0
    still_works(ws)


def test_host_processes_are_invisible(ws):
    res = ws.run(f"cat /proc/{os.getppid()}/environ /proc/{os.getpid()}/environ; ls /proc/{os.getpid()}; "
                 "ps -e -o pid=", limits=QUICK)
    assert res.stderr.count("No such file") == 3, res
    pids = sorted(int(pid) for pid in res.stdout.split())
    # bwrap's init, bash, ps; docker: its init, the command's supervisor, bash, ps
    assert pids[0] == 1 and len(pids) <= (3 if ws.backend.name == "bubblewrap" else 4) and os.getpid() not in pids, res
    still_works(ws)


def test_huge_output_is_cut(ws):
    limits = Limits(timeout=20, max_output_bytes=100_000)
    res = ws.run("yes; yes >&2", limits=limits)
    assert res.limit == "output" and res.returncode is None and len(res.stdout.encode()) == 100_000, res.limit
    assert res.duration < 10
    still_works(ws)


def test_filling_the_disk_is_stopped(ws):
    limits = Limits(timeout=30, max_workspace_mb=40, max_file_mb=16)
    res = ws.run("head -c 100M /dev/zero > big", limits=limits)
    assert res.limit == "disk" and os.path.getsize(ws.path / "big") == 16 << 20, res
    res = ws.run("for i in $(seq 200); do head -c 15M /dev/zero > f$i; done; sleep 10", limits=limits)
    assert res.limit == "disk" and res.returncode is None and res.duration < 8, res
    assert ws.run("true", limits=limits).limit == "disk"  # still over budget: reported until cleaned up
    res = ws.run("rm -f f* big; echo cleaned", limits=limits)
    assert res.ok and res.stdout == "cleaned\n", res
    still_works(ws)


def test_parallel_preallocation_stays_within_the_quota(ws):
    """Eight parallel ``fallocate -l 20M``, each within a 64 MiB budget, 160 MB together: instant, so a
    watchdog walk comes too late (the whole 160 MB landed before: 4 GB with 8 x 500M in a 1 GiB budget);
    the run's tmpfs quota (root) makes the kernel refuse what does not fit."""
    from pytest_ifbench.sandbox.backends._quota import available, quota_bytes

    if not available():
        pytest.skip("the kernel quota needs root; without it only the watchdog checks the budget")
    limits = Limits(timeout=30, max_workspace_mb=64, max_file_mb=1024)
    res = ws.run("for i in 1 2 3 4 5 6 7 8; do fallocate -l 20M f$i & done; wait", limits=limits)
    allocated = sum(p.lstat().st_blocks * 512 for p in ws.path.iterdir())
    assert allocated <= quota_bytes(64 << 20), allocated
    assert "No space left on device" in res.stderr, res  # the kernel refused the rest
    if allocated > 64 << 20:  # how many fit depends on the race; over the budget is always reported
        assert res.limit == "disk", res
    assert ws.run("rm -f f*; echo cleaned", limits=limits).ok
    still_works(ws)


def test_too_many_files_count_as_disk(ws):
    limits = Limits(timeout=30, max_workspace_entries=500)
    res = ws.run("for i in $(seq 2000); do : > f$i; done; echo made", limits=limits)
    assert res.limit == "disk", res
    assert ws.run("rm -f f*; echo cleaned", limits=limits).ok
    still_works(ws)


def test_namespace_escapes_fail(ws):
    res = ws.run("unshare -U true; echo userns $?; unshare -m true; echo mntns $?; unshare -n true; echo netns $?; "
                 "mount -t tmpfs none /tmp; echo mount $?; nsenter -t 1 -m true; echo setns $?; "
                 "python3 -c 'import ctypes; print(\"unshare\", ctypes.CDLL(None).unshare(0x10000000))'; "
                 "grep -E 'CapEff|NoNewPrivs' /proc/self/status | tr -s '\\t' ' '", limits=QUICK)
    got = dict(line.split(" ", 1) for line in res.stdout.splitlines())
    assert all(got[k] != "0" for k in ("userns", "mntns", "netns", "mount", "setns")), res
    assert got["unshare"] == "-1" and got["CapEff:"] == "0000000000000000" and got["NoNewPrivs:"] == "1", res
    still_works(ws)


def test_parent_environment_does_not_leak(ws, monkeypatch):
    monkeypatch.setenv("FAKE_API_KEY", "sk-fake-do-not-leak")
    res = ws.run("env; cat /proc/*/environ | tr '\\0' '\\n'", limits=QUICK)
    assert res.ok and "sk-fake-do-not-leak" not in res.stdout and "FAKE_API_KEY" not in res.stdout, res
    assert "HOME=/home/agent" in res.stdout


# --- the one way out ----------------------------------------------------------------------------------

def test_proxy_route_reaches_the_unix_socket_and_nothing_else(ws, tmp_path):
    sock = tmp_path / "proxy.sock"
    route = ProxyRoute(socket=sock, port=8377)
    script = (
        "import os, socket, urllib.request\n"
        "body = b'x' * 3000000 + b'END'\n"
        "req = urllib.request.Request(os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', data=body,\n"
        "                             headers={'x-api-key': 'sk-dummy'})\n"
        "reply = urllib.request.urlopen(req, timeout=20).read()\n"
        "print(reply[:11], len(reply))\n"
        "for host, port in (('127.0.0.1', PORT), ('1.1.1.1', 443)):\n"
        "    try:\n"
        "        socket.create_connection((host, port), timeout=3); print('CONNECTED', host)\n"
        "    except OSError as exc:\n"
        "        print('blocked', host, type(exc).__name__)\n"
    )
    with socket.create_server(("127.0.0.1", 0)) as tcp:
        tcp.settimeout(0.5)
        with relay_echo(sock, reply=lambda body: b"proxied:" + body[::-1]) as server:
            res = ws.run(["python3", "-c", script.replace("PORT", str(tcp.getsockname()[1]))],
                         env={"ANTHROPIC_BASE_URL": route.url}, route=route, limits=QUICK)
        with pytest.raises(TimeoutError):
            tcp.accept()
    assert res.ok, res
    assert res.stdout.splitlines() == ["b'proxied:DNE' 3000011", "blocked 127.0.0.1 ConnectionRefusedError",
                                       "blocked 1.1.1.1 OSError"], res
    assert server.seen == [("/v1/messages", "sk-dummy", 3000003)]
    assert server.preambles == [b"IFBENCH-RELAY cli\n"]
    res = ws.run("(exec 3<>/dev/tcp/127.0.0.1/8377) && echo CONNECTED", limits=QUICK)  # no route: gone
    assert "CONNECTED" not in res.stdout
    still_works(ws)


# --- what only cgroups can cap --------------------------------------------------------------------

MEMFD = memfd_holders(30)


def test_shared_memory_held_by_many_processes_stays_within_the_memory_cap(ws):
    """8 processes x 256 MB of memfd (2 GB of shared memory, each process far below RLIMIT_AS)."""
    if ws.backend.name == "bubblewrap":
        pytest.skip("bubblewrap has no cgroup: shared memory is not capped there (docs/agents.md)")
    limits = Limits(timeout=40, run_memory_mb=512)
    assert ws.run("true", limits=limits).ok  # the container exists, with the cap
    usage, _ = memory_files(container_pid())
    with shared_memory_to_myself(), Sampler(lambda: int(usage.read_text())) as cgroup:
        res = ws.run(["python3", "-c", MEMFD], limits=limits)
    assert res.limit == "memory" and res.returncode != 0, res
    assert res.stdout.count("held") < 8, res
    assert 0 < cgroup.peak <= 512 << 20, cgroup.peak
    still_works(ws)


#: A process that mounts a quota at ARGV[1] and waits to be killed.
HOLD_A_QUOTA = """\
import sys, time
from pathlib import Path
from pytest_ifbench.sandbox.backends._quota import TmpfsQuota
TmpfsQuota(Path(sys.argv[1]), 1 << 20)
print("mounted", flush=True)
time.sleep(60)
"""


def test_a_quota_left_by_a_killed_process_is_released_by_the_next_one(tmp_path):
    """``kill -9`` (an interrupted run, resumed from the cache) cannot unmount its workspaces' quotas."""
    from pytest_ifbench.sandbox.backends import _quota

    if not _quota.available():
        pytest.skip("the kernel quota needs root")
    parent = tmp_path / "runs"
    parent.mkdir()
    killed, alive = parent / "ifbench-ws-killed", parent / "ifbench-ws-alive"
    holders = []
    for root in (killed, alive):
        root.mkdir()
        holders.append(subprocess.Popen([sys.executable, "-c", HOLD_A_QUOTA, str(root)], stdout=subprocess.PIPE,
                                        text=True))
        assert holders[-1].stdout.readline() == "mounted\n"
    holders[0].kill()
    holders[0].wait()
    try:
        assert sorted(_quota._quota_mounts(parent)) == [str(alive), str(killed)]
        mine = parent / "ifbench-ws-mine"
        mine.mkdir()
        quota = _quota.TmpfsQuota(mine, 1 << 20)  # this process's first quota in parent sweeps it
        try:
            assert sorted(_quota._quota_mounts(parent)) == [str(alive), str(mine)] and not killed.exists()
            assert _quota.reap_stale(parent) == []  # the living keep theirs
        finally:
            quota.release(keep=False)
    finally:
        holders[1].kill()
        holders[1].wait()
        assert _quota.reap_stale(parent) == [str(alive)]


@pytest.mark.parametrize(("start", "released"), [(12345, True), ("not a number", False), (None, True)],
                         ids=["ended", "damaged", "start-unknown"])
def test_a_quota_whose_owner_record_names_an_ended_process_is_released_and_a_damaged_one_is_kept(
        tmp_path, start, released):
    """The owner record of a quota (host, pid, start time) names a process that has ended: released. A record
    whose start time is not a number cannot be told apart from a live owner's: left mounted (as a lease with a
    damaged owner is only left to run out)."""
    import json

    from pytest_ifbench.sandbox.backends import _quota

    if not _quota.available():
        pytest.skip("the kernel quota needs root")
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # its pid names no process now
    parent = tmp_path / "runs"
    root = parent / "ifbench-ws-forged"
    root.mkdir(parents=True)
    quota = _quota.TmpfsQuota(root, 1 << 20)
    try:
        record = {"host": socket.gethostname(), "pid": child.pid, "start": start}
        (root / _quota.OWNER).write_text(json.dumps(record))
        assert _quota.reap_stale(parent) == ([str(root)] if released else [])
        assert os.path.ismount(root) is not released
    finally:
        quota.release(keep=False)
