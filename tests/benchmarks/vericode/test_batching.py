"""Batched ruff runs, with verdicts identical to one ruff process per instruction.

The reference ("alone") verdict runs ruff the way the paper's helper does
(appendix B.1: ``ruff check - --select ... --config ... --no-fix``, pass =
exit status 0), plus ``--isolated`` so no project configuration leaks in. Two
batched paths are compared with it: one ruff process per response (every
check of the response through ``_verify.evaluate``), and one ruff process for
all responses at once (``ruff.batch.check_many`` through a ``RuffBatcher``, as
suite runs and ``ifbench verify`` do). ``test_ruff_many.py`` covers the
batch runner's own guarantees.
"""

from __future__ import annotations

import itertools
import random
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from pytest_ifbench._composition import default_registry
from pytest_ifbench._text import extract_code
from pytest_ifbench._types import CheckSpec
from pytest_ifbench._verify import VerifyContext, evaluate
from pytest_ifbench.benchmarks.vericode.corpus import build_corpus, instruction_sets, random_params
from pytest_ifbench.benchmarks.vericode.instructions import BY_ID, INSTRUCTIONS
from pytest_ifbench.ruff import check as _ruff
from pytest_ifbench.ruff.batch import RuffBatcher
from pytest_ifbench.ruff.check import RuffCheck, plan_runs, ruff_binary

REGISTRY = default_registry()
RUFF_BACKED = [i for i in INSTRUCTIONS if i.ruff_backed]


def alone(code: str, instruction_id: str, params) -> bool:
    """The paper-style verdict: one ruff process for this instruction only."""
    instruction = BY_ID[instruction_id]
    args = ["--select", ",".join(instruction.select(params))]
    for setting in instruction.settings(params) if instruction.settings else ():
        args += ["--config", f"{setting.key} = {_ruff._toml(setting.value)}"]
    proc = subprocess.run([ruff_binary(), "check", "--isolated", "--no-cache", "-", *args, "--no-fix"],
                          input=code, capture_output=True, text=True, timeout=60)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode == 0


def _checks(chosen) -> list[CheckSpec]:
    return [CheckSpec(id=i, verifier=f"vericode.{i}", params=BY_ID[i].validate(p)) for i, p in chosen]


def batched(response: str, chosen, batcher: RuffBatcher | None = None) -> dict[str, bool]:
    outcomes = evaluate(_checks(chosen), response, VerifyContext(registry=REGISTRY), ruff=batcher)
    assert all(o.error is None for o in outcomes), [o.error for o in outcomes]
    return {o.check.id: o.passed for o in outcomes}


def all_at_once(responses, sets) -> list[dict[str, bool]]:
    """Every response queued first, then evaluated: one ruff process for all of them."""
    batcher = RuffBatcher(REGISTRY)
    for response, chosen in zip(responses, sets):
        batcher.queue(_checks(chosen), response)
    verdicts = [batched(response, chosen, batcher) for response, chosen in zip(responses, sets)]
    assert batcher.batches == 1 and batcher.replies == len(responses)
    return verdicts


def _compare(responses, sets):
    """Mismatches of the per-response and of the all-at-once path against running each check alone."""
    jobs = [(n, iid, params) for n, (response, chosen) in enumerate(zip(responses, sets)) for iid, params in chosen
            if BY_ID[iid].ruff_backed]
    ruff_binary()  # resolve once: its first call (sysconfig) is not thread-safe
    with ThreadPoolExecutor(max_workers=4) as pool:
        expected = list(pool.map(lambda job: alone(extract_code(responses[job[0]]), job[1], job[2]), jobs))
    per_response = [batched(response, chosen) for response, chosen in zip(responses, sets)]
    at_once = all_at_once(responses, sets)
    mismatches = [(path, iid, params, want) for (n, iid, params), want in zip(jobs, expected)
                  for path, got in (("per-response", per_response), ("all-at-once", at_once))
                  if got[n][iid] != want]
    return len(jobs), mismatches, expected


def test_all_27_ruff_instructions_at_once_equal_running_each_alone():
    responses = build_corpus(16, seed=11)
    rng = random.Random(3)
    sets = [[(i.id, random_params(i, rng)) for i in RUFF_BACKED] for _ in responses]
    total, mismatches, expected = _compare(responses, sets)
    assert total == 16 * 27
    assert not mismatches, mismatches[:5]
    assert 0.2 < sum(expected) / total < 0.9, "the corpus must exercise both verdicts"


def test_random_five_instruction_sets_equal_running_each_alone():
    responses = build_corpus(40, seed=12)
    sets = instruction_sets(40, 5, seed=12, ruff_only=False)
    total, mismatches, _ = _compare(responses, sets)
    assert total > 150
    assert not mismatches, mismatches[:5]


def test_shuffled_mix_of_replies_and_sets_equals_running_each_alone():
    """Replies repeated under different instruction sets, sets of every size, integer parameters
    from their whole range (many distinct ruff configurations in one batch), in shuffled order."""
    rng = random.Random(21)
    replies = build_corpus(12, seed=21)
    pool = [(reply, chosen) for reply in replies
            for chosen in instruction_sets(3, rng.randint(1, 8), seed=rng.random())]
    rng.shuffle(pool)
    responses, sets = [r for r, _ in pool], [s for _, s in pool]
    total, mismatches, expected = _compare(responses, sets)
    assert total > 120
    assert not mismatches, mismatches[:5]
    assert 0.2 < sum(expected) / total < 0.9


def test_one_ruff_process_per_response(monkeypatch):
    calls = []
    real = _ruff.run_group

    def counting(code, checks, **kwargs):
        calls.append(len(checks))
        return real(code, checks, **kwargs)

    monkeypatch.setattr(_ruff, "run_group", counting)
    rng = random.Random(4)
    for response in build_corpus(8, seed=13):
        calls.clear()
        chosen = [(i.id, random_params(i, rng)) for i in INSTRUCTIONS]
        verdicts = batched(response, chosen)
        assert len(verdicts) == 30
        assert calls == [27], calls


@pytest.mark.parametrize("variant", ["defaults", "extremes"])
def test_any_pair_of_instructions_shares_a_ruff_process(variant):
    def params(instruction):
        if variant == "defaults":
            return instruction.defaults()
        out = {}
        for name, spec in instruction.params.items():
            out[name] = spec.choices[-1] if spec.choices else int(spec.max) if spec.max is not None else spec.default
        return out

    checks = [RuffCheck(key=i.id, select=i.select(params(i)), settings=i.settings(params(i)) if i.settings else ())
              for i in RUFF_BACKED]
    for a, b in itertools.combinations(checks, 2):
        assert len(plan_runs([a, b])) == 1, (a.key, b.key)
    assert len(plan_runs(checks)) == 1
