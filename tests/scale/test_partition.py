"""The split itself: deterministic, disjoint, complete, sizes within one, cost balanced; where K/N comes from."""

from __future__ import annotations

import random

import pytest

from pytest_ifbench.scale.partition import assign, expected_cost, parse_spec
from pytest_ifbench.scale.shard import shard_from


@pytest.mark.parametrize("count", [1, 2, 3, 7, 20])
def test_split_is_a_partition_with_sizes_within_one(count):
    costs = {f"s.yaml::i{n}": expected_cost(protocol="agent" if n % 5 == 0 else "single_turn",
                                            turns=n % 3, samples=1 + n % 2) for n in range(53)}
    split = assign(costs, count)
    assert set(split) == set(costs) and set(split.values()) <= set(range(1, count + 1))
    sizes = [sum(1 for k in split.values() if k == shard) for shard in range(1, count + 1)]
    assert max(sizes) - min(sizes) <= 1
    shuffled = dict(random.Random(1).sample(sorted(costs.items()), len(costs)))
    assert assign(shuffled, count) == split, "the order of collection does not matter"


def test_heavy_instances_are_spread():
    costs = {f"a{n}": expected_cost(protocol="agent", turns=1, samples=1) for n in range(3)}
    costs |= {f"b{n}": 1.0 for n in range(9)}
    split = assign(costs, 3)
    assert sorted(split[f"a{n}"] for n in range(3)) == [1, 2, 3]
    loads = [sum(c for k, c in costs.items() if split[k] == s) for s in (1, 2, 3)]
    assert max(loads) - min(loads) <= 1.0


def test_the_engines_variables():
    assert shard_from("2/5", {"IFBENCH_SHARD": "1", "IFBENCH_SHARDS": "2"}).label == "2/5", "the option wins"
    assert shard_from(None, {"IFBENCH_SHARD": "2", "IFBENCH_SHARDS": "4"}).label == "2/4"
    assert shard_from(None, {"JOB_COMPLETION_INDEX": "0", "IFBENCH_SHARDS": "4"}).label == "1/4"
    assert shard_from(None, {"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_COUNT": "8"}).label == "8/8"
    assert shard_from(None, {"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_COUNT": "4",
                             "SLURM_ARRAY_TASK_MIN": "5"}).label == "3/4"
    with pytest.raises(ValueError, match="IFBENCH_SHARDS"):  # an Indexed Job says N through IFBENCH_SHARDS
        shard_from(None, {"JOB_COMPLETION_INDEX": "3"})
    with pytest.raises(ValueError, match="no shard index"):  # the count alone ran every instance in every job
        shard_from(None, {"IFBENCH_SHARDS": "4"})
    assert shard_from("1/1", {"IFBENCH_SHARDS": "4"}).label == "1/1"
    assert shard_from(None, {}) is None


@pytest.mark.parametrize("text", ["", "3", "0/3", "4/3", "a/b", "1/0"])
def test_bad_specs(text):
    with pytest.raises(ValueError, match="--ifbench-shard"):
        parse_spec(text)


def _slurm(task: int, spec: str) -> dict[str, str]:
    """The variables SLURM sets in one task of ``--array=spec`` (``0-8:2``, ``1,3,5``)."""
    if "," in spec:
        ids = [int(i) for i in spec.split(",")]
        step = None
    else:
        span, _, by = spec.partition(":")
        low, high = map(int, span.split("-"))
        step = int(by or 1)
        ids = list(range(low, high + 1, step))
    out = {"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_COUNT": str(len(ids)),
           "SLURM_ARRAY_TASK_MIN": str(min(ids)), "SLURM_ARRAY_TASK_MAX": str(max(ids))}
    return {**out, **({"SLURM_ARRAY_TASK_STEP": str(step)} if step else {})}


def test_a_stepped_slurm_array_numbers_its_tasks_by_place():
    """``--array=0-8:2`` ran shards 1/5, 3/5 and 5/5 in tasks 0, 2 and 4 and refused 6 and 8: shards 2 and 4
    never ran while three tasks paid. Each task's shard is now its place among the array's ids."""
    assert [shard_from(None, _slurm(t, "0-8:2")).label for t in (0, 2, 4, 6, 8)] == ["1/5", "2/5", "3/5", "4/5",
                                                                                       "5/5"]
    assert [shard_from(None, _slurm(t, "3-5")).label for t in (3, 4, 5)] == ["1/3", "2/3", "3/3"]


def test_an_irregular_slurm_array_is_refused_in_every_task():
    for task in (1, 3, 5):
        with pytest.raises(ValueError, match=r"not 3 evenly spaced ids: give the array one range"):
            shard_from(None, _slurm(task, "1,3,5"))
