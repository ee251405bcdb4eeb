"""The general ruff-backed verifier: no violations of the selected rules."""

from __future__ import annotations

from .._params import Param, ParamError
from .._registry import RuffSpec, Verifier


def _select(params):
    return tuple(params["select"])


def _settings(params):
    from ..ruff.check import ruff_setting

    return tuple(ruff_setting(k, v) for k, v in sorted(params["settings"].items()))


def _validate(params):
    """Ask ruff now whether the selectors and settings are valid, not at run time."""
    from ..ruff.check import RuffCheck, RuffError, enabled_codes

    if not params["select"]:
        raise ParamError("select", "select at least one rule")
    try:
        _ = RuffCheck(key="validate", select=_select(params)).codes
    except RuffError as exc:
        raise ParamError("select", f"ruff rejects it: {_short(exc)}") from None
    try:  # every setting, not just the rule-enabling ones RuffCheck.codes looks at
        enabled_codes(_select(params), RuffCheck(key="v", select=(), settings=_settings(params)).setting_pairs)
    except RuffError as exc:
        raise ParamError("settings", f"ruff rejects it: {_short(exc)}") from None


def _short(exc: Exception) -> str:
    text = str(exc)
    for marker in ("Cause: ", "invalid type: ", "unknown field "):
        if marker in text:
            return text[text.index(marker):].split(";")[0]
    return text[:200]


def register(registry) -> None:
    registry.add(Verifier(
        id="ifbench.ruff",
        func=None,
        kind="ruff",
        target="code",
        params={
            "select": Param(list, items=str, description="ruff rule codes or prefixes, e.g. ['E501']"),
            "settings": Param(dict, default={}, description="ruff settings, e.g. {'line-length': 79}"),
        },
        description="The extracted code has no violation of the selected ruff rules.",
        ruff=RuffSpec(select=_select, settings=_settings),
        check_params=_validate,
    ))
