"""Whether a model's provider has the key it needs (:func:`missing_key`), asked before a run calls a model.

A hosted model without its key fails every call: litellm words OpenAI's missing key as an HTTP 500
(which was retried, so each instance errored after six attempts, ~17 s each), Anthropic's as a 401,
every instance alike. The start-up check (``_startup_checks``) asks here once per model and stops
the run with one line instead.

Only the models litellm serves are asked about: the other providers have a key by construction (the
SDK routes and the direct path are chosen only with one), need none (the embedded model, recorded
responses) or answer for themselves (a plugin's ``Provider.problem``). Nor is a model pointed at a
server of one's own (``--api-base``, or ``OPENAI_BASE_URL``/``OPENAI_API_BASE`` for OpenAI's models:
:func:`.providers.endpoint`): such servers rarely need a key.

OpenAI's and Anthropic's variables are known here, so asking costs no import. For every other
provider litellm itself is asked (``litellm.validate_environment``), but only in a process that
imports litellm anyway (:func:`.client.litellm_coming`): the ~3 s import never lands before a run
that would not pay it (a cached re-score, an xdist controller). And only a missing API key
(``*_API_KEY``, ``*_API_TOKEN``) counts: credentials litellm also finds elsewhere (AWS profiles,
Google's application default credentials, a local Ollama) are not refused on its word.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING

from .client import import_litellm, litellm_coming
from .prices import provider_of
from .providers import LITELLM, endpoint

if TYPE_CHECKING:
    from .providers import ProviderTable

__all__ = ["key_needed", "missing_key"]

#: The providers whose variables are known here: (the variable to name, every variable that would do).
#: The others are the ones their SDKs (or litellm) accept instead: Anthropic's auth token and workload
#: identity federation, OpenAI's workload identity.
KNOWN: dict[str, tuple[str, tuple[str, ...]]] = {
    "openai": ("OPENAI_API_KEY", ("OPENAI_API_KEY", "OPENAI_IDENTITY_PROVIDER_ID")),
    "anthropic": ("ANTHROPIC_API_KEY", ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_FEDERATION_RULE_ID")),
}
#: What litellm's calls read besides the one variable ``validate_environment`` names.
_ALSO_READ = {"HUGGINGFACE_API_KEY": ("HF_TOKEN",),
              "TOGETHERAI_API_KEY": ("TOGETHER_API_KEY", "TOGETHER_AI_API_KEY", "TOGETHER_AI_TOKEN")}
#: The variables a missing key is reported by (litellm also reports bases, projects, regions, AWS pairs).
_API_KEY = re.compile(r"[A-Z0-9_]+_API_(?:KEY|TOKEN)")


def missing_key(model: str, api_base: str | None, table: ProviderTable) -> tuple[str, ...]:
    """The environment variables ``model`` needs one of and has none of (empty: none is missing, or it is
    not known here). ``api_base`` is the run's ``--api-base``; ``table`` the run's providers."""
    if endpoint(model, api_base) or table.for_model(model, api_base) is not LITELLM or _litellm_key():
        return ()
    known = KNOWN.get(provider_of(model) or "")
    if known is not None:
        shown, accepted = known
        return () if any(_set(name) for name in accepted) else (shown,)
    return _asked_litellm(model)


def key_needed(model: str, missing: tuple[str, ...]) -> str:
    """What a run and ``ifbench verify`` say of ``model`` without its key (``missing``, from :func:`missing_key`):
    ``'openai/gpt-4o-mini' needs an API key: set OPENAI_API_KEY in the environment``."""
    return f"{model!r} needs an API key: set {' or '.join(missing)} in the environment"


def _set(name: str) -> bool:
    return bool(os.environ.get(name, "").strip())


def _litellm_key() -> bool:
    """Whether the process gave litellm a key for every provider (``litellm.api_key``), as a conftest may;
    read without importing litellm."""
    return bool(getattr(sys.modules.get("litellm"), "api_key", None))


def _asked_litellm(model: str) -> tuple[str, ...]:
    if not litellm_coming():
        return ()
    try:
        litellm = import_litellm()  # imported, or waits for the import the run started (the first call would)
        missing = tuple(litellm.validate_environment(model=model).get("missing_keys") or ())
    except Exception:  # litellm's problem to report when it is called
        return ()
    if not missing or not all(_API_KEY.fullmatch(name) for name in missing):
        return ()
    if any(_set(other) for name in missing for other in _ALSO_READ.get(name, ())):
        return ()
    return missing
