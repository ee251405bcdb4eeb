"""Keeping secrets out of everything we write (cache, results, reports).

We never put headers or keys into records in the first place; this is the
second line of defence: any value of a secret-looking environment variable
is replaced before text reaches the disk.
"""

from __future__ import annotations

import os
import re

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$", re.IGNORECASE)
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*", re.IGNORECASE)
_SK = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
REDACTED = "[REDACTED]"


def secret_values() -> list[str]:
    values = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8}
    return sorted(values, key=len, reverse=True)


def redact(text: str) -> str:
    for value in secret_values():
        if value in text:
            text = text.replace(value, REDACTED)
    # The regexes are slow on megabytes of results; a substring test first skips them.
    if "bearer" in text.lower():
        text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    if "sk-" in text:
        text = _SK.sub(REDACTED, text)
    return text
