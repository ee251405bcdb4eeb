"""The bubblewrap launcher, its probe, the disk walk and the TCP-to-Unix relay (_namespaces, _forward)."""

from __future__ import annotations

import ctypes
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest

from pytest_ifbench.sandbox import _namespaces as ns
from pytest_ifbench.sandbox._forward import PREAMBLE_CLI
from tests._support import free_port

PROBLEM = ns.sandbox_problem()
needs_sandbox = pytest.mark.skipif(PROBLEM is not None, reason=PROBLEM or "")
LIMITS = ns.Rlimits(cpu_seconds=10, memory_mb=512, processes=64, file_size_mb=16)


@pytest.fixture
def jail(tmp_path):
    dirs = []
    for name in ("ws", "home", "tmp"):
        path = tmp_path / name
        path.mkdir()
        if os.geteuid() == 0:
            os.chown(path, ns.SANDBOX_UID, ns.SANDBOX_UID)
        dirs.append(str(path))
    return ns.Jail(workspace=dirs[0], home=dirs[1], tmp=dirs[2])


def test_command_line_shape(jail, tmp_path):
    argv = ns.command_line(jail, ["echo", "hi"], env={"A": "1"}, rlimits=LIMITS, info_fd=9)
    assert argv[-3:] == ["--", "echo", "hi"]
    inner = argv[len(argv) - argv[::-1].index(ns._tools()["bwrap"]) - 1:]  # the last bwrap: the sandbox itself
    for flag in ("--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                 "--clearenv"):
        assert flag in inner
    assert inner[inner.index("--cap-drop") + 1] == "ALL" and inner[inner.index("--info-fd") + 1] == "9"
    assert inner[inner.index("--setenv") + 1:inner.index("--setenv") + 3] == ["A", "1"]
    assert inner[inner.index("--chdir") + 1] == ns.MOUNT and ["--proc", "/proc"] == inner[inner.index("--proc"):][:2]
    assert ["--remount-ro", "/"] == inner[inner.index("--chdir") - 2:inner.index("--chdir")]
    prlimit = argv[argv.index(ns._tools()["prlimit"]):]
    assert "--nproc=64" in prlimit and f"--as={512 << 20}" in prlimit and "--core=0" in prlimit
    if os.geteuid() == 0:  # staged by a root bubblewrap, then dropped to the sandbox uid
        assert argv[0] == ns._tools()["bwrap"] and f"--reuid={ns.SANDBOX_UID}" in argv
        assert ["--bind", jail.workspace, f"{ns.STAGE}/ws"] == argv[argv.index(jail.workspace) - 1:][:3]
        assert ["--bind", f"{ns.STAGE}/ws", ns.MOUNT] == inner[inner.index(ns.MOUNT) - 2:][:3]
    else:
        assert ["--bind", jail.workspace, ns.MOUNT] == inner[inner.index(ns.MOUNT) - 2:][:3]


def test_extra_ro_paths_are_checked(jail, tmp_path):
    def build(*paths):
        jailed = ns.Jail(workspace=jail.workspace, home=jail.home, tmp=jail.tmp, extra_ro=paths)
        return ns.command_line(jailed, ["true"], env={}, rlimits=LIMITS)

    for bad in ("relative/path", "/", "/tmp", ns.MOUNT, f"{ns.MOUNT}/x", ns.HOME, "/proc/1", "/dev/shm"):
        with pytest.raises(ValueError):
            build(bad)
    with pytest.raises(FileNotFoundError):
        build(str(tmp_path / "missing"))
    assert "/usr/bin/env" not in build("/usr/bin/env")  # already visible through /usr
    assert str(tmp_path) in build(str(tmp_path))
    with pytest.raises(ValueError):
        ns.command_line(jail, ["true"], env={"A=B": "1"}, rlimits=LIMITS)


def test_probe_reports_one_line_with_the_fix(monkeypatch):
    assert ns.sandbox_problem() is ns.sandbox_problem()  # cached
    monkeypatch.setattr(ns, "_tool_cache", {})
    monkeypatch.setattr(ns.shutil, "which", lambda name, path=None: None)
    problem = ns._diagnose()
    assert problem is not None and "\n" not in problem and "apt-get install bubblewrap" in problem


def test_tree_usage_counts_blocks_once_and_does_not_follow_links(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_bytes(b"x" * 100_000)
    os.link(tmp_path / "d" / "f", tmp_path / "hard")
    (tmp_path / "link").symlink_to("/usr")
    used = ns.tree_usage([str(tmp_path)], max_entries=100)
    assert 100_000 <= used < 200_000
    assert ns.tree_usage([str(tmp_path)], max_entries=2) is None
    assert ns.tree_usage([str(tmp_path / "gone")], max_entries=10) == 0


@needs_sandbox
def test_a_raw_command_runs_contained_and_reports_its_pid(jail, tmp_path):
    read, write = os.pipe()
    argv = ns.command_line(jail, ["/bin/sh", "-c", "id -u; echo $$; ls /"], env={"PATH": "/usr/bin:/bin"},
                           rlimits=LIMITS, info_fd=write)
    done = subprocess.run(argv, env=ns.LAUNCHER_ENV, cwd=tmp_path, capture_output=True, text=True, pass_fds=(write,),
                          timeout=30)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        info = json.loads(fh.read())
    uid, pid, *listing = done.stdout.split()
    assert done.returncode == 0 and int(uid) == (ns.SANDBOX_UID if os.geteuid() == 0 else os.getuid())
    assert int(pid) == 2 and info["child-pid"] > 2  # the shell is pid 2 in its namespace; bwrap's init is 1
    assert "workspace" in listing and "root" not in listing and "work" not in listing



@pytest.fixture
def churning_mounts(tmp_path):
    """Mounts appearing and going under a shared mount on the host, as a container engine's are (Docker
    mounts each container's overlay under its data root, which it makes shared, and unmounts it when
    the container goes). Everything is unmounted afterwards, whatever the test did."""
    churn = tmp_path / "engine"
    churn.mkdir()
    subprocess.run(["mount", "--bind", str(churn), str(churn)], check=True)
    subprocess.run(["mount", "--make-rshared", str(churn)], check=True)
    libc = ctypes.CDLL(None, use_errno=True)
    stop = threading.Event()

    def flap(worker):
        for i in itertools.count():
            if stop.is_set():
                return
            target = churn / f"c{worker}_{i % 8}"
            target.mkdir(exist_ok=True)
            libc.mount(b"overlay-like", str(target).encode(), b"tmpfs", 0, None)
            time.sleep(0.0005 * (i % 5))
            libc.umount2(str(target).encode(), 2)  # MNT_DETACH

    threads = [threading.Thread(target=flap, args=(worker,), daemon=True) for worker in range(3)]
    for thread in threads:
        thread.start()
    yield
    stop.set()
    for thread in threads:
        thread.join()
    subprocess.run(["umount", "-l", str(churn)], check=False)


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="the outer bubblewrap (and mounting on the host) needs root")
def test_a_sandbox_starts_while_a_container_engine_mounts_and_unmounts(jail, churning_mounts):
    # The outer bubblewrap used to bind the host's whole tree: a mount that went between the bind and
    # bubblewrap's remount of it failed the start ("remount ...: Invalid argument"), 8 of 40 here.
    argv = ns.command_line(jail, ["/bin/true"], env={"PATH": "/usr/bin:/bin"}, rlimits=LIMITS)
    failed = []
    for _ in range(40):
        done = subprocess.run(argv, env=ns.LAUNCHER_ENV, capture_output=True, text=True, timeout=30)
        if done.returncode:
            failed.append(done.stderr.strip())
    assert not failed, f"{len(failed)} of 40 starts failed: {failed[0]}"


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="only the outer (root) bubblewrap runs the tools")
def test_tools_outside_the_system_directories_are_reachable(jail, tmp_path, monkeypatch):
    # The outer namespace holds the system directories only: a tool elsewhere (a prlimit copied into a
    # user's directory, a setpriv found through a link there) is bound in, after the stage's /tmp.
    tools = dict(ns._tools())
    own = tmp_path / "bin"
    own.mkdir()
    shutil.copy2(tools["prlimit"], own / "prlimit")
    (own / "setpriv").symlink_to(tools["setpriv"])
    monkeypatch.setattr(ns, "_tool_cache", {**tools, "prlimit": str(own / "prlimit"),
                                            "setpriv": str(own / "setpriv")})
    argv = ns.command_line(jail, ["/bin/sh", "-c", "echo contained"], env={"PATH": "/usr/bin:/bin"}, rlimits=LIMITS)
    done = subprocess.run(argv, env=ns.LAUNCHER_ENV, capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout) == (0, "contained\n"), done.stderr

