"""Child side of the docker backend: supervise one command inside the run's container.

Started by ``docker exec`` as root of the container (capabilities SETUID, SETGID and KILL only,
no-new-privileges) with ``python3 -I -S -B _docker_exec.py REQUEST``; standard library only, never
``pytest_ifbench``.  REQUEST is a JSON file in the run's control directory (root-only, read-only):
argv, environment, uid/gid, rlimits, timeout, output cap and the file to use as stdin.

It makes itself a child subreaper, so every process the command starts -- daemons that double-fork
or call ``setsid`` included -- stays its descendant; starts the command in a new session as the
unprivileged uid with the rlimits set; copies its stdout/stderr out, each capped; and when the
command exits, the timeout passes, a cap is hit or anything arrives on its own stdin (the host's
cancel; also EOF when the host goes away), kills every descendant and reaps them.  The command runs
as another uid, so it cannot signal this process.  Its last write is a status record on stderr,
after everything of the command's: ``\\0IFBENCH-EXEC {"returncode": ..., "killed_for": ..., "cpu": ...}``.
"""

import ctypes
import json
import os
import resource
import select
import signal
import sys
import time

MARK = b"\0IFBENCH-EXEC "
_PR_SET_CHILD_SUBREAPER = 36


def _descendants(root):
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()
        if fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, stack = [], [root]
    while stack:
        for pid in children.get(stack.pop(), ()):
            found.append(pid)
            stack.append(pid)
    return found


def _reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill_tree():
    me = os.getpid()
    for _ in range(1000):
        pids = _descendants(me)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _reap()
        time.sleep(0.005)
    _reap()


def _child(req, stdin_fd, out_w, err_w):
    try:
        os.dup2(stdin_fd, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.closerange(3, 1 << 16)
        os.setsid()
        os.setgroups([])
        os.setgid(req["gid"])
        os.setuid(req["uid"])
        for name, soft, hard in req["rlimits"]:
            which = getattr(resource, name)
            ceiling = resource.getrlimit(which)[1]  # the container's: a limit is only ever made tighter
            if ceiling != resource.RLIM_INFINITY:
                soft, hard = min(soft, ceiling), min(hard, ceiling)
            resource.setrlimit(which, (soft, hard))
        os.chdir(req["cwd"])
        os.execvpe(req["argv"][0], req["argv"], req["env"])
    except BaseException as exc:  # noqa: BLE001 -- report and leave, whatever it was
        os.write(2, f"{req['argv'][0]}: {exc}\n".encode(errors="replace"))
    os._exit(127)


def main(argv):
    with open(argv[1], "rb") as fh:
        req = json.load(fh)
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    stdin_fd = os.open(req["stdin"] or "/dev/null", os.O_RDONLY)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(req, stdin_fd, out_w, err_w)
    for fd in (stdin_fd, out_w, err_w):
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    cap = req["max_output_bytes"]
    sizes = {out_r: 0, err_r: 0}
    sinks = {out_r: 1, err_r: 2}
    killed_for = None
    status = None
    rusage = None
    deadline = start + req["timeout"]
    watched = [out_r, err_r, pidfd, 0]

    def pump(fd):
        nonlocal killed_for
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            watched.remove(fd)
            return
        room = cap - sizes[fd]
        keep = chunk[:max(room, 0)]
        if keep:
            os.write(sinks[fd], keep)
            sizes[fd] += len(keep)
        if len(chunk) > room and killed_for is None:
            killed_for = "output"

    while status is None and killed_for is None:
        left = deadline - time.monotonic()
        if left <= 0:
            killed_for = "timeout"
            break
        ready, _, _ = select.select(watched, [], [], left)
        for fd in ready:
            if fd == pidfd:
                _, status, rusage = os.wait4(pid, 0)
            elif fd == 0:
                killed_for = "cancel"
                watched.remove(0)
            else:
                pump(fd)
    if status is None:
        os.kill(pid, signal.SIGKILL)
        _, status, rusage = os.wait4(pid, 0)
    _kill_tree()
    until = time.monotonic() + 2.0
    while killed_for != "output" and any(fd in watched for fd in (out_r, err_r)) and time.monotonic() < until:
        ready, _, _ = select.select([fd for fd in (out_r, err_r) if fd in watched], [], [], 0.05)
        for fd in ready:
            pump(fd)
    code = os.waitstatus_to_exitcode(status)
    record = {"returncode": code if code >= 0 else 128 - code, "killed_for": killed_for,
              "cpu": rusage.ru_utime + rusage.ru_stime, "duration": time.monotonic() - start}
    os.write(2, MARK + json.dumps(record).encode() + b"\n")


if __name__ == "__main__":
    main(sys.argv)
