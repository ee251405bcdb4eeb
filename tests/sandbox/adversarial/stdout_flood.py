# ruff: noqa
import sys
while True:
    sys.stdout.write('x' * 65536)
    sys.stderr.write('y' * 65536)


def add(a, b):
    return a - b
