"""The general LLM-judged check: a criterion in plain words."""

from __future__ import annotations

from .._params import Param
from .._registry import Verifier


def register(registry) -> None:
    registry.add(Verifier(
        id="ifbench.judge",
        func=None,
        kind="judge",
        params={"criterion": Param(str, description="what the reply must do, as a yes/no requirement")},
        description="An LLM judge decides whether the reply meets the criterion.",
        criterion=lambda params: params["criterion"],
    ))
