"""ManyIH-Bench verifiers.

* ``manyih.<style_id>`` -- the 41 coding-subset style checkers of Table 5
  (AST + tokenize, ``_manyih_checks``), on the code extracted from the reply;
* ``manyih.unit_tests`` -- the sample's asserts, run in the sandbox;
* ``manyih.if_code`` -- an instruction-following constraint checked by its own
  ``check_following(response) -> bool``, run in the sandbox (never in-process);
* ``manyih.if_judge`` -- an instruction-following constraint decided by the
  judge panel from its YES/NO prompt.

Every verifier takes ``compat``: ``paper`` (default, the plain meaning of each
instruction) or ``reference`` (the authors' released checkers, quirks
included). See docs/manyih.md for every rule and every difference.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping
from typing import Any

from ..._model_types import Verdict
from ..._params import Param
from ..._registry import Verifier
from .checks import check_style
from .ppi import COMPAT_MODES, extract, reference_asserts
from .styles import STYLES

_COMPAT = Param(str, default="paper", choices=COMPAT_MODES,
                description="paper: the instruction's plain meaning; reference: the authors' checker, quirks included")


def _limits(ctx: Any):
    from ...sandbox import SandboxLimits

    return SandboxLimits(**dict(ctx.sandbox)) if ctx is not None and getattr(ctx, "sandbox", None) else SandboxLimits()


def _style_verifier(style_id: str):
    style = STYLES[style_id]

    def verify(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
        compat = params["compat"]
        passed, evidence = check_style(style_id, extract(text, compat), reference=compat == "reference")
        return Verdict(passed=passed, evidence=evidence,
                       details={"style": style_id, "group": style.group, "compat": compat})

    return verify


def _unit_tests(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    from ...sandbox import run_assert_tests

    compat = params["compat"]
    code = extract(text, compat)
    tests, setup = list(params["tests"]), params["setup"]
    if compat == "reference":
        tests, setup = reference_asserts(tests), ""
        if not tests:
            return Verdict(passed=True, evidence="(reference) no assert lines: passes",
                           details={"tests": 0, "compat": compat})
    run = run_assert_tests(code, tests, setup=setup, limits=_limits(ctx))
    return Verdict(passed=run.passed, evidence=run.summary(),
                   details={"failed_tests": [o.name for o in run.outcomes if not o.passed],
                            "tests": len(run.outcomes), "compat": compat})


def _if_code(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """Run the constraint's ``check_following(response)`` in the sandbox with the reply on stdin."""
    from ...sandbox import run_python

    marker = f"@@manyih-{secrets.token_hex(8)}@@"
    source = (
        "import sys as _manyih_sys, json as _manyih_json\n"
        "_manyih_response = _manyih_sys.stdin.read()\n"
        f"{params['code']}\n"
        "_manyih_value = check_following(_manyih_response)\n"
        f"print({marker!r} + _manyih_json.dumps({{'bool': isinstance(_manyih_value, bool), "
        "'value': _manyih_value if isinstance(_manyih_value, bool) else repr(_manyih_value)[:200]}))\n"
    )
    result = run_python(source, stdin=text, limits=_limits(ctx))
    found = [line[len(marker):] for line in result.stdout.splitlines() if line.startswith(marker)]
    if not found or result.limit is not None:
        tail = "\n".join(result.stderr.strip().splitlines()[-3:]) or result.limit or f"exit code {result.returncode}"
        return Verdict(passed=False, evidence=f"check_following did not return: {tail}",
                       details={"error": True, "compat": params["compat"]})
    value = json.loads(found[-1])
    passed = value["bool"] and value["value"] is True
    shown = value["value"] if value["bool"] else f"{value['value']} (not a bool)"
    return Verdict(passed=passed, evidence=f"check_following returned {shown}",
                   details={"compat": params["compat"]})


_YES_NO_TAIL = re.compile(r"\s*Please answer\s+YES\s*/\s*NO\b.*\Z", re.S | re.I)


def judge_criterion(params: Mapping[str, Any]) -> str:
    """The judge requirement for an IF constraint: its YES/NO prompt, with the reply left to the judge."""
    prompt = _YES_NO_TAIL.sub("", params["prompt"]).replace("{response}", "(the RESPONSE above)").strip()
    if params.get("condition"):
        condition = _YES_NO_TAIL.sub("", params["condition"]).replace("{response}", "(the RESPONSE above)").strip()
        return (f"This requirement applies only when the following holds: {condition} -- when it does not hold, "
                f"the requirement counts as met. Requirement: {prompt}")
    return prompt


def register(registry) -> None:
    for style_id, style in STYLES.items():
        registry.add(Verifier(
            id=f"manyih.{style_id}", func=_style_verifier(style_id), params={"compat": _COMPAT},
            description=style.instruction, kind="python", target="response",
        ))
    registry.add(Verifier(
        id="manyih.unit_tests", func=_unit_tests, kind="unittest", target="response",
        params={
            "tests": Param(list, items=str, description="assert statements, one per test"),
            "setup": Param(str, default="", description="statements run before the code (e.g. imports)"),
            "compat": _COMPAT,
        },
        description="Every unit test passes against the extracted code (sandboxed).",
    ))
    registry.add(Verifier(
        id="manyih.if_code", func=_if_code, kind="unittest", target="response",
        params={
            "code": Param(str, description="Python source defining check_following(response) -> bool"),
            "compat": _COMPAT,
        },
        description="The constraint's check_following(response) returns True (run in the sandbox).",
    ))
    registry.add(Verifier(
        id="manyih.if_judge", func=None, kind="judge", target="response",
        params={
            "prompt": Param(str, description="the YES/NO judge prompt; {response} marks the reply"),
            "condition": Param(str, default="", description="optional YES/NO prompt: the constraint applies only "
                                                            "when it holds"),
            "compat": _COMPAT,
        },
        description="The judge panel decides the constraint from its YES/NO prompt.",
        criterion=judge_criterion,
    ))
