# ruff: noqa
for path in ('__SENTINEL__/pwned.txt', '__SENTINEL__/keep.txt', '/tmp/ifbench-pwned-open', '/etc/ifbench-pwned',
             '/root/ifbench-pwned', '/work/ifbench-pwned'):
    try:
        with open(path, 'w') as fh:
            fh.write('pwned')
        print('wrote', path)
    except OSError:
        pass


def add(a, b):
    return a - b
