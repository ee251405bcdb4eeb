"""The general ruff-backed verifier: no violations of the selected rules."""

from __future__ import annotations

from .._params import Param
from .._registry import RuffSetting, RuffSpec, Verifier


def _select(params):
    return tuple(params["select"])


def _settings(params):
    scope = tuple(params["select"])
    return tuple(RuffSetting(key=k, value=v, scope=scope) for k, v in sorted(params["settings"].items()))


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
    ))
