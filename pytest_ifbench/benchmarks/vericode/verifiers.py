"""VeriCode's verifiers: every instruction of the taxonomy registered as ``vericode.<id>``.

A ruff-backed instruction becomes a ``ruff`` verifier with its rule selectors
and settings (``RuffSpec``), so all ruff checks of a reply share one ``ruff``
process; a response-level one becomes a ``python`` verifier over the whole
reply.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_ifbench import RuffSpec, Verdict, Verifier

from .instructions import INSTRUCTIONS, Instruction


def _response_func(instruction: Instruction):
    check = instruction.check
    assert check is not None

    def verify(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
        return check(text, params)

    return verify


def register(registry) -> None:
    for instruction in INSTRUCTIONS:
        common = {"id": instruction.verifier_id, "params": dict(instruction.params),
                  "description": instruction.description, "check_params": instruction.check_params}
        if instruction.ruff_backed:
            registry.add(Verifier(func=None, kind="ruff", target="code",
                                  ruff=RuffSpec(select=instruction.select, settings=instruction.settings
                                                or (lambda params: ())), **common))
        else:
            registry.add(Verifier(func=_response_func(instruction), kind="python", target="response", **common))
