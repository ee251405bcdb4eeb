"""A circuit breaker per endpoint: a dead endpoint fails the rest of the run's calls at once.

Without it, every call to an endpoint nobody listens on spends its whole retry budget (attempts and
backoff) before it errors, one instance after another. :class:`Breakers` keeps one
:class:`CircuitBreaker` per endpoint (the ``--api-base`` URL, or the provider prefix of the model
string when there is none) for the whole process -- the run, or one xdist worker's part of it.

* Only **connection failures** count: the connection was refused, the host name did not resolve,
  or connecting timed out (:func:`is_connection_failure`). An HTTP answer of any status, a reply
  that is malformed, a dropped connection or a request that timed out after connecting does not.
* :data:`THRESHOLD` consecutive connection failures open the breaker; any HTTP answer from the
  endpoint before that resets the count to 0.
* Once open it stays open for the rest of the process: every later call to that endpoint (the
  model's and the judges') fails at once with :class:`EndpointDown`, without a request, a retry or
  a wait. A new run starts closed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

#: Consecutive connection failures to one endpoint that open its breaker.
THRESHOLD = 10

#: Exception classes (by name, anywhere in an error's cause chain) that mean "no connection was made":
#: the OS's refusal and name-resolution errors, aiohttp's and httpx's connect errors and connect timeouts.
_CONNECT_ERRORS = frozenset({"ConnectionRefusedError", "gaierror", "ClientConnectorError", "ConnectionTimeoutError",
                             "ConnectError", "ConnectTimeout"})


def is_connection_failure(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error in its cause/context chain) is a failure to connect at all."""
    seen = 0
    cause: BaseException | None = exc
    while cause is not None and seen < 12:
        if any(kind.__name__ in _CONNECT_ERRORS for kind in type(cause).__mro__):
            return True
        seen += 1
        cause = cause.__cause__ or cause.__context__
    return False


class CircuitOpen(Exception):
    """Raised instead of a call to an endpoint whose breaker is open; the message says why."""


@dataclass(kw_only=True)
class CircuitBreaker:
    """The breaker of one endpoint (thread-safe: clients may call from several threads)."""

    endpoint: str
    threshold: int = THRESHOLD
    failures: int = 0
    #: The message every call gets once open; None while closed.
    opened: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def check(self) -> None:
        """Raise :class:`CircuitOpen` if the breaker is open."""
        if self.opened is not None:
            raise CircuitOpen(self.opened)

    def answered(self) -> None:
        """The endpoint answered (any HTTP status): the count of consecutive failures starts again."""
        with self._lock:
            if self.opened is None:
                self.failures = 0

    def failed(self, error: str) -> None:
        """One more connection failure (``error``: its one-line description, already redacted)."""
        with self._lock:
            if self.opened is not None:
                return
            self.failures += 1
            if self.failures >= self.threshold:
                self.opened = (f"circuit breaker open for {self.endpoint}: {self.failures} consecutive connection "
                               f"failures (last: {error}); the rest of this run's calls to it fail at once")


class Breakers:
    """The breakers of one process, one per endpoint, shared by every client of the run."""

    __slots__ = ("_by_endpoint", "_lock", "threshold")

    def __init__(self, threshold: int = THRESHOLD) -> None:
        if threshold < 1:
            raise ValueError("the breaker threshold must be >= 1")
        self.threshold = threshold
        self._by_endpoint: dict[str, CircuitBreaker] = {}
        self._lock = threading.Lock()

    def for_endpoint(self, endpoint: str) -> CircuitBreaker:
        with self._lock:
            breaker = self._by_endpoint.get(endpoint)
            if breaker is None:
                breaker = self._by_endpoint[endpoint] = CircuitBreaker(endpoint=endpoint, threshold=self.threshold)
            return breaker
