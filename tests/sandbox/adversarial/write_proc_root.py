# ruff: noqa
for root in ('/proc/self/root', '/proc/1/root', '/proc/__DECOY_PID__/root'):
    try:
        with open(root + '__SENTINEL__/pwned-proc', 'w') as fh:
            fh.write('pwned')
    except OSError:
        pass


def add(a, b):
    return a - b
