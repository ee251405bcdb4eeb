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

from pytest_ifbench import Param, Verdict, Verifier

from .checks import check_style
from .ppi import COMPAT_MODES, extract, reference_asserts
from .reference_styles import reference_code, reference_style
from .styles import ALIASES, STYLES

_COMPAT = Param(str, default="paper", choices=COMPAT_MODES,
                description="paper: the instruction's plain meaning; reference: the authors' checker, quirks included")


def _limits(ctx: Any):
    from pytest_ifbench.sandbox import SandboxLimits

    return SandboxLimits(**dict(ctx.sandbox)) if ctx is not None and getattr(ctx, "sandbox", None) else SandboxLimits()


def _style_verifier(style_id: str):
    style = STYLES[style_id]

    def verify(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
        compat = params["compat"]
        if compat == "reference":
            passed, evidence = reference_style(style_id, text)
        else:
            passed, evidence = check_style(style_id, extract(text))
        return Verdict(passed=passed, evidence=evidence,
                       details={"style": style_id, "group": style.group, "compat": compat})

    return verify


def _unit_tests(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    if params["compat"] == "reference":
        return _reference_unit_tests(text, params, ctx)
    from pytest_ifbench.sandbox import run_assert_tests

    tests, setup = list(params["tests"]), params["setup"]
    run = run_assert_tests(extract(text), tests, setup=setup, limits=_limits(ctx))
    return Verdict(passed=run.passed, evidence=run.summary(),
                   details={"failed_tests": [o.name for o in run.outcomes if not o.passed],
                            "tests": len(run.outcomes), "compat": "paper"})


def _reference_unit_tests(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """The authors' rule: no code fails; no assert line passes; else every assert line must pass."""
    from .reference_runs import run_reference_asserts

    details: dict[str, Any] = {"compat": "reference"}
    code = reference_code(text)
    if not code:
        return Verdict(passed=False, evidence="(reference) no code in the reply", details=details)
    asserts = reference_asserts(params["tests"])
    if not asserts:
        return Verdict(passed=True, evidence="(reference) no assert lines: passes", details=details | {"tests": 0})
    run = run_reference_asserts(code, asserts, _limits(ctx))
    if not run.ran:
        return Verdict(passed=False, evidence=f"(reference) the run did not finish: {run.problem}", details=details)
    failed = [f"test_{i}: {why}" for i, (ok, why) in enumerate(run.results) if not ok]
    evidence = f"{len(asserts) - len(failed)}/{len(asserts)} assert lines pass" + (
        ": " + "; ".join(failed[:5]) if failed else "")
    return Verdict(passed=not failed, evidence=f"(reference) {evidence}",
                   details=details | {"tests": len(asserts), "failed_tests": [f.split(":")[0] for f in failed]})


def _if_code(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """Run the constraint's ``check_following(response)`` in the sandbox with the reply on stdin."""
    if params["compat"] == "reference":
        return _reference_if_code(text, params, ctx)
    from pytest_ifbench.sandbox import run_python

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


def _reference_if_code(text: str, params: Mapping[str, Any], ctx: Any) -> Verdict:
    """The authors' score; a constraint they score None is not applicable (left out of every rate)."""
    from .reference_runs import if_score, run_reference_if_code

    score, evidence = if_score(run_reference_if_code(params["code"], text, _limits(ctx)))
    return Verdict(passed=bool(score), evidence=f"(reference) {evidence}", applicable=score is not None,
                   details={"compat": "reference"})


_YES_NO_TAIL = re.compile(r"\s*Please answer\s+YES\s*/\s*NO\b.*\Z", re.S | re.I)


def _judge_text(prompt: str) -> str:
    return _YES_NO_TAIL.sub("", prompt).replace("{response}", "(the RESPONSE above)").strip()


def judge_criterion(params: Mapping[str, Any]) -> str:
    """The judge requirement for an IF constraint: its YES/NO prompt, with the reply left to the judge.

    paper: a conditional constraint whose condition does not hold is met (the paper's reviewers accept
    such replies, section 5); reference: the judge may answer not applicable (:func:`judge_condition`),
    which leaves the constraint out of every rate as the authors' evaluator scores it None."""
    prompt = _judge_text(params["prompt"])
    if params.get("condition") and params["compat"] == "paper":
        return (f"This requirement applies only when the following holds: {_judge_text(params['condition'])} "
                f"-- when it does not hold, the requirement counts as met. Requirement: {prompt}")
    return prompt


def judge_condition(params: Mapping[str, Any]) -> str | None:
    """Reference mode: the condition under which the constraint is scored at all."""
    if params.get("condition") and params["compat"] == "reference":
        return _judge_text(params["condition"])
    return None


def register(registry) -> None:
    for style_id, style in STYLES.items():
        registry.add(Verifier(
            id=f"manyih.{style_id}", func=_style_verifier(style_id), params={"compat": _COMPAT},
            description=style.instruction, kind="python", target="response",
        ))
    for official, ours in ALIASES.items():
        registry.alias(f"manyih.{official}", f"manyih.{ours}")
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
        criterion=judge_criterion, condition=judge_condition,
    ))
