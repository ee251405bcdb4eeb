"""The general LLM-judged check: a criterion in plain words."""

from __future__ import annotations

from .._params import Param
from .._registry import Verifier


def register(registry) -> None:
    registry.add(Verifier(
        id="ifbench.judge",
        func=None,
        kind="judge",
        params={"criterion": Param(str, description="what the reply must do, as a yes/no requirement"),
                "may_not_apply": Param(bool, default=False, description=(
                    "the judge may answer not_applicable: whether the criterion applies is the judge's call (a "
                    "benchmark's checklist items declaring no condition); else only a criterion saying when it "
                    "does not apply may be ('...; not applicable if ...')"))},
        description="An LLM judge decides whether the reply meets the criterion.",
        criterion=lambda params: params["criterion"],
    ))
    registry.add(Verifier(
        id="ifbench.judge_score",
        func=None,
        kind="judge",
        params={
            "criterion": Param(str, description="what to rate, e.g. 'how cheerful the tone is'"),
            "threshold": Param(float, default=6.0, min=0, max=10, description="passes when score > threshold"),
        },
        description="An LLM judge rates the reply 1-10 on the criterion; passes above the threshold.",
        criterion=lambda params: params["criterion"],
        judge_scale=10,
    ))
