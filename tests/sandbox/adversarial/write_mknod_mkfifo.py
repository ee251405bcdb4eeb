# ruff: noqa
import os, stat
for path in ('__SENTINEL__/pwned-node', '/tmp/ifbench-pwned-node', '/etc/ifbench-pwned-node'):
    for make in (lambda p: os.mknod(p, stat.S_IFREG | 0o644), os.mkfifo):
        try:
            make(path)
        except OSError:
            pass


def add(a, b):
    return a - b
