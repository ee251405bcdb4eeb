# ruff: noqa
import os, signal
for pid in (__DECOY_PID__, __PYTEST_PID__, 1):
    try:
        fd = os.pidfd_open(pid)
        signal.pidfd_send_signal(fd, signal.SIGKILL)
        print('pidfd signalled', pid)
    except OSError:
        pass


def add(a, b):
    return a - b
