"""Which process owns a mark or a lease, and whether that process is gone.

An owner is written as ``"<host> <pid> <start>"``: the host name, the process id and when the
process started (clock ticks since boot, from Linux's ``/proc/<pid>/stat``; ``-`` where unknown).
The start time tells a killed process from a new one that was given its pid. Text may follow the
three fields (a lease adds a random token, so two leases of one process differ).
"""

from __future__ import annotations

import os
import socket


def this_process() -> str:
    """The owner text of the calling process."""
    return f"{socket.gethostname()} {os.getpid()} {started(os.getpid())}"


def gone(owner: str) -> bool | None:
    """True when ``owner`` names a process of this host that has ended (or whose pid now names another
    process); False when it runs; None when this host cannot tell (another host's, or not an owner)."""
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
    return started(pid) != start


def started(pid: int) -> str:
    """When process ``pid`` started, in clock ticks since boot (Linux's /proc), or "-" where unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "-"
