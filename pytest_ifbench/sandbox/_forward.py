"""Child side: the sandbox's only way out -- a TCP-to-Unix-socket relay in front of the command.

Run *inside* the sandbox by file path, like :mod:`._bootstrap` (standard library
only, never ``pytest_ifbench``; Python 3.8+ so any interpreter will do)::

    python -I -S -B /run/ifbench/forward.py [--launcher] PORT SOCKET -- COMMAND [ARGS...]

The sandbox has its own network namespace holding nothing but a loopback
interface, so nothing outside is reachable.  When a real agent CLI must talk to
the recording proxy, the parent binds the proxy's host Unix socket into the
sandbox at ``SOCKET`` and starts the command through this relay, which

1. listens on ``127.0.0.1:PORT`` -- *before* the command starts, so the command
   never races the listener;
2. starts ``COMMAND`` with the relay's own stdin/stdout/stderr, environment and
   working directory;
3. relays every accepted connection, byte for byte and in both directions
   (half-closes included), to a fresh connection to ``SOCKET``;
4. exits with the command's status as soon as the command exits (``128 + N``
   when it died of signal ``N``, as shells and bubblewrap report it); open
   connections are cut, and the sandbox's PID namespace takes any leftover
   process down with it.

Everything runs in one thread with a ``selectors`` loop: threads count against
the sandbox's ``RLIMIT_NPROC``, and a stalled peer must only stall its own
connection.  The relay adds no path of its own: the only destination is
``SOCKET``, whatever a client sends.

Only the command's own traffic passes.  The command is an agent CLI, and the
commands *it* runs (the agent's tool calls) live in the same sandbox and could
reach ``127.0.0.1:PORT`` too.  So every accepted connection is traced to the
processes holding its client socket (``/proc/net/tcp`` gives the socket's
inode, ``/proc/<pid>/fd`` who holds it).  It is the CLI's when every holder is
the command itself or, with ``--launcher`` (a command that only starts the CLI's
program: Kilo's node script starts its native binary), a child of the command
whose executable lies in the command's installation (the ``node_modules`` tree
its executable is in).  Nothing deeper: a tool command -- a shell and
everything below it, an orphan, anything else -- fails the test even when it
runs a program of the installation (two of the CLIs are Bun executables that
run any script given ``BUN_BE_BUN=1``).  A holder that fails it but is a child
of the CLI or exiting is watched for up to 0.7 s: a child the CLI is starting
or losing holds the CLI's socket for a moment, and the connection is the CLI's
once no stranger holds it; a process that failed the test once fails it for
that connection whatever it runs next.  The CLI's connections reach ``SOCKET``
preceded by one line, ``IFBENCH-RELAY cli``; any other connection gets an
HTTP 403 from the relay itself (its bytes never leave the sandbox) and the
proxy gets a one-line notice, ``IFBENCH-RELAY refused <who>``, so the refusal
is recorded in the run's trajectory.  The proxy accepts connections from this
relay alone: it checks the connecting process (``SO_PEERCRED``) is the
sandbox's pid 2, which is this relay for as long as the sandbox lives.  The
relay makes itself non-dumpable first, so no process of the sandbox (all run
as the same user, without capabilities) can ptrace it or read its memory.
Before it starts the command it installs a seccomp filter, which the command
and everything it starts inherit: ptrace, process_vm_readv/writev and
pidfd_getfd fail with EPERM, so a tool command cannot attach to the CLI or take
a duplicate of the CLI's own connection to this relay and call the model on it
(once traced, a connection is not traced again).  No agent CLI needs them; a
``strace`` or ``gdb`` the agent runs fails.  The backends mount ``/proc``
read-only around the relay, so ``/proc/<pid>/mem`` cannot be written either
(bubblewrap, dockerd; Podman's API ignores the setting).  No secret is
involved, so none can leak into the agent's environment.

On the docker backend (``--as UID:GID``) the relay cannot be pid 2 (the container runtime's threads
take the first pids), so it runs as root of its container instead, the first child of the container's
pid 1, and starts the command as ``UID:GID``: the proxy accepts a uid-0 peer whose parent is the
namespace's pid 1, which no sandboxed command can be.  It then keeps only the capabilities that let it
read the command's fd tables (another uid): CAP_DAC_READ_SEARCH and CAP_SYS_PTRACE.
"""

