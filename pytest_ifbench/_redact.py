"""Keeping secrets out of everything we write (cache, results, reports).

We never put headers or keys into records in the first place; this is the
second line of defence: any value of a secret-looking environment variable
is replaced before text reaches the disk or the terminal, in the forms a
provider's error message may echo it in: as is (quoted or not), reversed,
broken up by whitespace, escaped for JSON or a URL (any of its characters
percent-encoded, as a client that encodes every byte does), and in base64 (an
``Authorization: Basic`` header echoed back holds ``user:key`` so; whatever
precedes the key, the part of the base64 only the key decides is found).

Secret-looking means a name ending in ``KEY``, ``TOKEN``, ``SECRET``,
``PASSWORD`` or ``CREDENTIAL(S)`` (any value of 8 characters or more), or a
name containing ``API``, ``KEY``, ``TOKEN`` or ``SECRET`` whose value looks like
a key: one word of 16 characters or more with letters, digits and a run of 12
alphanumerics, neither a URL nor a path (``OPENAI_API_BASE`` and
``AZURE_API_VERSION`` are no secrets).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
from urllib.parse import quote, quote_plus

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$", re.IGNORECASE)
_MAYBE_SECRET_NAME = re.compile(r"API|KEY|TOKEN|SECRET", re.IGNORECASE)
_KEY_LIKE = re.compile(r"[A-Za-z0-9_\-.+/=:~]{16,}")
_KEY_RUN = re.compile(r"[A-Za-z0-9]{12,}")  # a version ("2024-02-01-preview") has none
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*", re.IGNORECASE)
_SK = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
# Basic credentials only where they are a header's value: "Basic" alone starts ordinary prose.
_BASIC = re.compile(r"(authorization[\"']?\s*[:=]\s*[\"']?Basic\s+)[A-Za-z0-9+/]{8,}=*", re.IGNORECASE)
REDACTED = "[REDACTED]"


def _looks_like_key(value: str) -> bool:
    return (_KEY_LIKE.fullmatch(value) is not None and _KEY_RUN.search(value) is not None
            and "://" not in value and not value.startswith(("/", ".", "~"))
            and any(c.isdigit() for c in value) and any(c.isalpha() for c in value))


def _environment() -> list[tuple[str, str]]:
    """A snapshot of ``os.environ``. Iterating it is not atomic: pytest sets and deletes
    ``PYTEST_CURRENT_TEST`` from the main thread at every test phase, and a background thread reading
    the environment meanwhile raised ``KeyError: 'PYTEST_CURRENT_TEST'`` (two instances of a
    50,000-instance run errored so). A torn read is simply taken again."""
    for _ in range(100):
        try:
            return list(os.environ.items())
        except (KeyError, RuntimeError):  # a variable deleted, or the mapping resized, mid-iteration
            continue
    return list(os.environ.copy().items())


def secret_values() -> list[str]:
    """Values of the secret-looking environment variables, longest first (read at call time)."""
    values = {v for k, v in _environment()
              if (_SECRET_NAME.search(k) and len(v) >= 8) or (_MAYBE_SECRET_NAME.search(k) and _looks_like_key(v))}
    return sorted(values, key=len, reverse=True)


def _base64_forms(secret: str) -> set[str]:
    """The base64 text only ``secret``'s bytes decide, in the standard and URL-safe alphabets, for each of
    the three places it can start within a 3-byte group (``user:`` before it shifts it): the 4-character
    groups holding a byte of something else are left out. Shorter than 8 characters: none (too common)."""
    data = secret.encode("utf-8")
    out = set()
    for lead in range(3):
        encoded = base64.b64encode(bytes(lead) + data).decode("ascii")
        start = 4 if lead else 0
        end = len(encoded) if (lead + len(data)) % 3 == 0 else len(encoded) - 4
        middle = encoded[start:end].rstrip("=")
        if len(middle) >= 8:
            out |= {middle, middle.replace("+", "-").replace("/", "_")}
    return out


def _percent_pattern(form: str) -> re.Pattern[str]:
    """``form`` with any of its characters percent-encoded (either case of hex digits), e.g. ``sk%2Dab``."""
    def either(char: str) -> str:
        encoded = "".join(f"%{byte:02X}" for byte in char.encode("utf-8"))
        return f"(?:{re.escape(char)}|{'|'.join(sorted({encoded, encoded.lower()}))})"
    return re.compile("".join(map(either, form)))


@functools.lru_cache(maxsize=8)
def _forms(secrets: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[re.Pattern[str], ...],
                                              tuple[re.Pattern[str], ...]]:
    """(escaped forms, patterns of the forms as is or broken up by whitespace, patterns of the forms
    percent-encoded in part), longest first."""
    plain = sorted({form for secret in secrets for form in (secret, secret[::-1])}, key=len, reverse=True)
    escaped = {e for form in plain for e in (json.dumps(form)[1:-1], quote(form, safe=""), quote_plus(form))}
    escaped |= {e for secret in secrets for e in _base64_forms(secret)}
    escaped -= set(plain)
    # One pattern per form: a literal first character lets the regex engine skip ahead fast.
    patterns = tuple(re.compile(r"\s*".join(map(re.escape, form))) for form in plain)
    percent = tuple(_percent_pattern(form) for form in plain)
    return tuple(sorted(escaped, key=len, reverse=True)), patterns, percent


def redact(text: str) -> str:
    lowered = text.lower()  # the regexes are slow on megabytes of results: a substring test first skips them
    if "basic" in lowered:  # first: a header's whole value, before a key's part of it is
        text = _BASIC.sub(lambda m: m.group(1) + REDACTED, text)
    secrets = tuple(secret_values())
    if secrets:
        escaped, patterns, percent = _forms(secrets)
        for value in escaped:
            if value in text:
                text = text.replace(value, REDACTED)
        for pattern in patterns:
            if pattern.search(text):
                text = pattern.sub(REDACTED, text)
        if "%" in text:  # the patterns are slower: only where something is percent-encoded
            for pattern in percent:
                text = pattern.sub(REDACTED, text)
    if "bearer" in lowered:
        text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    if "sk-" in text:
        text = _SK.sub(REDACTED, text)
    return text
