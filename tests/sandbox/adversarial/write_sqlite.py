# ruff: noqa
import sqlite3
for path in ('__SENTINEL__/pwned.db', '/tmp/ifbench-pwned.db', '/etc/ifbench-pwned.db'):
    try:
        con = sqlite3.connect(path)
        con.execute('create table t (x)')
        con.commit()
        con.close()
    except Exception:
        pass


def add(a, b):
    return a - b