import os
import selectors
import socket
import subprocess
import sys
import time

_CHUNK = 65536
#: Bytes buffered per direction before the relay stops reading from the sender.
_HIGH_WATER = 4 * _CHUNK
#: The first line of every connection to SOCKET: the CLI's own traffic follows it.
PREAMBLE_CLI = b"IFBENCH-RELAY cli\n"
#: The start of the one line telling the proxy a connection was refused (who made it follows).
PREAMBLE_REFUSED = b"IFBENCH-RELAY refused "
_FORBIDDEN = (b'{"type":"error","error":{"type":"permission_error","message":"refused by the ifbench relay: '
              b'only the agent CLI itself may call the model"}}')
_FORBIDDEN_REPLY = (b"HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nConnection: close\r\n"
                    b"Content-Length: " + str(len(_FORBIDDEN)).encode() + b"\r\n\r\n" + _FORBIDDEN)
#: Pauses (seconds, 0.7 in all) before tracing a connection again while a process other than the CLI,
#: but maybe passing through, holds its client socket (see :func:`_foreign`); the relay serves no other
#: connection meanwhile.
_SETTLE = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3)


class _Link:
    """One relayed connection: two non-blocking sockets and, per socket, the bytes waiting to be sent to it."""

    def __init__(self, a, b):
        self.peer = {a: b, b: a}
        self.pending = {a: bytearray(), b: bytearray()}
        self.eof = set()  # sockets that reached end of input
        self.registered = set()  # sockets currently registered with the selector
        self.closed = False

    def interest(self, sock):
        events = 0
        if sock not in self.eof and len(self.pending[self.peer[sock]]) < _HIGH_WATER:
            events |= selectors.EVENT_READ
        if self.pending[sock]:
            events |= selectors.EVENT_WRITE
        return events

    def finished(self):
        return len(self.eof) == 2 and not any(self.pending.values())


class Relay:
    """Accepts on ``listener``, relays each connection to ``target`` (a Unix socket path)."""

    def __init__(self, listener, target, owner=None):
        self.listener = listener
        self.target = target
        #: (pid of the command, its installation prefix, whether it is a launcher): connections are
        #: checked (see the module doc); None relays every connection unchecked (only before the
        #: command has started).
        self.owner = owner
        self.sel = selectors.DefaultSelector()
        self.sel.register(listener, selectors.EVENT_READ, None)

    def handle(self, key, mask):
        if key.fileobj is self.listener:
            self._accept()
            return
        link = key.data
        sock = key.fileobj
        try:
            if mask & selectors.EVENT_WRITE and link.pending[sock]:
                sent = sock.send(link.pending[sock])
                del link.pending[sock][:sent]
                if not link.pending[sock] and link.peer[sock] in link.eof:
                    _shutdown_write(sock)
            if mask & selectors.EVENT_READ and sock not in link.eof:
                data = sock.recv(_CHUNK)
                peer = link.peer[sock]
                if data:
                    link.pending[peer] += data
                else:
                    link.eof.add(sock)
                    if not link.pending[peer]:
                        _shutdown_write(peer)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self._close(link)
            return
        if link.finished():
            self._close(link)
        else:
            self._update(link)

    def _accept(self):
        try:
            client, _ = self.listener.accept()
        except OSError:
            return
        refused = None if self.owner is None else _foreign(client, self.listener.getsockname()[1], self.owner)
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(self.target)
        except OSError as exc:
            print(f"ifbench relay: cannot reach {self.target}: {exc}", file=sys.stderr, flush=True)
            upstream.close()
            client.close()
            return
        if refused is not None:
            _refuse(client, upstream, refused)
            return
        client.setblocking(False)
        upstream.setblocking(False)
        link = _Link(client, upstream)
        link.pending[upstream] += PREAMBLE_CLI
        self._update(link)

    def _update(self, link):
        """(Re-)register both sockets for what they wait for; one waiting for nothing is unregistered
        until its peer's events give it something to do (selectors cannot watch for no event)."""
        for sock in link.peer:
            events = link.interest(sock)
            registered = sock in link.registered
            if events and registered:
                self.sel.modify(sock, events, link)
            elif events:
                self.sel.register(sock, events, link)
                link.registered.add(sock)
            elif registered:
                self.sel.unregister(sock)
                link.registered.discard(sock)

    def _close(self, link):
        if link.closed:
            return
        link.closed = True
        for sock in link.peer:
            if sock in link.registered:
                self.sel.unregister(sock)
            sock.close()
        link.registered.clear()


