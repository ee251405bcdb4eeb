"""Evaluating an instance's checks against one response.

Work is batched by verifier kind: all ruff-backed checks share ruff runs,
judged checks read the verdicts the judge panel produced in the background,
everything else is called one by one. A verifier that raises produces an
error outcome for its own check only.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._model_types import CheckSpec, JudgeOmission, Verdict
from ._registry import Registry, Verifier, VerifyContext
from ._ruff import RuffCheck, RuffError, check_code
from ._text import extract_code


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckOutcome:
    check: CheckSpec
    verdict: Verdict | None
    error: str | None = None
    duration: float = 0.0

    @property
    def passed(self) -> bool:
        """Met; False for an unmet, errored or not applicable check."""
        return self.verdict is not None and self.verdict.passed and self.verdict.applicable

    @property
    def applicable(self) -> bool:
        """False only when the verifier (or judge) said the check's condition did not arise."""
        return self.verdict is None or self.verdict.applicable

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check.id, "verifier": self.check.verifier,
            "passed": self.passed, "error": self.error, "duration": round(self.duration, 6),
            **({} if self.applicable else {"applicable": False}),
            **({"verdict": self.verdict.to_json()} if self.verdict else {}),
        }


def _text_for(verifier: Verifier, response: str) -> str:
    return extract_code(response) if verifier.target == "code" else response


def _ruff_verdict(violations: list) -> Verdict:
    if not violations:
        return Verdict(passed=True, evidence="no violations")
    shown = "\n".join(v.render() for v in violations[:5])
    more = f"\n(and {len(violations) - 5} more)" if len(violations) > 5 else ""
    return Verdict(
        passed=False, evidence=shown + more,
        details={"violations": [v.code or "syntax-error" for v in violations]},
    )


def evaluate(checks: Sequence[CheckSpec], response: str, ctx: VerifyContext) -> list[CheckOutcome]:
    """Outcomes for ``checks`` on ``response`` in the checks' order."""
    outcomes: dict[str, CheckOutcome] = {}
    ruff_checks: list[tuple[CheckSpec, RuffCheck]] = []
    for check in checks:
        verifier = ctx.registry.get(check.verifier)
        if verifier.kind == "ruff" and verifier.ruff is not None:
            ruff_checks.append((check, RuffCheck(
                key=check.id, select=verifier.ruff.select(check.params),
                settings=verifier.ruff.settings(check.params),
            )))
            continue
        if verifier.kind == "judge":
            verdict = ctx.judged.get(check.id)
            if isinstance(verdict, JudgeOmission):
                outcomes[check.id] = CheckOutcome(check=check, verdict=None, error=verdict.reason)
                continue
            outcomes[check.id] = CheckOutcome(
                check=check, verdict=verdict,
                error=None if verdict else "no judge verdict was produced for this check",
            )
            continue
        start = time.perf_counter()
        try:
            assert verifier.func is not None
            verdict = verifier.func(_text_for(verifier, response), check.params, ctx)
            outcomes[check.id] = CheckOutcome(check=check, verdict=verdict, duration=time.perf_counter() - start)
        except Exception as exc:  # a broken verifier must not take the other checks down
            outcomes[check.id] = CheckOutcome(
                check=check, verdict=None, duration=time.perf_counter() - start,
                error=f"verifier {verifier.id} raised {type(exc).__name__}: {exc}\n"
                      + "".join(traceback.format_exception(exc)[-3:]),
            )
    if ruff_checks:
        start = time.perf_counter()
        code = extract_code(response)
        found = check_code(code, [rc for _, rc in ruff_checks])
        share = (time.perf_counter() - start) / len(ruff_checks)
        for check, rc in ruff_checks:
            result = found[rc.key]
            if isinstance(result, RuffError):
                outcomes[check.id] = CheckOutcome(check=check, verdict=None, error=f"ruff failed: {result}",
                                                  duration=share)
            else:
                outcomes[check.id] = CheckOutcome(check=check, verdict=_ruff_verdict(result), duration=share)
    return [outcomes[check.id] for check in checks]


def verify_one(registry: Registry, verifier_id: str, params: Any, response: str, *,
               judged: Verdict | None = None) -> Verdict:
    """Validate params and verify a single text (``ifbench verify``)."""
    verifier = registry.get(verifier_id)
    clean = verifier.validate(params)
    check = CheckSpec(id="case", verifier=verifier_id, params=clean)
    ctx = VerifyContext(registry=registry, judged={"case": judged} if judged else {})
    (outcome,) = evaluate([check], response, ctx)
    if outcome.error:
        raise RuntimeError(outcome.error)
    assert outcome.verdict is not None
    return outcome.verdict
