"""The one AgentIF verifier: a rubric item decided by this benchmark's judge (:mod:`.judge`)."""

from __future__ import annotations

from typing import Any

from pytest_ifbench import Param, Verifier

RUBRIC = "agentif.rubric"


def register(registry: Any) -> None:
    registry.add(Verifier(
        id=RUBRIC,
        func=None,
        kind="judge",
        params={"criterion": Param(str, description="the rubric item: for a penalty, the mistake")},
        description="An AgentIF-OneDay rubric item, decided with every other item of the task in one judge call "
                    "that sees the answer, the produced files, the attachments and the reference answer.",
        criterion=lambda params: params["criterion"],
    ))
