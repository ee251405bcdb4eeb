"""The ``compat`` setting of EvolIF checks, and the ``system_prompt`` suite option.

``compat`` (``paper`` | ``reference``) is a parameter of every ``evolif.*``
verifier. A suite sets it for all its EvolIF checks with
``options: {compat: reference}`` (a check that sets it itself keeps its own),
and ``--evolif-compat=MODE`` sets it for every EvolIF check of the run,
official dialogue files included: the core applies both to YAML suites
(``Compat`` in plugin.py, with :func:`official_params`), :func:`apply_compat`
to official files. ``options: {system_prompt: authors | ours | none}``
replaces a suite's system prompt (the authors' released one, ours, or none).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pytest_ifbench import SuiteError, set_check_param, suite_yaml_or_none

_PREFIX = "evolif."


def apply_compat(data: dict[str, Any], *, flag: str | None, default: str | None) -> None:
    """Set ``params.compat`` on every ``evolif.*`` check: ``flag`` overrides, ``default`` fills in."""
    set_check_param(data, _PREFIX, "compat", flag=flag, default=default, coerce=official_params)


def official_params(params: Any) -> Any:
    """``forbidden``'s official bare keyword list as the params mapping it stands for."""
    return {"keywords": list(params)} if isinstance(params, list) else params


def suite_yaml(path: Path) -> Any:
    """An EvolIF suite YAML with ``options.system_prompt`` applied; None if it sets none."""

    def worth_reading(raw: bytes) -> bool:  # else nothing to apply: the core loads it (no second parse)
        return bool(re.search(rb"(?m)^options\s*:", raw) and b"system_prompt" in raw)

    data = suite_yaml_or_none(path, "evolif", worth_reading=worth_reading)  # None: the core loads the file
    if data is None:
        return None
    options = data.get("options") if isinstance(data.get("options"), dict) else {}
    prompt = options.get("system_prompt")
    if prompt is None:
        return None
    from .settings import SYSTEM_PROMPTS, system_defaults

    if prompt not in SYSTEM_PROMPTS:
        raise SuiteError(path, f"expected one of {', '.join(SYSTEM_PROMPTS)}, got {prompt!r}",
                         field="options.system_prompt")
    defaults = data.setdefault("defaults", {})
    if not isinstance(defaults, dict):
        return None  # the core reports it
    system_defaults(defaults, prompt)
    return data
