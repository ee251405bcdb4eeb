# ruff: noqa
import socket
for attempt in range(2):
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(1)
        s.connect(('127.0.0.1', __PORT__))
        s.sendall(b'pwned')
        print('ESCAPED loopback')
    except OSError:
        pass


def add(a, b):
    return a - b
