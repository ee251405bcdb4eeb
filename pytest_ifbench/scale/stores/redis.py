"""``redis://host:port/db`` (or ``rediss://`` for TLS): a Redis database, through redis-py.

Entries are strings ``pytest-ifbench:response:<key>`` written with ``SET NX`` (the first
writer wins; a racing second one changes nothing); a damaged one is replaced by a Lua script that
compares it first, so a good entry written meanwhile stays. The lease on a key being asked of the
model is ``pytest-ifbench:claim:<key>``, holding its owner, set with ``SET NX PX`` (Redis
expires it). Renewing it, taking over a gone owner's and ending it compare the owner first,
inside a Lua script, so a process never extends or ends a lease another has taken over. A
password in the URL is used to connect and never shown (:func:`..display_url`).

Refused for good (:meth:`RedisStore.refused`): what the server answers with an error -- NOPERM (an ACL
user that may only read), READONLY (a replica), OOM (``maxmemory`` reached), a wrong password -- but
LOADING, BUSY, TRYAGAIN and the like; a timeout or a lost connection passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from . import _never, display_url

NAMESPACE = "pytest-ifbench:response:"
CLAIMS = "pytest-ifbench:claim:"

#: KEYS[1] the lease, ARGV[1] its owner, ARGV[2] milliseconds, ARGV[3] the next owner: while the lease is
#: ARGV[1]'s, it becomes ARGV[3]'s for ARGV[2] ms (a renewal when both owners are one).
_HAND_OVER = ("if redis.call('get', KEYS[1]) == ARGV[1] then "
              "return redis.call('set', KEYS[1], ARGV[3], 'PX', ARGV[2]) end return false")
#: KEYS[1] an entry, ARGV[1] its damaged text, ARGV[2] the new one: set while it is the damaged one (or absent).
_REPLACE = ("local held = redis.call('get', KEYS[1]) "
            "if held == ARGV[1] or not held then redis.call('set', KEYS[1], ARGV[2]) return 1 end return 0")
#: KEYS[1] the lease, ARGV[1] its owner: delete it while it is the owner's.
_UNCLAIM = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


class RedisStore:
    __slots__ = ("_client", "_hand_over", "_replace", "_unclaim", "display")

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
        self._hand_over = self._client.register_script(_HAND_OVER)
        self._unclaim = self._client.register_script(_UNCLAIM)
        self._replace = self._client.register_script(_REPLACE)

    def ping(self) -> None:
        self._client.ping()

    def keys(self) -> Iterator[str]:
        for name in self._client.scan_iter(match=f"{NAMESPACE}*", count=1000):
            yield name.decode()[len(NAMESPACE):]

    def get(self, key: str) -> bytes | None:
        return self._client.get(NAMESPACE + key)

    def put_once(self, key: str, data: bytes) -> None:
        self._client.set(NAMESPACE + key, data, nx=True)

    def replace(self, key: str, data: bytes, damaged: bytes) -> bool:
        return bool(self._replace(keys=[NAMESPACE + key], args=[damaged, data]))

    def claim(self, key: str, owner: str, seconds: float, stale: Callable[[str], bool] = _never) -> bool:
        if self._client.set(CLAIMS + key, owner, nx=True, px=_milliseconds(seconds)):
            return True
        holder = self._client.get(CLAIMS + key)
        if holder is None:
            return False  # ended a moment ago: the caller asks again at its next look
        held = holder.decode("utf-8", "replace")
        if held != owner and not stale(held):  # (its own: an earlier claim whose reply was lost)
            return False  # running
        return self._swap(key, holder, owner, seconds)

    def renew(self, key: str, owner: str, seconds: float) -> bool:
        return self._swap(key, owner.encode("utf-8"), owner, seconds)

    def _swap(self, key: str, holder: bytes, owner: str, seconds: float) -> bool:
        return bool(self._hand_over(keys=[CLAIMS + key], args=[holder, _milliseconds(seconds), owner]))

    def unclaim(self, key: str, owner: str) -> None:
        self._unclaim(keys=[CLAIMS + key], args=[owner])

    def refused(self, exc: BaseException) -> bool:
        from redis import exceptions

        if isinstance(exc, exceptions.AuthenticationError | exceptions.AuthorizationError):
            return True  # (ConnectionErrors too, but for good)
        passing = exceptions.TryAgainError | exceptions.ClusterError | exceptions.AskError
        if not isinstance(exc, exceptions.ResponseError) or isinstance(exc, passing):
            return False  # a timeout, a connection refused or lost (LOADING among them), a cluster moving: passing
        return not str(exc).startswith(_PASSING)

    def close(self) -> None:
        self._client.close()


#: Errors a server answers that pass though redis-py has no class for them (a script running too long).
_PASSING = ("BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "LOADING")


def _milliseconds(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def open_store(url: str) -> RedisStore:
    return RedisStore(url)
