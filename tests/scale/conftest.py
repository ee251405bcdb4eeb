"""Real stores for the shared-cache tests: a redis-server and a moto S3 server on 127.0.0.1, random ports.

Both are installed as the README says (Debian ``redis-server``; ``moto[server]`` in the dev extra); a
missing one fails the test with what to install rather than skipping it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator

import pytest

from tests._support import free_port


def _needs(binary: str, install: str) -> str:
    path = shutil.which(binary)
    if path is None:
        pytest.fail(f"{binary} is not installed ({install}; the README's test install line has it)")
    return path


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class RedisServer:
    """A fresh redis-server (no persistence) on a random port: its URL, and a way to kill it mid-test."""

    def __init__(self) -> None:
        binary = _needs("redis-server", "apt-get install redis-server")
        port = free_port()
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                         "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                _stop(self.process)
                pytest.fail("redis-server did not start")
            time.sleep(0.05)

    def kill(self) -> None:
        """``kill -9``: the store goes away without a goodbye, as a crashed or unplugged one does."""
        self.process.kill()
        self.process.wait()


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    yield server
    _stop(server.process)


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """A fresh redis-server's URL (see :class:`RedisServer`)."""
    return redis_server.url


class MotoServer:
    """A moto S3 server on a random port: its endpoint URL, and a way to kill it mid-test."""

    def __init__(self) -> None:
        binary = _needs("moto_server", "pip install 'moto[server]'")
        port = free_port()
        self.process = subprocess.Popen([binary, "-H", "127.0.0.1", "-p", str(port)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/moto-api/", timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    _stop(self.process)
                    pytest.fail("moto_server did not start")
                time.sleep(0.1)

    def kill(self) -> None:
        """``kill -9``: the store goes away without a goodbye."""
        self.process.kill()
        self.process.wait()


@pytest.fixture(scope="session")
def _moto_endpoint() -> Iterator[str]:
    server = MotoServer()
    yield server.url
    _stop(server.process)


_BUCKETS = iter(range(1, 10**6))


def _bucket(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new bucket at ``endpoint``, configured the standard way (AWS_ENDPOINT_URL, credentials); its URL."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    import boto3

    bucket = f"ifbench-cache-{next(_BUCKETS)}"
    boto3.session.Session().client("s3").create_bucket(Bucket=bucket)
    return f"s3://{bucket}/run"


@pytest.fixture
def s3_url(_moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new bucket on the session's moto S3 server."""
    return _bucket(_moto_endpoint, monkeypatch)


@pytest.fixture
def s3_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, MotoServer]]:
    """A moto S3 server of the test's own (to kill) and a bucket on it: (bucket URL, server)."""
    server = MotoServer()
    try:
        yield _bucket(server.url, monkeypatch), server
    finally:
        _stop(server.process)
