"""``--ifbench-shard=K/N``: run one deterministic, balanced part of the selected instances.

The shard comes from the option, or from the variables the engines set (the option wins):

* ``IFBENCH_SHARD`` (K, 1-based) with ``IFBENCH_SHARDS`` (N): anywhere (a CI matrix);
* ``JOB_COMPLETION_INDEX`` (0-based, set by a Kubernetes Indexed Job) with ``IFBENCH_SHARDS``;
* ``SLURM_ARRAY_TASK_ID`` with ``SLURM_ARRAY_TASK_COUNT`` (and ``SLURM_ARRAY_TASK_MIN``, the
  first id of the array, 0 when unset).

An index without its count is a usage error naming both variables: every task would
otherwise run (and pay for) every instance.

After every other deselection (``-m``, ``-k``, the ``full`` marker) the selection is split
by :func:`.partition.assign`; instances of other shards are deselected, and other tests
(not instances) run in every shard. Each xdist worker computes the same split, so ``-n``
works inside a shard. The results file gets a ``shard`` entry (index, count, where it
came from, the run's id and where that came from, the run settings, the whole
selection's assignment), which ``ifbench merge`` uses to refuse another run's file and
to name a missing shard and the instances it would have run. The run's id is
``--ifbench-run-id``, ``IFBENCH_RUN_ID``, or an engine's id that is the same in every
shard of one run (:data:`ENGINE_RUN_IDS`). A shard that drew no instance still writes
its (empty) results file, so the merge knows it ran, and when the selection had instances
(the split, not ``-k``/``-m`` or an empty directory, left it none) it exits 0 where pytest
would exit 5 (no tests ran); one that drew instances and
recorded none (interrupted before the first finished) writes none, leaving an earlier
attempt's file alone; under ``--collect-only`` it writes none, as an unsharded run does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from .partition import ShardSpec, assign, expected_cost, parse_spec

SPEC_KEY = pytest.StashKey["ShardSpec | None"]()
#: The results file's ``shard`` entry (on the controller: what a worker sent, or this process's own).
META_KEY = pytest.StashKey[dict[str, Any]]()
#: The run's id and where it came from (``--ifbench-run-id``, a variable's name), or None.
RUN_ID_KEY = pytest.StashKey["tuple[str, str] | None"]()
_WORKER_OUTPUT = "ifbench_shard"
#: The engines' variables that are the same in every shard of one run, in the order they are read: a GitHub
#: Actions run (kept by a re-run of its failed jobs), a GitLab CI pipeline, a SLURM array. A Kubernetes Indexed
#: Job has none: docs/scale.md says how to set IFBENCH_RUN_ID from the Job's labels.
ENGINE_RUN_IDS = ("GITHUB_RUN_ID", "CI_PIPELINE_ID", "SLURM_ARRAY_JOB_ID")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ifbench")
    group.addoption("--ifbench-shard", dest="ifbench_shard", default=None, metavar="K/N",
                    help="run shard K of N of the selected instances (deterministic, balanced by expected "
                         "cost); default: from IFBENCH_SHARD/IFBENCH_SHARDS, JOB_COMPLETION_INDEX (with "
                         "IFBENCH_SHARDS) or SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT; merge the shards' "
                         "results files with 'ifbench merge'")
    group.addoption("--ifbench-run-id", dest="ifbench_run_id", default=None, metavar="ID",
                    help="the id of the run this shard is part of, the same in every shard: 'ifbench merge' refuses "
                         "shards of different runs; default: IFBENCH_RUN_ID, else the engine's (GITHUB_RUN_ID, "
                         "CI_PIPELINE_ID, SLURM_ARRAY_JOB_ID)")


def shard_from(option: str | None, environ: Mapping[str, str]) -> ShardSpec | None:
    """The shard this process runs, or None; ValueError (naming the option or variable) when malformed."""
    if option:
        return parse_spec(option)
    count = environ.get("IFBENCH_SHARDS")
    if environ.get("IFBENCH_SHARD"):
        if not count:
            raise ValueError(_without_count("IFBENCH_SHARD", "IFBENCH_SHARDS", "the number of jobs"))
        return parse_spec(f"{environ['IFBENCH_SHARD']}/{count}", source="IFBENCH_SHARD/IFBENCH_SHARDS")
    if environ.get("JOB_COMPLETION_INDEX"):
        if not count:
            raise ValueError(_without_count("JOB_COMPLETION_INDEX", "IFBENCH_SHARDS", "the Job's completions"))
        index = _integer(environ["JOB_COMPLETION_INDEX"], "JOB_COMPLETION_INDEX")
        return parse_spec(f"{index + 1}/{count}", source="JOB_COMPLETION_INDEX/IFBENCH_SHARDS")
    if environ.get("SLURM_ARRAY_TASK_ID"):
        if not environ.get("SLURM_ARRAY_TASK_COUNT"):
            raise ValueError(_without_count("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "the array's size"))
        return parse_spec(f"{_slurm_place(environ)}/{environ['SLURM_ARRAY_TASK_COUNT']}",
                          source="SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT")
    if count:
        raise ValueError(f"IFBENCH_SHARDS={count} is set but no shard index is: set IFBENCH_SHARD (1-based) in "
                         "each job, or run as a Kubernetes Indexed Job (JOB_COMPLETION_INDEX); give "
                         "--ifbench-shard=1/1 to run every instance")
    return None


def _slurm_place(environ: Mapping[str, str]) -> int:
    """A SLURM array task's shard: its place among the array's ids, from the lowest, every
    ``SLURM_ARRAY_TASK_STEP`` (``--array=0-8:2``: task 6 is the fourth). An array whose ids are not one
    regular range (``--array=1,3,5`` without a step) is refused in every task, naming it: numbered by their
    ids, some tasks would run (and pay for) a shard while others were out of range, and the shards between
    would never run."""
    task = _integer(environ["SLURM_ARRAY_TASK_ID"], "SLURM_ARRAY_TASK_ID")
    first = _integer(environ.get("SLURM_ARRAY_TASK_MIN") or "0", "SLURM_ARRAY_TASK_MIN")
    step = _integer(environ.get("SLURM_ARRAY_TASK_STEP") or "1", "SLURM_ARRAY_TASK_STEP")
    count = _integer(environ["SLURM_ARRAY_TASK_COUNT"], "SLURM_ARRAY_TASK_COUNT")
    last = environ.get("SLURM_ARRAY_TASK_MAX")
    regular = step > 0 and (task - first) % step == 0 and (
        last is None or (_integer(last, "SLURM_ARRAY_TASK_MAX") - first) == (count - 1) * step)
    if not regular:
        raise ValueError(f"SLURM array tasks {first}..{last} (step {step}) are not {count} evenly spaced ids: "
                         "give the array one range (--array=0-4, or 0-8:2), or set IFBENCH_SHARD/IFBENCH_SHARDS "
                         "in each task")
    return (task - first) // step + 1


def run_id_from(option: str | None, environ: Mapping[str, str]) -> tuple[str, str] | None:
    """The run's id and where it came from, or None when nothing gives one (a shard run by hand)."""
    if option and option.strip():
        return option.strip(), "--ifbench-run-id"
    for name in ("IFBENCH_RUN_ID", *ENGINE_RUN_IDS):
        value = environ.get(name, "").strip()
        if value:
            return value, name
    return None


