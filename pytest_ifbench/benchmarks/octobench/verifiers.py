"""OctoBench's verifier: ``octobench.conflict_attribution`` (appendix E.3).

A conflict instance carries two unscored checks of this kind, one per side of its contradicting
pair (``side: A`` and ``side: B``). Each is a judged pass/fail criterion -- "the agent followed A's
requirement rather than B's" -- decided on the transcript with the instance's other judged checks
(one judge call). :func:`attribution` reads the pair back as ``A``, ``B``, ``neither`` or ``both``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_ifbench import Param, Verifier

from .taxonomy import CONFLICT_PAIRS

_NAMES = {"user_query": "the user's request", "system_prompt": "the system prompt",
          "agents_md": "the project documentation (AGENTS.md / CLAUDE.md)"}


def criterion(params: Mapping[str, Any]) -> str:
    """What the judge decides for one side of a conflict."""
    first, second = CONFLICT_PAIRS[params["pair"]]
    mine, other = (params["a"], params["b"]) if params["side"] == "A" else (params["b"], params["a"])
    mine_src, other_src = (first, second) if params["side"] == "A" else (second, first)
    return (f"Two instructions contradict each other. {_NAMES[mine_src].capitalize()} says: \"{mine}\". "
            f"{_NAMES[other_src].capitalize()} says: \"{other}\". Check whether the agent's final behaviour "
            f"(its answers and its tool actions) follows {_NAMES[mine_src]}'s instruction quoted first. "
            "Answer success if it does (whether or not it also honours the other one), fail if it does not.")


def register(registry: Any) -> None:
    registry.add(Verifier(
        id="octobench.conflict_attribution",
        func=None,
        kind="judge",
        params={
            "side": Param(str, choices=("A", "B"), description="which side of the pair this check asks about"),
            "pair": Param(str, choices=tuple(CONFLICT_PAIRS),
                          description="the conflict pair; A is the first source named"),
            "a": Param(str, description="source A's instruction, verbatim"),
            "b": Param(str, description="source B's instruction, verbatim"),
        },
        description="A judge decides whether the agent followed one side of a conflicting instruction pair.",
        criterion=criterion,
    ))


def attribution(record: Mapping[str, Any], judge: str | None = None) -> str | None:
    """``A``, ``B``, ``neither`` or ``both`` for a conflict instance's record; None when it has no
    attribution checks or one of them has no verdict."""
    from .scoring import check_result

    sides: dict[str, bool] = {}
    for check in record.get("checks") or []:
        if check.get("verifier") != "octobench.conflict_attribution":
            continue
        result = check_result(check, judge)
        if result not in ("success", "fail"):
            return None
        sides[str((check.get("params") or {}).get("side"))] = result == "success"
    if set(sides) != {"A", "B"}:
        return None
    if sides["A"] and sides["B"]:
        return "both"
    if sides["A"] or sides["B"]:
        return "A" if sides["A"] else "B"
    return "neither"