def _refuse(client, upstream, who):
    """Answer ``client`` with a 403 and tell the proxy, in one line, who was refused; close both."""
    line = PREAMBLE_REFUSED + who.encode("utf-8", "replace")[:300].replace(b"\n", b" ") + b"\n"
    for sock, data in ((upstream, line), (client, _FORBIDDEN_REPLY)):
        try:
            sock.settimeout(1)
            sock.sendall(data)
        except OSError:
            pass
        sock.close()


def _client_inode(client_port, server_port):
    """The inode of the client socket of the loopback connection ``client_port`` -> ``server_port``."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if (len(fields) > 9 and int(fields[1].rsplit(":", 1)[1], 16) == client_port
                    and int(fields[2].rsplit(":", 1)[1], 16) == server_port):
                return fields[9]
    return None


def _holders(inode):
    """The pids whose file tables hold ``socket:[inode]``."""
    target = f"socket:[{inode}]"
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{name}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{name}/fd/{fd}") == target:
                    found.append(int(name))
                    break
            except OSError:
                continue
    return found


def _status(pid):
    """(parent pid, executable) of ``pid``; (0, "") when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            parent = int(fh.read().rsplit(")", 1)[1].split()[1])
        return parent, os.readlink(f"/proc/{pid}/exe")
    except (OSError, ValueError, IndexError):
        return 0, ""


