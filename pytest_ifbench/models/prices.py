"""litellm's price table, read as data: which models are priced, by which provider, at what cost.

The table (``model_prices_and_context_window_backup.json``) ships inside the litellm package. It is
read here with :mod:`json` from the installed package's folder -- ``litellm`` itself is never
imported, so the providers that answer without litellm (:mod:`.openai_compat`, :mod:`.openai_sdk`,
:mod:`.anthropic_sdk`) still report the cost litellm would have reported, and still know which
provider a bare model name (``gpt-4o-mini``, ``claude-sonnet-4-5``) belongs to.

The cost is litellm's per-token arithmetic for plain chat calls: prompt tokens at the input price
(those read from the provider's prompt cache at the cache-read price, those written to Anthropic's
cache at the cache-creation price), completion tokens at the output price, and a long-prompt price
(``_above_200k_tokens``, ``_above_272k_tokens``...) for prompts past the length it names.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._user_cache import user_cache_dir, write_atomically

#: The file inside the litellm package (the copy litellm itself reads when it runs offline).
PRICE_FILE = "model_prices_and_context_window_backup.json"


#: The prices this module reads, each also in its long-prompt variants (``_above_272k_tokens``...).
_PRICES = ("input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost",
           "cache_creation_input_token_cost")
#: A long-prompt price: the price's name, then the prompt length past which it applies (``272k``, ``128000``).
_LONG_PRICE = re.compile(rf"(?:{'|'.join(_PRICES)})_above_(\d+(?:\.\d+)?k?)_tokens")
#: The other fields of an entry this module reads; the rest of the table's ~30 fields per model is not kept.
_READ_FIELDS = frozenset([*_PRICES, "litellm_provider", "mode", "max_input_tokens"])
#: The compact table's format; a change makes every kept copy stale.
_INDEX_FORMAT = 4


@functools.lru_cache(maxsize=1)
def price_table() -> Mapping[str, Mapping[str, Any]]:
    """The table by model name, each entry with only the fields read here ({} when litellm is not
    installed or the file is unreadable).

    The file is 3 MB of JSON: parsing it took ~20-50 ms and left ~6 MB in every process that
    chose a route or priced a reply. Its compact form (names, providers, modes, prices, windows: ~0.8 MB) is
    kept in the per-user cache, keyed by the file's path, size and modification time, and read
    instead once it is there."""
    source = _price_file()
    if source is None:
        return {}
    stat = source.stat()
    tag = hashlib.sha256(f"{_INDEX_FORMAT}:{source}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:24]
    kept = user_cache_dir() / "prices" / f"{tag}.json"
    try:
        table = json.loads(kept.read_text(encoding="utf-8"))
        if isinstance(table, dict):
            return table
    except (OSError, ValueError):
        pass
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    table = {name: {key: value for key, value in entry.items() if key in _READ_FIELDS or _LONG_PRICE.fullmatch(key)}
             for name, entry in data.items() if isinstance(entry, dict)}
    write_atomically(kept, json.dumps(table, separators=(",", ":")).encode())
    return table


def _price_file() -> Path | None:
    """litellm's price table in the installed package (without importing litellm), or None."""
    from importlib.util import find_spec

    spec = find_spec("litellm")
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / PRICE_FILE
        if path.is_file():
            return path
    return None


def entry_for(model: str) -> Mapping[str, Any] | None:
    """The table's entry for ``model`` (``openai/gpt-4o-mini``, ``gpt-4o-mini``), or None."""
    table = price_table()
    for name in (model, model.split("/", 1)[-1]):
        entry = table.get(name)
        if entry is not None:
            return entry
    return None


def context_window(model: str) -> int | None:
    """The tokens ``model``'s prompt may hold as the table says (``max_input_tokens``), or None (unknown)."""
    entry = entry_for(model)
    value = entry.get("max_input_tokens") if entry is not None else None
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None


def is_priced(model: str) -> bool:
    """Whether litellm knows a price for ``model`` under any of its names (with or without its prefixes)."""
    table = price_table()
    return any(name in table for name in (model, model.split("/", 1)[-1], model.rsplit("/", 1)[-1]))


def provider_of(model: str) -> str | None:
    """``"openai"``/``"anthropic"``/... for a model string: its prefix, or for a bare chat model name the
    provider litellm's table gives it (litellm routes ``gpt-4o-mini`` to OpenAI the same way)."""
    if "/" in model:
        return model.split("/", 1)[0]
    entry = price_table().get(model)
    if entry is None or entry.get("mode", "chat") != "chat":
        return None
    provider = entry.get("litellm_provider")
    return provider if isinstance(provider, str) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts of one reply, as a provider reports them."""

    #: Every prompt token, whatever it cost (OpenAI's ``prompt_tokens``; Anthropic's input + cache tokens).
    prompt: int = 0
    completion: int = 0
    #: Of ``prompt``: read from the provider's prompt cache.
    cache_read: int = 0
    #: Of ``prompt``: written to the provider's prompt cache (Anthropic).
    cache_write: int = 0


def cost_of(model: str, usage: Usage) -> float | None:
    """What ``usage`` of ``model`` cost in USD at litellm's prices, or None if the model is not priced.

    As litellm prices a plain chat call: a prompt longer than a length the entry names
    (``input_cost_per_token_above_272k_tokens``...) takes that length's prices, the longest such length
    first, each price missing there from the next shorter one, then the base; a cache price missing
    altogether is the input price. A usage without prompt tokens was not reported (every prompt has some):
    its price is not known either, rather than $0."""
    entry = entry_for(model)
    if entry is None or usage.prompt <= 0:
        return None
    prices = {name: _number(entry.get(name)) for name in _PRICES}
    lengths = {match.group(1) for key in entry if (match := _LONG_PRICE.fullmatch(key))}
    for label in sorted(lengths, key=_length):
        if usage.prompt > _length(label):
            for name in _PRICES:
                value = _number(entry.get(f"{name}_above_{label}_tokens"))
                if value is not None:
                    prices[name] = value
    prompt_price = prices["input_cost_per_token"] or 0.0
    cache_read = prices["cache_read_input_token_cost"]
    cache_write = prices["cache_creation_input_token_cost"]
    plain = max(0, usage.prompt - usage.cache_read - usage.cache_write)
    return (plain * prompt_price
            + usage.cache_read * (prompt_price if cache_read is None else cache_read)
            + usage.cache_write * (prompt_price if cache_write is None else cache_write)
            + usage.completion * (prices["output_cost_per_token"] or 0.0))


def _length(label: str) -> float:
    """A long-prompt price's length: ``272k`` is 272,000 tokens."""
    return float(label.removesuffix("k")) * (1000 if label.endswith("k") else 1)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
