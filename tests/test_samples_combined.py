"""Combining a check's outcomes over an instance's samples (``generation.samples``): a check passes when it
passed in at least half of the samples that reached it; a sample that left it undecided decides nothing."""

from __future__ import annotations

import pytest

from pytest_ifbench import CheckOutcome, CheckSpec, Verdict
from pytest_ifbench._collect import combine_samples

CHECK = CheckSpec(id="c", verifier="ifbench.judge", params={})


def _sample(outcome: bool | str) -> list[tuple[int, CheckOutcome]]:
    if isinstance(outcome, str):  # an error: the verifier raised, the judge left it out
        return [(1, CheckOutcome(check=CHECK, verdict=None, error=outcome))]
    return [(1, CheckOutcome(check=CHECK, verdict=Verdict(passed=outcome, evidence="seen")))]


@pytest.mark.parametrize(("samples", "passed"), [
    ([True, True, False], True),
    ([True, False], True),  # a tie passes (at least half)
    ([True, "omitted"], True),  # whatever the judge would have said: 1 of 2 is half
    ([False, False, "omitted"], False),  # at most 1 of 3
    ([True, True, False, "omitted"], True),
])
def test_a_decided_outcome_stands_whatever_the_undecided_samples_were(samples, passed):
    ((turn, combined),) = combine_samples([_sample(s) for s in samples])
    assert combined.error is None and combined.verdict.passed is passed
    undecided = sum(isinstance(s, str) for s in samples)
    if undecided:
        assert combined.verdict.details["undecided"] == undecided
        assert f"({undecided} more left it undecided: omitted)" in combined.verdict.evidence


@pytest.mark.parametrize("samples", [[False, "omitted"], [True, False, False, "omitted"], [False, "a", "b"]])
def test_undecided_samples_that_could_tip_the_outcome_leave_the_check_undecided(samples):
    """[False, omitted] was a failure (0 of 1 decided), though the omitted sample's pass would have made it
    1 of 2, a pass: a judge's omission decided the check silently. It is undecided (an error), as the core's
    metrics count a check with no decision."""
    ((_, combined),) = combine_samples([_sample(s) for s in samples])
    assert combined.verdict is None and combined.error.startswith("undecided: passed in "), combined


def test_every_sample_undecided_keeps_the_first_error():
    ((_, combined),) = combine_samples([_sample("first"), _sample("second")])
    assert combined.error == "first"
