"""Evaluating an instance's checks against one response.

Work is batched by verifier kind: all ruff-backed checks share ruff runs,
judged checks read the verdicts the judge panel produced in the background,
everything else is called one by one. A verifier that raises produces an
error outcome for its own check only.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._registry import Registry, Verifier, VerifyContext
from ._text import extract_code
from ._types import CheckSpec, JudgeOmission, Verdict

if TYPE_CHECKING:
    from .ruff.batch import RuffBatcher
    from .sandbox import SandboxUnavailable  # noqa: F401 - what _sandbox_unavailable recognises


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


def _sandbox_unavailable(exc: Exception) -> bool:
    """Whether ``exc`` is the sandbox's :class:`SandboxUnavailable`. Checked without importing the
    sandbox (``ifbench verify`` of text checks never needs it): if it was never imported, nothing
    can have raised its error."""
    sandbox = sys.modules.get(f"{__package__}.sandbox")
    return sandbox is not None and isinstance(exc, sandbox.SandboxUnavailable)


def _pattern_timeout(exc: Exception) -> bool:
    """Whether ``exc`` is a suite pattern's ``PatternTimeout`` (checked as :func:`_sandbox_unavailable` is).

    The text it ran on is the reply's (or what the agent left): were it an error, the instance would be
    left out of the scores, and a reply could trade a check it does not meet for an excluded instance."""
    patterns = sys.modules.get(f"{__package__}.verifiers._patterns")
    return patterns is not None and isinstance(exc, patterns.PatternTimeout)


def evaluate(checks: Sequence[CheckSpec], response: str, ctx: VerifyContext, *,
             ruff: RuffBatcher | None = None) -> list[CheckOutcome]:
    """Outcomes for ``checks`` on ``response`` in the checks' order.

    Ruff-backed checks read the results of ``ruff`` (else of the active
    batcher, ``RuffBatcher.active``) when it has this reply queued, and run
    their own ruff process otherwise.
    """
    outcomes: dict[str, CheckOutcome] = {}
    in_ruff: list = []
    if any(ctx.registry.get(check.verifier).kind == "ruff" for check in checks):
        from .ruff.batch import ruff_checks  # ruff's modules load with the first ruff-backed check

        in_ruff = ruff_checks(checks, ctx.registry)
    ruff_ids = {check.id for check, _ in in_ruff}
    for check in checks:
        if check.id in ruff_ids:
            continue
        verifier = ctx.registry.get(check.verifier)
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
            if _pattern_timeout(exc):  # the reply made the suite's pattern run past its bound: not met
                outcomes[check.id] = CheckOutcome(check=check, duration=time.perf_counter() - start, verdict=Verdict(
                    passed=False, evidence=f"not met: {exc} (a reply cannot turn a check into an error)"))
                continue
            if _sandbox_unavailable(exc):  # no OS sandbox here: its one-line reason, nothing ran unconfined
                outcomes[check.id] = CheckOutcome(check=check, verdict=None, duration=time.perf_counter() - start,
                                                  error=str(exc))
                continue
            outcomes[check.id] = CheckOutcome(
                check=check, verdict=None, duration=time.perf_counter() - start,
                error=f"verifier {verifier.id} raised {type(exc).__name__}: {exc}\n"
                      + "".join(traceback.format_exception(exc)[-3:]),
            )
    if in_ruff:
        from .ruff.batch import active_batcher
        from .ruff.check import RuffError, check_code

        start = time.perf_counter()
        code = extract_code(response)
        rcs = [rc for _, rc in in_ruff]
        batcher = ruff if ruff is not None else active_batcher()
        batched = batcher.results(code, rcs) if batcher is not None else None
        if batched is None:
            found = check_code(code, rcs)
            share = (time.perf_counter() - start) / len(in_ruff)
        else:
            found, share = batched
        for check, rc in in_ruff:
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
    return verify_validated(registry, verifier, verifier.validate(params), response, judged=judged)


def verify_validated(registry: Registry, verifier: Verifier, params: dict[str, Any], response: str, *,
                     judged: Verdict | None = None) -> Verdict:
    """:func:`verify_one` for params ``verifier.validate`` already returned (not validated again)."""
    check = CheckSpec(id="case", verifier=verifier.id, params=params)
    ctx = VerifyContext(registry=registry, judged={"case": judged} if judged else {})
    (outcome,) = evaluate([check], response, ctx)
    if outcome.error:
        raise RuntimeError(outcome.error)
    assert outcome.verdict is not None
    return outcome.verdict
