# ruff: noqa
while True:
    pass


def add(a, b):
    return a - b
