"""Who owns what a backend leaves on the host: a process of this host, told apart from a later one
that was given the same pid by its start time.

A pytest killed with ``-9`` cannot clean up after itself, so what it leaves (a workspace quota's
tmpfs, a container) carries its owner, and the next run's start-up releases what belongs to a
process of this host that has ended.  The pid alone is not enough: the kernel hands pids out again,
and a leftover whose pid now belongs to another process would then never be released.
(The sandbox imports nothing from the rest of the package, hence this copy of the idea in
``pytest_ifbench._owner``; the records it writes are JSON and container labels.)
"""

from __future__ import annotations

import socket

#: States of ``/proc/<pid>/stat`` of a process that has ended, a zombie its parent has not reaped included
#: (an xdist worker killed with -9 stays one while the controller runs).
_ENDED_STATES = frozenset({"Z", "X", "x"})


def start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, ``/proc/<pid>/stat``); None when there is
    no such process (or no ``/proc``), or it has ended and not been reaped yet."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return None if fields[0] in _ENDED_STATES else int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def identity(pid: int) -> dict[str, object]:
    """What identifies process ``pid`` of this host: host name, pid, start time."""
    return {"host": socket.gethostname(), "pid": pid, "start": start_time(pid)}


def ended(host: str, pid: int, start: int | None) -> bool:
    """Whether the process ``pid`` of ``host``, started at ``start`` (None: not recorded), has ended.
    Another host's processes are never known to have ended."""
    if host != socket.gethostname():
        return False
    now = start_time(pid)
    return now is None or (start is not None and now != start)
