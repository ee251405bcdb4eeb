"""``redis://host:port/db`` (or ``rediss://`` for TLS): a Redis database, through redis-py.

Entries are strings ``pytest-ifbench:response:<key>`` written with ``SET NX`` (the first
writer wins; a racing second one changes nothing). A password in the URL is used to
connect and never shown (:func:`..display_url`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import display_url

NAMESPACE = "pytest-ifbench:response:"


class RedisStore:
    __slots__ = ("_client", "display")

    def __init__(self, url: str) -> None:
        try:
            import redis
        except ImportError:
            raise ValueError("--ifbench-shared-cache redis://: the redis package is not installed "
                             "(pip install 'pytest-ifbench[scale]')") from None
        self.display = display_url(url)
        try:
            self._client: Any = redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=3)
        except ValueError as exc:
            raise ValueError(f"--ifbench-shared-cache: {self.display!r}: {exc}") from None

    def ping(self) -> None:
        self._client.ping()

    def keys(self) -> Iterator[str]:
        for name in self._client.scan_iter(match=f"{NAMESPACE}*", count=1000):
            yield name.decode()[len(NAMESPACE):]

    def get(self, key: str) -> bytes | None:
        return self._client.get(NAMESPACE + key)

    def put_once(self, key: str, data: bytes) -> None:
        self._client.set(NAMESPACE + key, data, nx=True)

    def close(self) -> None:
        self._client.close()


def open_store(url: str) -> RedisStore:
    return RedisStore(url)
