"""The ``compat`` setting of EvolIF checks: per check, per suite, per run.

``compat`` (``paper`` | ``reference``) is a parameter of every ``evolif.*``
verifier. A suite sets it for all its EvolIF checks with
``options: {compat: reference}`` (a check that sets it itself keeps its own),
and ``--evolif-compat=MODE`` sets it for every EvolIF check of the run,
official dialogue files included. ``options: {system_prompt: authors | ours | none}``
replaces a suite's system prompt (the authors' released one, ours, or none).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...suite.detect import suite_yaml_or_none
from ...suite.format import set_check_param

COMPAT = ("paper", "reference")
_PREFIX = "evolif."


def apply_compat(data: dict[str, Any], *, flag: str | None, default: str | None) -> None:
    """Set ``params.compat`` on every ``evolif.*`` check: ``flag`` overrides, ``default`` fills in."""
    set_check_param(data, _PREFIX, "compat", flag=flag, default=default, coerce=_official_params)


def _official_params(params: Any) -> Any:
    """``forbidden``'s official bare keyword list as the params mapping it stands for."""
    return {"keywords": list(params)} if isinstance(params, list) else params


def suite_yaml(path: Path, flag: str | None) -> Any:
    """An EvolIF suite YAML with ``options.compat`` / ``--evolif-compat`` applied; None if nothing to do."""
    from ...suite.format import SuiteError

    def worth_reading(raw: bytes) -> bool:  # else nothing to apply: the core loads it (no second parse)
        return flag is not None or bool(re.search(rb"(?m)^options\s*:", raw)
                                        and (b"compat" in raw or b"system_prompt" in raw))

    data = suite_yaml_or_none(path, "evolif", worth_reading=worth_reading)  # None: the core loads the file
    if data is None:
        return None
    options = data.get("options") if isinstance(data.get("options"), dict) else {}
    option = options.get("compat")
    if option is not None and option not in COMPAT:
        raise SuiteError(path, f"expected paper or reference, got {option!r}", field="options.compat")
    prompt = options.get("system_prompt")
    if prompt is not None:
        from .settings import SYSTEM_PROMPTS, system_defaults

        if prompt not in SYSTEM_PROMPTS:
            raise SuiteError(path, f"expected one of {', '.join(SYSTEM_PROMPTS)}, got {prompt!r}",
                             field="options.system_prompt")
        defaults = data.setdefault("defaults", {})
        if not isinstance(defaults, dict):
            return None  # the core reports it
        system_defaults(defaults, prompt)
    if flag is None and option is None and prompt is None:
        return None
    apply_compat(data, flag=flag, default=option)
    return data
