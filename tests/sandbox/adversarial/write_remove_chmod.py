# ruff: noqa
import os
for op in (lambda: os.remove('__SENTINEL__/keep.txt'), lambda: os.truncate('__SENTINEL__/keep.txt', 0),
           lambda: os.chmod('__SENTINEL__', 0o777), lambda: os.rename('__SENTINEL__/keep.txt', 'stolen'),
           lambda: os.remove('/etc/hostname'), lambda: os.rmdir('__SENTINEL__/subdir')):
    try:
        op()
    except OSError:
        pass


def add(a, b):
    return a - b
