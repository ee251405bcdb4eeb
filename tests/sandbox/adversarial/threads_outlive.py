# ruff: noqa
import threading, time
def linger():
    time.sleep(1.5)
    try:
        open('__SENTINEL__/pwned-thread', 'w').write('late')
    except OSError:
        pass
    while True:
        pass
for _ in range(4):
    threading.Thread(target=linger, daemon=False).start()


def add(a, b):
    return a - b