# --- the relay ----------------------------------------------------------------------------------------

def _unix_echo_server(path):
    """Echo each connection back, upper-cased, after the client half-closes; counts connections (the
    relay's first line, which says the connection is its command's own, is checked and not echoed)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(16)
    served = []

    def handle(conn):
        with conn:
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
            if not data.startswith(PREAMBLE_CLI):
                return
            data = data[len(PREAMBLE_CLI):]
            conn.sendall(data.upper())
        served.append(len(data))

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return server, served


def _relay(port, sock, *command, options=()):
    return subprocess.run([sys.executable, "-I", "-S", "-B", ns.FORWARDER, *options, str(port), str(sock), "--",
                           *command], capture_output=True, text=True, timeout=60)


def test_relay_forwards_concurrent_connections_with_half_close(tmp_path):
    sock = tmp_path / "s.sock"
    server, served = _unix_echo_server(sock)
    port = free_port()
    client = (
        "import socket, threading\n"
        "out = {}\n"
        "def one(i):\n"
        f"    c = socket.create_connection(('127.0.0.1', {port}))\n"
        "    c.sendall(b'abc%d' % i * 200000); c.shutdown(socket.SHUT_WR)\n"
        "    data = b''\n"
        "    while chunk := c.recv(65536): data += chunk\n"
        "    out[i] = data == (b'ABC%d' % i * 200000)\n"
        "ts = [threading.Thread(target=one, args=(i,)) for i in range(5)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "print(sorted(out.items()))\n"
    )
    try:
        done = _relay(port, sock, sys.executable, "-c", client)
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([(i, True) for i in range(5)])
    assert sorted(served) == [800_000] * 5


def test_relay_passes_the_exit_status_and_stdio_through(tmp_path):
    sock = tmp_path / "s.sock"
    server, _ = _unix_echo_server(sock)
    try:
        done = _relay(free_port(), sock, "/bin/sh", "-c", "read x; echo out $x; echo err >&2; exit 7")
        assert (done.returncode, done.stdout, done.stderr) == (7, "out\n", "err\n")
        assert _relay(free_port(), sock, "/bin/sh", "-c", "kill -TERM $$").returncode == 128 + 15
        missing = _relay(free_port(), sock, str(tmp_path / "no-such-command"))
        assert missing.returncode == 127 and "no-such-command" in missing.stderr
    finally:
        server.close()


def _answer(tmp_path, script, *args, options=()):
    """Run ``script`` (``client.py PORT ARGS...``) behind the relay, in front of the echo server; (what
    it printed, the sizes of the requests the server was passed)."""
    sock = tmp_path / "s.sock"
    client = tmp_path / "client.py"
    client.write_text(script)
    server, served = _unix_echo_server(sock)
    port = free_port()
    try:
        done = _relay(port, sock, sys.executable, str(client), str(port), *args, options=options)
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    return done.stdout.strip(), served


#: The end of a client script: send ``hello`` on ``s``, print the first line of the answer.
HELLO = """\
s.sendall(b"hello"); s.shutdown(socket.SHUT_WR)
data = b""
try:
    while chunk := s.recv(65536): data += chunk
