"""Stores a shared response cache can live in: one module per store, one line in :data:`STORES`.

A store is any object with the five methods of :class:`Store` (and, to lease keys to the process
asking the model for them, the three of :class:`Claims`; to replace a damaged entry, the one of
:class:`Repairs`; to tell a refusal from a passing failure, the one of :class:`Refusals`); its module has an
``open_store(url) -> Store`` function, imported only when a run names its scheme (so
boto3 and redis are imported only by runs that use them). A store keeps bytes under
the cache's content keys and never needs anything but its own location and the
credentials its client reads from the environment: never a model's API key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib import import_module
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit


class Store(Protocol):
    """Bytes by cache key. Any method may raise: the tier (:mod:`..tier`) turns that into one warning."""

    #: The URL without credentials, for messages.
    display: str

    def ping(self) -> None:
        """Raise when the store cannot be reached."""

    def keys(self) -> Iterator[str]:
        """Every cache key the store holds."""

    def get(self, key: str) -> bytes | None:
        """The entry, or None when the store does not hold ``key``."""

    def put_once(self, key: str, data: bytes) -> None:
        """Store ``data`` unless ``key`` is there already (entries are content-addressed: the first wins)."""

    def close(self) -> None: ...


def _never(owner: str) -> bool:
    return False


class Claims(Protocol):
    """What a store needs for processes on different machines to ask the model once for one key: a
    lease per key, taken atomically. A store without these methods still shares entries; two processes
    asking for the same key at the same moment then both pay."""

    def claim(self, key: str, owner: str, seconds: float, stale: Callable[[str], bool] = _never) -> bool:
        """Take the lease on ``key`` for ``seconds``: False while another owner's lease runs, unless
        ``stale(that owner)`` says the owner is gone (a process of this host that was killed): its lease
        is taken over then, atomically (of two takers, one wins)."""

    def renew(self, key: str, owner: str, seconds: float) -> bool:
        """Extend ``owner``'s lease on ``key``; False when it is no longer ``owner``'s (expired, taken over)."""

    def unclaim(self, key: str, owner: str) -> None:
        """End ``owner``'s lease on ``key``; another owner's lease stays."""


class Repairs(Protocol):
    """What a store needs for a damaged entry (cut short, not JSON) to be replaced by the next reply paid
    for its key. Without it the damaged entry stays, and every process that reads it pays for that key."""

    def replace(self, key: str, data: bytes, damaged: bytes) -> bool:
        """Store ``data`` in place of ``damaged``, atomically, only while ``key`` holds exactly ``damaged`` (or
        nothing): False when another process wrote the key since (its entry, a reply too, stays)."""


class Refusals(Protocol):
    """What a store needs for the tier to tell a request refused for good from one that failed in passing. Without
    it every failure is taken as passing: the tier stops reading (or writing) only when they go on."""

    def refused(self, exc: BaseException) -> bool:
        """Whether ``exc`` (raised by one of the store's methods) is a refusal that asking again will not change: a
        permission denied (a read-only credential, a policy, an ACL), a read-only store, a quota, credentials
        rejected. False for what passes: a timeout, a connection refused or reset, throttling, a server error."""


#: URL scheme -> ``module:function`` opening a store for such a URL.
STORES: dict[str, str] = {
    "s3": f"{__name__}.s3:open_store",
    "redis": f"{__name__}.redis:open_store", "rediss": f"{__name__}.redis:open_store",
}


def open_store(url: str) -> Store:
    """The store ``url`` names; ValueError saying what is wrong (unknown scheme, a package missing)."""
    try:
        display_url(url)
    except ValueError as exc:
        raise ValueError(f"--ifbench-shared-cache: {exc}") from None
    scheme = urlsplit(url).scheme.lower()
    target = STORES.get(scheme)
    if target is None:
        known = ", ".join(f"{name}://" for name in sorted(STORES))
        raise ValueError(f"--ifbench-shared-cache: {display_url(url)!r}: unknown store (known: {known})")
    module, _, function = target.partition(":")
    return getattr(import_module(module), function)(url)


def display_url(url: str) -> str:
    """``url`` without user and password (a Redis password must not reach a report); ValueError, naming
    no part of the URL before its host, when a password's character ends the credentials early.

    ``redis://:pa#ss@host`` is read as the credentials ``:pa`` and the rest as a fragment: the password's
    start would be taken for a port (urllib's error quotes it) or, all digits, shown as one."""
    parts = urlsplit(url)
    cut_short = ValueError(f"{parts.scheme}://...: the URL's host and port cannot be read; percent-encode the "
                           "characters '#', '/', '?' and '@' of a password (e.g. '#' as %23)")
    try:
        port = parts.port
    except ValueError:
        raise cut_short from None
    rest = url.partition("://")[2][len(parts.netloc):]  # "user:pa/ss@host", ":123#4@host": read as path, fragment
    if "@" in rest and ":" in parts.netloc and "@" not in parts.netloc:
        raise cut_short
    host = parts.hostname or ""
    if port:
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def hint(exc: BaseException) -> str | None:
    """What to do about a store's error its client words for its own authors (found by users: a missing
    bucket read "404 when calling the HeadBucket operation", a missing Redis password "HELLO must be called
    with the client already authenticated"); None when it says enough."""
    text = str(exc)
    if ("HeadBucket" in text and "404" in text) or "NoSuchBucket" in text:
        return "the bucket does not exist: create it first (e.g. aws s3 mb s3://BUCKET)"
    if "403" in text and ("HeadBucket" in text or "Forbidden" in text or "AccessDenied" in text):
        return "access denied: check the credentials boto3 reads (AWS_ACCESS_KEY_ID, AWS_PROFILE...) and the policy"
    if "HELLO must be called" in text or "NOAUTH" in text or "Authentication required" in text:
        return "the server wants a password: redis://:PASSWORD@host:port/..."
    if "WRONGPASS" in text or "invalid username-password" in text:
        return "the password (or user) in the URL is wrong"
    if "no permissions to run" in text or "can't run this command" in text:
        return "the Redis user's ACL does not allow it (e.g. a read-only user: reads go on)"
    return None