def _describe(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read(160).replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        argv = "?"
    return f"pid {pid} ({argv})"


def _is_cli(pid, owner):
    """Whether ``pid`` is the command or, for a launcher, its child running a program of its installation
    (``owner``: see :attr:`Relay.owner`)."""
    command_pid, prefix, launcher = owner
    if pid == command_pid:
        return True
    if not launcher:
        return False
    parent, exe = _status(pid)
    return parent == command_pid and exe.startswith(prefix)


def _foreign(client, server_port, owner):
    """None when ``client`` (an accepted connection) is the command's own, else who made it.

    A stranger among the holders that may be passing through is looked at again after each pause of
    :data:`_SETTLE`: a child a CLI process is starting (Kilo runs ``git`` beside its requests; the
    kernel shows the new program in ``/proc/<pid>/exe`` before it closes the close-on-exec
    descriptors) or a process on its way out (no executable any more) holds the CLI's socket for a
    moment. The connection is the CLI's once no stranger holds it. A process seen as a stranger stays
    one for this connection, whatever it runs later: a launcher's child that connected before it ran a
    program of the installation (as the CLI may) did so as something else."""
    try:
        inode = _client_inode(client.getpeername()[1], server_port)
    except OSError:
        inode = None
    seen = {}  # pid -> how it looked when first seen as a stranger
    for pause in (*_SETTLE, None):
        holders = _holders(inode) if inode is not None else []
        if not holders:
            return "a connection whose client socket no process holds (already closed)"
        strangers = [pid for pid in holders if pid in seen or not _is_cli(pid, owner)]
        if not strangers:
            return None
        for pid in strangers:
            seen.setdefault(pid, _describe(pid))
        if pause is None or not any(_passing(pid, owner) for pid in strangers):
            break
        time.sleep(pause)
    return f"not the agent CLI: a connection from {seen[strangers[0]]}"


def _passing(pid, owner):
    """Whether stranger ``pid`` may hold the CLI's socket only for a moment: a child of the CLI (being
    started) or a process that has lost its executable (exiting)."""
    parent, exe = _status(pid)
    return not exe or (parent > 1 and _is_cli(parent, owner))


def installation(executable):
    """The prefix of the command's installation: up to its executable's last ``node_modules``, else its directory."""
    path = os.path.realpath(executable)
    parts = path.split("/")
    if "node_modules" in parts[:-1]:
        index = len(parts) - 1 - parts[::-1].index("node_modules")
        return "/".join(parts[:index + 1]) + "/"
    return os.path.dirname(path) + "/"


#: Per audit architecture (``AUDIT_ARCH_*``), the numbers of the syscalls that reach into another
#: process -- ptrace, process_vm_readv, process_vm_writev, pidfd_getfd -- which no process of the
#: sandbox may make (see :func:`_contain`). 32-bit programs on a 64-bit kernel have
#: their own numbers; x32 calls (numbers from ``_X32``) are refused whole.
_INTRUSIVE = {
    0xC000003E: (101, 310, 311, 438),  # x86_64
    0x40000003: (26, 347, 348, 438),  # i386
    0xC00000B7: (117, 270, 271, 438),  # aarch64
    0x40000028: (26, 376, 377, 438),  # arm
}
_NATIVE = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32 = 0x40000000
_ALLOW, _EPERM = 0x7FFF0000, 0x00050001  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM


def _intrusion_filter():
    """The seccomp filter of :func:`_contain` (classic BPF), as (code, jt, jf, k) tuples."""
    load_arch, load_nr = (0x20, 0, 0, 4), (0x20, 0, 0, 0)  # BPF_LD|BPF_W|BPF_ABS seccomp_data.arch / .nr
    program = [load_arch]
    for arch, numbers in _INTRUSIVE.items():
        x32 = [(0x35, len(numbers) + 1, 0, _X32)] if arch == 0xC000003E else []  # BPF_JGE to the refusal
        block = [load_nr, *x32]
        block += [(0x15, len(numbers) - i, 0, nr) for i, nr in enumerate(numbers)]  # BPF_JEQ to the refusal
        block += [(0x06, 0, 0, _ALLOW), (0x06, 0, 0, _EPERM)]  # BPF_RET
        program += [(0x15, 0, len(block), arch), *block]  # another architecture: skip the block
    return [*program, (0x06, 0, 0, _EPERM)]  # an architecture the kernel should never report


def _contain():
    """Make the relay non-dumpable (no process without CAP_SYS_PTRACE can ptrace it or read its memory)
    and install :func:`_intrusion_filter`, which the command and everything it starts inherit: all of
    the sandbox runs as one user, so without it a tool command could attach to the CLI or take a
    duplicate of the CLI's own connection to this relay (``pidfd_getfd``) and call the model on it
    as the CLI. None when done, else what failed (the relay then refuses to run)."""
    if os.uname().machine not in _NATIVE:
        return f"no seccomp filter for {os.uname().machine}"
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE 0
            return "cannot make itself non-dumpable"
        program = _intrusion_filter()
        filters = (ctypes.c_uint64 * len(program))(*(code | jt << 16 | jf << 24 | k << 32
                                                      for code, jt, jf, k in program))
        fprog = (ctypes.c_uint64 * 2)(len(program), ctypes.addressof(filters))  # struct sock_fprog (LP64)
        # PR_SET_NO_NEW_PRIVS (needed without CAP_SYS_ADMIN), then PR_SET_SECCOMP SECCOMP_MODE_FILTER
        if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, fprog, 0, 0) != 0:
            return f"cannot install its seccomp filter: {os.strerror(ctypes.get_errno())}"
    except (OSError, AttributeError, ImportError) as exc:
        return f"cannot contain the command: {exc}"
    return None


