# ruff: noqa
import os
print(dict(os.environ))


def add(a, b):
    return a - b
