# ruff: noqa
try:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    for pid in (__DECOY_PID__, __PYTEST_PID__):
        if libc.ptrace(16, pid, 0, 0) == 0:
            print('ESCAPED ptrace', pid)
except Exception:
    pass


def add(a, b):
    return a - b
