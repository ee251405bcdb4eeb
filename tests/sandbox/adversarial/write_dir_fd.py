# ruff: noqa
import os
for d in ('__SENTINEL__', '/etc', '/'):
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        os.close(os.open('ifbench-pwned-at', os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    except OSError:
        pass


def add(a, b):
    return a - b
