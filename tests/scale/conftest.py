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


class _Server:
    """A store's server of the test's own on 127.0.0.1 and a free port: started, waited for until
    :meth:`ready`, killable. A subclass names its binary and says how to start it and ask it."""

    binary: str
    install: str
    seconds: float = 10

    def __init__(self) -> None:
        binary = _needs(self.binary, self.install)
        self.port = free_port()
        self.process = subprocess.Popen([binary, *self.arguments()], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + self.seconds
        while True:
            try:
                if self.ready():
                    return
            except OSError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                _stop(self.process)
                pytest.fail(f"{self.binary} did not start")
            time.sleep(0.05)

    def arguments(self) -> list[str]:
        raise NotImplementedError

    def ready(self) -> bool:
        raise NotImplementedError

    def kill(self) -> None:
        """``kill -9``: the store goes away without a goodbye, as a crashed or unplugged one does."""
        self.process.kill()
        self.process.wait()


class RedisServer(_Server):
    """A fresh redis-server (no persistence); ``url`` is its URL."""

    binary, install = "redis-server", "apt-get install redis-server"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def arguments(self) -> list[str]:
        return ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]

    def ready(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    yield server
    _stop(server.process)


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """A fresh redis-server's URL (see :class:`RedisServer`)."""
    return redis_server.url


class MotoServer(_Server):
    """A moto S3 server; ``url`` is its endpoint."""

    binary, install, seconds = "moto_server", "pip install 'moto[server]'", 30

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def arguments(self) -> list[str]:
        return ["-H", "127.0.0.1", "-p", str(self.port)]

    def ready(self) -> bool:
        urllib.request.urlopen(f"{self.url}/moto-api/", timeout=1).close()
        return True


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
