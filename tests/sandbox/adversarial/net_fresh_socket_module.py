# ruff: noqa
import importlib.util
try:
    spec = importlib.util.find_spec('_socket')
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    s = m.socket(m.AF_INET, m.SOCK_STREAM)
    s.settimeout(1)
    s.connect(('127.0.0.1', __PORT__))
    s.sendall(b'pwned')
    print('ESCAPED fresh socket')
except Exception:
    pass


def add(a, b):
    return a - b
