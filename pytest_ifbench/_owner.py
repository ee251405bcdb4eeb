"""Which process owns a mark or a lease, and whether that process is gone.

An owner is written as ``"<host> <pid> <start>"``: the host name, the process id and when the
process started (clock ticks since boot, from Linux's ``/proc/<pid>/stat``; ``-`` where unknown).
The start time tells a killed process from a new one that was given its pid. Text may follow the
three fields (a lease adds a random token, so two leases of one process differ).
"""

from __future__ import annotations

import os
import socket

#: States of ``/proc/<pid>/stat`` of a process that has ended: a zombie its parent has not reaped yet
#: (an xdist worker killed with -9 stays one until the controller ends), and one being torn down.
_ENDED_STATES = frozenset({"Z", "X", "x"})


def this_process() -> str:
    """The owner text of the calling process."""
    return f"{socket.gethostname()} {os.getpid()} {started(os.getpid())}"


def gone(owner: str) -> bool | None:
    """True when ``owner`` names a process of this host that has ended -- a zombie too, which still has
    its pid -- or whose pid now names another process; False when it runs; None when this host cannot
    tell (another host's, or not an owner)."""
    fields = owner.split()
    if len(fields) < 3:
        return None
    host, pid_text, start = fields[:3]
    if host != socket.gethostname():
        return None
    try:
        pid = int(pid_text)
        os.kill(pid, 0)
    except ValueError:
        return None
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):  # alive under another user; or not a pid at all
        return False
    state, now = _stat(pid)
    return state in _ENDED_STATES or now != start


def started(pid: int) -> str:
    """When process ``pid`` started, in clock ticks since boot (Linux's /proc), or "-" where unknown."""
    return _stat(pid)[1]


def parent(pid: int) -> int | None:
    """The parent of process ``pid``; None where unknown (ended, not Linux)."""
    fields = _fields(pid)
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def _stat(pid: int) -> tuple[str, str]:
    """The state (``R``, ``S``, ``Z``...) and start time of process ``pid`` from ``/proc/<pid>/stat``;
    "-" for each where unknown."""
    fields = _fields(pid)
    try:
        return fields[0].decode("ascii", "replace"), fields[19].decode("ascii", "replace")
    except IndexError:
        return "-", "-"


def _fields(pid: int) -> list[bytes]:
    """The fields of ``/proc/<pid>/stat`` after the process's name (state, parent, ...); none where unknown.
    The name is in parentheses and may hold anything (spaces, parentheses, bytes that are not UTF-8): the
    fields are the text after its last ``)``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []
