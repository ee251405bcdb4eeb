"""What a reply cost and how many tokens it reports, read defensively from whatever came back.

A provider bills every reply it sends, one the client refuses as malformed too (:mod:`.client` retries
it): so a price is read before the reply is judged, and a reply that reports no usage has an unknown
price, never $0 (the spending limit then counts it as unpriced and the summary warns).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any


def price(response: Any, litellm: Any) -> float | None:
    """What ``response`` cost in USD: the price its transport put on it (the SDK providers, at litellm's
    prices; the direct path serves only models litellm has no price for), else litellm's (``litellm``: the
    module, None when a transport sent the call); None when not known, as for a reply that reports no
    prompt tokens (litellm prices that at $0)."""
    if litellm is None:
        return carried_cost(response)
    if not tokens(getattr(response, "usage", None), "prompt_tokens"):
        return None
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:
        return None


def carried_cost(response: Any) -> float | None:
    """The ``cost`` (USD) a transport's reply carries, if it carries one."""
    return amount(getattr(response, "cost", None))


def amount(value: Any) -> float | None:
    """``value`` as an amount of USD, or None if it is not a finite number (a damaged cache entry's)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def tokens(usage: Any, name: str) -> int:
    """A token count of ``usage`` (an attribute or a key): a positive int, else 0 (a provider that sends
    ``"12"`` or null would otherwise put it in the cache, and every report that adds counts would fail)."""
    value = usage.get(name) if isinstance(usage, dict) else getattr(usage, name, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def with_refused(cost: float | None, refused: Iterable[float | None]) -> float | None:
    """A reply's cost with those of the replies refused before it; None when none of them has a price."""
    known = [c for c in (cost, *refused) if c is not None]
    return sum(known) if known else None
