# ruff: noqa
import os
try:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv('/bin/sleep', ['ifbench-adv-survivor', '120'])
        os._exit(0)
except OSError:
    pass


def add(a, b):
    return a - b