def _without_count(index: str, count: str, what: str) -> str:
    """An engine's index without the number of shards: running every instance in every task would pay for the
    whole run once per task, so it is refused, saying how to shard and how to run everything."""
    return (f"{index} is set but {count} (the number of shards) is not: set {count} to {what} to run one "
            f"shard per task, or give --ifbench-shard=1/1 to run every instance")


def _integer(text: str, name: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"{name}: expected an integer, got {text!r}") from None


def pytest_configure(config: pytest.Config) -> None:
    try:
        config.stash[SPEC_KEY] = shard_from(config.getoption("ifbench_shard"), os.environ)
    except ValueError as exc:
        raise pytest.UsageError(f"pytest-ifbench: {exc}") from None
    config.stash[RUN_ID_KEY] = run_id_from(config.getoption("ifbench_run_id"), os.environ)


def _cost(item: pytest.Item) -> float:
    spec = item.spec  # type: ignore[attr-defined]
    return expected_cost(protocol=spec.protocol, turns=len(spec.turns), samples=spec.generation.samples)


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):
    # A wrapper: every other deselection (-m, -k, the `full` marker) has happened when this continues.
    result = yield
    spec = config.stash.get(SPEC_KEY, None)
    if spec is None:
        return result
    from .._collect import InstanceItem

    instances = [item for item in items if isinstance(item, InstanceItem)]
    assignment = assign({item.nodeid: _cost(item) for item in instances}, spec.count)
    dropped = [item for item in instances if assignment[item.nodeid] != spec.index]
    if dropped:
        gone = {id(item) for item in dropped}
        items[:] = [item for item in items if id(item) not in gone]
        config.hook.pytest_deselected(items=dropped)
    config.stash[META_KEY] = _meta(config, spec, assignment)
    return result