def _shutdown_write(sock):
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _exit_status(returncode):
    return 128 - returncode if returncode < 0 else returncode


def _start_as(ids):
    """A ``preexec_fn`` that makes the command the unprivileged ``(uid, gid)`` (no supplementary groups)."""
    uid, gid = ids

    def become():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    return become


#: CAP_DAC_READ_SEARCH and CAP_SYS_PTRACE: what lets the relay, root of its container, list and read
#: the fd tables of the command's processes (another uid) to trace each connection.
_KEPT_CAPABILITIES = (1 << 2) | (1 << 19)


def _drop_capabilities():
    """capset(2): the relay keeps only :data:`_KEPT_CAPABILITIES` (``--as`` needed SETUID/SETGID once)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        keep = _KEPT_CAPABILITIES
        data = (ctypes.c_uint32 * 6)(keep, keep, 0, 0, 0, 0)  # effective, permitted, inheritable (low words)
        return libc.capset(header, data) == 0
    except (OSError, AttributeError, ImportError):
        return False


def main(argv):
    """``argv`` = [this file, [--as UID:GID], [--launcher], PORT, SOCKET, "--", COMMAND, ARGS...]; never
    returns.

    ``--as``: the relay runs as root of a container (the docker backend) and starts the command as
    ``UID:GID``, then drops every capability but those it needs to trace connections to the command's
    processes (:data:`_KEPT_CAPABILITIES`). ``--launcher``: the command's children running a program
    of its installation are the command too (see the module doc)."""
    ids = None
    launcher = False
    while len(argv) > 1 and argv[1] in ("--as", "--launcher"):
        if argv[1] == "--launcher":
            launcher = True
            argv = argv[:1] + argv[2:]
            continue
        uid, _, gid = argv[2].partition(":") if len(argv) > 2 else ("", "", "")
        if not (uid.isdigit() and gid.isdigit()):
            break
        ids = (int(uid), int(gid))
        argv = argv[:1] + argv[3:]
    if len(argv) < 5 or argv[3] != "--":
        print("usage: forward.py [--as UID:GID] [--launcher] PORT SOCKET -- COMMAND [ARGS...]", file=sys.stderr)
        os._exit(2)
    port, target, command = int(argv[1]), argv[2], argv[4:]
    problem = _contain()
    if problem is not None:
        print(f"ifbench relay: {problem}", file=sys.stderr, flush=True)
        os._exit(2)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    listener.setblocking(False)
    relay = Relay(listener, target)
    try:
        child = subprocess.Popen(command, preexec_fn=None if ids is None else _start_as(ids))
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"{command[0]}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr, flush=True)
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)
    if ids is not None and not _drop_capabilities():
        child.kill()
        print("ifbench relay: cannot drop its capabilities", file=sys.stderr, flush=True)
        os._exit(2)
    relay.owner = (child.pid, installation(command[0]), launcher)
    pidfd = None
    try:
        pidfd = os.pidfd_open(child.pid)
        relay.sel.register(pidfd, selectors.EVENT_READ, "child")
    except (AttributeError, OSError):
        pidfd = None
    while True:
        events = relay.sel.select(None if pidfd is not None else 0.1)
        if any(key.data == "child" for key, _ in events) or child.poll() is not None:
            break
        for key, mask in events:
            if not (isinstance(key.data, _Link) and key.data.closed):  # closed by an earlier event of this batch
                relay.handle(key, mask)
    sys.stdout.flush()
    os._exit(_exit_status(child.wait()))


if __name__ == "__main__":
    main(sys.argv)