except ConnectionResetError:
    pass  # a refused connection: the relay answered and closed with the request unread
print(data.split(b"\\r\\n")[0].decode())
"""
#: ``client.py PORT CHILD``: a client whose socket is held by a child too (``/bin/sh -c CHILD``, the
#: socket as its fd 9), as when a CLI starts a program beside its request.
HELD_BY_A_CHILD = """\
import atexit, os, socket, subprocess, sys
s = socket.socket()
os.dup2(s.fileno(), 9)
child = subprocess.Popen(["/bin/sh", "-c", sys.argv[2]], pass_fds=[9])
atexit.register(child.kill)
os.close(9)
s.connect(("127.0.0.1", int(sys.argv[1])))
""" + HELLO


@pytest.mark.parametrize(("child", "answer"), [
    # a child that lets go of the socket at once (a program closing its close-on-exec descriptors)
    ("sleep 0.05; exec 9>&-; exec sleep 5", "HELLO"),
    # a stranger that keeps it
    ("exec sleep 5", "HTTP/1.1 403 Forbidden"),
    # a stranger that keeps it and then becomes what the launcher's child may be: a program of the
    # command's installation (the interpreter)
    (f"sleep 0.3; exec {os.path.realpath(sys.executable)} -c 'import time; time.sleep(5)'",
     "HTTP/1.1 403 Forbidden"),
], ids=["let-go", "kept", "kept-then-exec-into-the-installation"])
def test_relay_watches_a_stranger_holding_the_command_socket(tmp_path, child, answer):
    assert _answer(tmp_path, HELD_BY_A_CHILD, child, options=("--launcher",)) == (
        answer, [5] if answer == "HELLO" else [])


#: ``client.py PORT DEPTH``: DEPTH levels of processes below it (each running the same interpreter, a
#: program of the command's installation), the last of which is the client.
NESTED = """\
import socket, subprocess, sys
port, depth = sys.argv[1], int(sys.argv[2])
if depth:
    sys.exit(subprocess.call([sys.executable, __file__, port, str(depth - 1)]))
