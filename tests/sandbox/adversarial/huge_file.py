# ruff: noqa
try:
    with open('big', 'wb') as fh:
        fh.seek(50 << 30)
        fh.write(b'x')
except OSError:
    pass


def add(a, b):
    return a - b