def _meta(config: pytest.Config, spec: ShardSpec, assignment: Mapping[str, int] | None) -> dict[str, Any]:
    """The ``shard`` entry; without ``assignment`` before the split is known (a journal's header)."""
    from ..suite.run_settings import generation_overrides

    meta: dict[str, Any] = {"index": spec.index, "count": spec.count, "source": spec.source}
    run_id = config.stash.get(RUN_ID_KEY, None)
    if run_id is not None:
        meta["run"], meta["run_source"] = run_id
    meta |= {"settings": generation_overrides(config),
             "judge_given": bool(config.getoption("ifbench_judge_models", None))}
    if assignment is not None:
        meta["assignment"] = dict(sorted(assignment.items()))
    return meta


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """The xdist controller collects nothing itself: it takes the split from a worker."""
    text = getattr(node, "workeroutput", {}).get(_WORKER_OUTPUT)
    if text and META_KEY not in node.config.stash:
        node.config.stash[META_KEY] = json.loads(text)


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session):
    config = session.config
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None and META_KEY in config.stash:  # an xdist worker: tell the controller
        workeroutput[_WORKER_OUTPUT] = json.dumps(config.stash[META_KEY])
    result = yield
    # The core's sessionfinish has written the results file with the shard entry (pytest_ifbench_results_meta)
    # if the shard recorded an instance. A shard whose split gave it none writes an empty one, so the merge
    # knows it ran. One that drew instances and recorded none (interrupted before the first finished, its items
    # deselected after the split) writes none: an empty file would replace an earlier attempt's results (with no
    # file at all, the merge names the shard missing and lists its instances). No record opened the journal either,
    # so an earlier killed attempt's journal stays for the merge. --collect-only ran nothing: like an unsharded
    # run, it writes no file.
    meta = config.stash.get(META_KEY, None)
    target = config.getoption("ifbench_results", None)
    if (workeroutput is None and meta is not None and target and not config.getoption("collectonly")
            and drew_no_instance(meta)):
        path = Path(target)
        write_empty_results(path if path.is_absolute() else Path(config.invocation_params.dir) / path, meta, config)
    # A shard the split left empty ran and had nothing to do: exit 0, not pytest's 5, which a CI job takes for a
    # failure. After the other sessionfinish hooks: one (syrupy's) sets the status again from the one it was given.
    if workeroutput is None and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED \
            and split_left_it_empty(meta):
        session.exitstatus = pytest.ExitCode.OK
    return result


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """One line: which shard ran, how many of the selection's instances it drew, and of which run -- or, with
    no run id, how to give one (only the merge would say so otherwise, after every shard has run)."""
    meta = config.stash.get(META_KEY, None)
    if meta is None or hasattr(config, "workerinput"):
        return
    assignment = meta.get("assignment") or {}
    drawn = sum(1 for index in assignment.values() if index == meta["index"])
    run = (f"run {meta['run']!r} (from {meta['run_source']})" if meta.get("run") else
           "no run id: give every shard of the run the same IFBENCH_RUN_ID (or --ifbench-run-id) and "
           "'ifbench merge' refuses another run's file")
    terminalreporter.write_line(f"ifbench: shard {meta['index']}/{meta['count']} (from {meta['source']}): "
                                f"{drawn} of {len(assignment)} instance(s); {run}")


def pytest_ifbench_results_meta(config: pytest.Config) -> dict[str, Any] | None:
    """The results file's ``shard`` entry (on the controller). Asked for a journal's header too: an xdist
    controller learns the split only from its workers at the end, so a killed run's journal may have the
    entry without the assignment (``ifbench merge`` takes that from the other shards)."""
    if hasattr(config, "workerinput"):
        return None
    meta = config.stash.get(META_KEY, None)
    spec = config.stash.get(SPEC_KEY, None)
    if meta is None and spec is not None:
        meta = _meta(config, spec, None)
    return None if meta is None else {"shard": meta}


def drew_no_instance(meta: Mapping[str, Any]) -> bool:
    """Whether the split (the entry's ``assignment``) gave this shard no instance of the selection."""
    return meta["index"] not in set((meta.get("assignment") or {}).values())


def split_left_it_empty(meta: Mapping[str, Any] | None) -> bool:
    """Whether the selection had instances and the split gave this shard none of them. A selection with no
    instance at all (a ``-k`` or ``-m`` that matches none, an empty suite directory) is not the split's doing:
    that run keeps pytest's exit status 5."""
    return meta is not None and bool(meta.get("assignment")) and drew_no_instance(meta)


def write_empty_results(path: Path, meta: Mapping[str, Any], config: pytest.Config) -> None:
    """The results file of a shard that drew no instance: its ``shard`` entry and no records."""
    from .._state import RECORDS_KEY, STATE_KEY
    from ..reports.records import write_results

    if config.stash.get(RECORDS_KEY, None):
        return
    state = config.stash[STATE_KEY]
    write_results(path, [], {"shard": meta, "model": state.model_name, "judges": state.judge_names,
                             "generation": {}})
