"""Child side: the sandbox's only way out -- a TCP-to-Unix-socket relay in front of the command.

Run *inside* the sandbox by file path, like :mod:`._bootstrap` (standard library
only, never ``pytest_ifbench``; Python 3.8+ so any interpreter will do)::

    python -I -S -B /run/ifbench/forward.py PORT SOCKET -- COMMAND [ARGS...]

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
"""

import os
import selectors
import socket
import subprocess
import sys

_CHUNK = 65536
#: Bytes buffered per direction before the relay stops reading from the sender.
_HIGH_WATER = 4 * _CHUNK


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

    def __init__(self, listener, target):
        self.listener = listener
        self.target = target
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
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(self.target)
        except OSError as exc:
            print(f"ifbench relay: cannot reach {self.target}: {exc}", file=sys.stderr, flush=True)
            upstream.close()
            client.close()
            return
        client.setblocking(False)
        upstream.setblocking(False)
        self._update(_Link(client, upstream))

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


def _shutdown_write(sock):
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _exit_status(returncode):
    return 128 - returncode if returncode < 0 else returncode


def main(argv):
    """``argv`` = [this file, PORT, SOCKET, "--", COMMAND, ARGS...]; never returns."""
    if len(argv) < 5 or argv[3] != "--":
        print("usage: forward.py PORT SOCKET -- COMMAND [ARGS...]", file=sys.stderr)
        os._exit(2)
    port, target, command = int(argv[1]), argv[2], argv[4:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    listener.setblocking(False)
    relay = Relay(listener, target)
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        print(f"{command[0]}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)
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
