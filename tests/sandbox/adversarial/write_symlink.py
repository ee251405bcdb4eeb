# ruff: noqa
import os
for i, target in enumerate(('__SENTINEL__/keep.txt', '/etc/hostname', '/tmp/ifbench-pwned-link')):
    try:
        os.symlink(target, f'link{i}')
        with open(f'link{i}', 'w') as fh:
            fh.write('pwned')
    except OSError:
        pass


def add(a, b):
    return a - b