s = socket.create_connection(("127.0.0.1", int(port)))
""" + HELLO


@pytest.mark.parametrize(("depth", "options", "answer"), [
    (0, (), "HELLO"),
    (1, ("--launcher",), "HELLO"),  # Kilo: the node script's child, the native binary
    (1, (), "HTTP/1.1 403 Forbidden"),  # Claude Code: its tool commands are its children
    (2, ("--launcher",), "HTTP/1.1 403 Forbidden"),  # Kilo's tool commands
], ids=["command", "launcher-child", "child", "launcher-grandchild"])
def test_relay_takes_a_program_of_the_installation_only_as_the_command_or_a_launchers_child(
        tmp_path, depth, options, answer):
    """A tool command running a program of the CLI's installation is still a tool command: two of the
    CLIs are Bun executables that run any script given ``BUN_BE_BUN=1``."""
    assert _answer(tmp_path, NESTED, str(depth), options=options) == (answer, [5] if answer == "HELLO" else [])


#: ``client.py PORT``: starts itself as a child, which tries what would let a tool command take the CLI
#: over -- a duplicate of one of its descriptors, ptrace, its memory -- and prints each outcome.
INTRUSION = """\
import ctypes, os, subprocess, sys
if sys.argv[1] != "child":
    sys.exit(subprocess.call([sys.executable, __file__, "child"]))
libc = ctypes.CDLL(None, use_errno=True)
parent = os.getppid()
pidfd = os.pidfd_open(parent)
calls = {"pidfd_getfd": lambda: libc.syscall(438, pidfd, 0, 0),
         "ptrace": lambda: libc.ptrace(0x4206, parent, None, None),  # PTRACE_SEIZE: the parent runs on
         "process_vm_readv": lambda: libc.process_vm_readv(parent, None, 0, None, 0, 0)}
outcomes = []
for name, call in calls.items():
    ctypes.set_errno(0)
    done = call()
    outcomes.append(f"{name}={'EPERM' if done == -1 and ctypes.get_errno() == 1 else done}")
print(" ".join(outcomes))
"""


def test_relay_keeps_the_commands_processes_out_of_each_other(tmp_path):
    """All of a CLI's sandbox runs as one user: without the relay's seccomp filter a tool command could
    take a duplicate of the CLI's own connection to the relay (pidfd_getfd) and call the model on it."""
    printed, _ = _answer(tmp_path, INTRUSION)
    assert printed.split() == ["pidfd_getfd=EPERM", "ptrace=EPERM", "process_vm_readv=EPERM"]
