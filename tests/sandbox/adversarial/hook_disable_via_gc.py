# ruff: noqa
import gc
for obj in gc.get_objects():
    if type(obj).__name__ == "function" and obj.__name__ == "hook" and obj.__closure__:
        for cell in obj.__closure__:
            v = cell.cell_contents
            if isinstance(v, list) and v == [False]:
                v[0] = True          # 'busy': write checks off
            if isinstance(v, frozenset):
                cell.cell_contents = frozenset()
for path in ('__SENTINEL__/pwned-hook', '/tmp/ifbench-pwned-hook', '/etc/ifbench-pwned-hook'):
    try:
        open(path, 'w').write('pwned')
    except OSError:
        pass
import socket
try:
    socket.create_connection(('127.0.0.1', __PORT__), timeout=1).sendall(b'pwned')
    print('ESCAPED network after hook')
except OSError:
    pass


def add(a, b):
    return a - b
