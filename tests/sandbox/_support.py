"""Helpers shared by the sandbox tests (``from tests.sandbox._support import ...``)."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_ifbench.sandbox import SandboxLimits

#: Generous enough for a loaded machine, short enough to keep the suite quick.
FAST = SandboxLimits(timeout=5.0, cpu_seconds=5)


def memfd_holders(seconds: int) -> str:
    """A program whose eight children each hold 256 MB in a memfd (shared memory, outside RLIMIT_AS) for
    ``seconds``, printing ``held i`` when filled: what only a cgroup's memory cap can stop."""
    return f"""
import os, time
pids = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        fd = os.memfd_create(f"hold{{i}}")
        chunk = b"x" * (1 << 20)
        for _ in range(256):
            os.write(fd, chunk)
        print("held", i, flush=True)
        time.sleep({seconds})
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
"""


def live_group_members(pgid: int) -> list[int]:
    """Pids of non-zombie processes in process group ``pgid``."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    # kill() also "finds" zombies that an init process has not reaped yet.
    live = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            live.append(int(entry))
    return live


class NamedOnlyBackend:
    """A backend that can be chosen (it names itself and has no problem) but never opens a run: for
    tests of how a backend is chosen."""

    name = "fake"

    def problem(self) -> None:
        return None

    def open(self, dirs: object) -> object:
        raise NotImplementedError
