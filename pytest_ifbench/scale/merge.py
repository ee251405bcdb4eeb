"""Shard results files -> the records and metadata of one run over their union.

Nothing is averaged here: the records are put together and every metric is computed
again from them by the run's own code (:mod:`.report`). Before that the files must
describe parts of one run: same model, judges, plugin version and run settings (the
``--ifbench-temperature``-style overrides a shard records; for results files without a
``shard`` entry, the generation settings per benchmark), the same split, and an
instance found in two files must carry the same verdicts. Anything else is a
:class:`MergeRefused` naming both files. A shard that is missing (``--expect N``, or a
gap in the indices the files name) is reported with the instances it would have run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..suite.run_settings import settings_by_benchmark


class MergeRefused(Exception):
    """The files are not parts of one run (the message names the files and what differs)."""


class NotResults(Exception):
    """A file is not a pytest-ifbench results file (the message says why)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardFile:
    path: Path
    meta: Mapping[str, Any]
    records: tuple[Mapping[str, Any], ...]

    @property
    def shard(self) -> Mapping[str, Any] | None:
        shard = self.meta.get("shard")
        return shard if isinstance(shard, dict) else None

    @property
    def label(self) -> str:
        shard = self.shard
        return f"{self.path} (shard {shard['index']}/{shard['count']})" if shard else str(self.path)


@dataclass(frozen=True, slots=True, kw_only=True)
class Merged:
    records: tuple[Mapping[str, Any], ...]
    #: The merged results file's metadata (model, judges, generation, merged_from, not_run).
    meta: Mapping[str, Any]
    #: Whether the shards ran with ``--judge-model`` (the summary's self-judging warning depends on it).
    judge_given: bool
    missing: tuple[int, ...] = ()
    not_run: tuple[str, ...] = field(default=())

    @property
    def complete(self) -> bool:
        return not self.missing and not self.not_run


def load(path: Path) -> ShardFile:
    from ..reports.results_stream import read_results_text

    try:
        data = read_results_text(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise NotResults(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:
        raise NotResults(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("instances"), list) or "format" not in data:
        raise NotResults(f"{path}: not a pytest-ifbench results file (no 'format' and 'instances')")
    records = tuple(r for r in data["instances"] if isinstance(r, dict) and isinstance(r.get("nodeid"), str))
    return ShardFile(path=Path(path), meta={k: v for k, v in data.items() if k != "instances"}, records=records)


def verdicts(record: Mapping[str, Any]) -> dict[str, Any]:
    """What must agree when one instance is in two files: its outcome, replies and verdicts (not timings,
    not whether a reply came from the cache)."""
    return {
        "status": record.get("status"), "error": record.get("error"), "ended": record.get("ended"),
        "replies": [(t.get("response") or {}).get("raw_text") for t in record.get("turns") or []],
        "samples": record.get("sample_responses"),
        "checks": [(c.get("id"), c.get("turn_ran"), c.get("passed"), c.get("error"),
                    (c.get("verdict") or {}).get("evidence")) for c in record.get("checks") or []],
    }


def _same_run(first: ShardFile, other: ShardFile) -> None:
    for key, what in (("model", "model"), ("judges", "judges"), ("plugin_version", "plugin version"),
                      ("format", "results format")):
        if first.meta.get(key) != other.meta.get(key):
            raise MergeRefused(f"{first.label} and {other.label} differ in {what}: "
                               f"{first.meta.get(key)!r} vs {other.meta.get(key)!r}")
    a, b = first.shard, other.shard
    if a and b:
        if a.get("settings") != b.get("settings"):
            raise MergeRefused(f"{first.label} and {other.label} differ in generation settings: "
                               f"{a.get('settings')!r} vs {b.get('settings')!r}")
        if a.get("judge_given") != b.get("judge_given"):
            raise MergeRefused(f"{first.label} and {other.label} differ in judges: one ran with --judge-model, "
                               "the other without")
        if a.get("count") != b.get("count") or a.get("assignment") != b.get("assignment"):
            raise MergeRefused(f"{first.label} and {other.label} are shards of different splits (another "
                               "number of shards, or another selection of instances: suites, -m, -k)")
    else:
        mine, theirs = first.meta.get("generation") or {}, other.meta.get("generation") or {}
        for benchmark in sorted(set(mine) & set(theirs)):
            if {s for s, _ in mine[benchmark]} != {s for s, _ in theirs[benchmark]}:
                raise MergeRefused(f"{first.label} and {other.label} differ in generation settings for "
                                   f"{benchmark}: {mine[benchmark]!r} vs {theirs[benchmark]!r}")


def merge(files: Sequence[ShardFile], *, expect: int | None = None) -> Merged:
    if not files:
        raise MergeRefused("no results files given")
    for other in files[1:]:
        _same_run(files[0], other)
    records: dict[str, Mapping[str, Any]] = {}
    origin: dict[str, ShardFile] = {}
    for file in files:
        for record in file.records:
            nodeid = record["nodeid"]
            if nodeid in records:
                if verdicts(records[nodeid]) != verdicts(record):
                    raise MergeRefused(f"{origin[nodeid].label} and {file.label} both hold {nodeid} "
                                       "with different records")
                continue
            records[nodeid], origin[nodeid] = record, file
    missing, not_run = _missing(files, records, expect)
    meta = {
        "model": files[0].meta.get("model"), "judges": files[0].meta.get("judges"),
        "generation": settings_by_benchmark(list(records.values())),
        "merged_from": [{"file": file.path.name, "shard": file.shard and f"{file.shard['index']}/"
                         f"{file.shard['count']}", "instances": len(file.records)} for file in files],
    }
    if missing or not_run:
        meta["not_run"] = list(not_run)
    judge_given = any(bool((file.shard or {}).get("judge_given")) for file in files) or any(
        list(r.get("judges") or []) != [r.get("model")] for r in records.values())
    return Merged(records=tuple(records[n] for n in sorted(records)), meta=meta, judge_given=judge_given,
                  missing=tuple(missing), not_run=tuple(not_run))


def _missing(files: Sequence[ShardFile], records: Mapping[str, Any], expect: int | None) -> tuple[list[int], list[str]]:
    """The shard indices no file holds, and the instances of the split that no file holds a record of."""
    sharded = [file.shard for file in files if file.shard]
    if not sharded:
        if expect is not None and len(files) < expect:
            return list(range(len(files) + 1, expect + 1)), []
        return [], []
    count = int(sharded[0]["count"])
    if expect is not None and expect != count:
        raise MergeRefused(f"--expect {expect}, but {files[0].label} is one of {count} shards")
    present = {int(shard["index"]) for shard in sharded}
    missing = [index for index in range(1, count + 1) if index not in present]
    assignment: Mapping[str, int] = sharded[0].get("assignment") or {}
    not_run = sorted(nodeid for nodeid in assignment if nodeid not in records)
    return missing, not_run
