# ruff: noqa
blocks = []
while True:
    blocks.append(bytearray(64 << 20))


def add(a, b):
    return a - b
