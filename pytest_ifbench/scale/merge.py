"""Shard results files -> the records and metadata of one run over their union.

Nothing is averaged here: the records are put together and every metric is computed
again from them by the run's own code (:mod:`.report`). Before that the files must
describe parts of one run: the same run id (a shard entry's ``run``: a stale file of
last night's run with the same split is refused; a file without one is not compared,
and the merge notes it beside files that have one), same model, judges, plugin version
and run settings (the ``--ifbench-temperature``-style overrides a shard records), the
same split, and an instance found in two files must carry the same verdicts and
generation settings. Files without a ``shard`` entry have no run settings to compare:
each record carries its instance's own (a suite's ``generation:`` may give one instance
a temperature of its own), so only an instance both hold is compared, as ``ifbench
compare`` compares a pair; a benchmark's settings as a whole only where records lack
their own (older files). Anything else is a :class:`MergeRefused` naming both files. A
shard that is missing (``--expect N``, or a gap in the indices the files name) is
reported with the instances it would have run; a journal (a run that did not finish)
makes the merge incomplete too, and when no file holds the split the instances not run
cannot be listed: the merge says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..reports.records import SummaryViews, write_results
from ..reports.results_reader import ResultsReader
from ..reports.results_stream import ResultsJournal
from ..suite.run_settings import difference, settings_by_benchmark

#: A shard file's entries that ``merged_from`` keeps: what its shared cache did and its spending limit (the
#: merge's summary says which shard's store failed and which shard stopped paying).
_KEPT_ENTRIES = ("shared_cache", "spending_limit")


class MergeRefused(Exception):
    """The files are not parts of one run (the message names the files and what differs)."""


class NotResults(Exception):
    """A file is not a pytest-ifbench results file (the message says why)."""


class CannotWrite(Exception):
    """The merged records cannot be written beside ``--out`` (a full disk, a read-only directory)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultsFile:
    """A results file read for ``ifbench compare`` and ``--baseline-results``: its metadata and the compact
    view of each record (:class:`~..reports.records.SummaryViews`: what the metrics read, without the
    replies' raw text, the prompts or the evidence), so two runs of 50,000 instances fit in memory."""

    path: Path
    meta: Mapping[str, Any]
    records: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardFile:
    """One of the files a merge read: its metadata and how many instances it held."""

    path: Path
    meta: Mapping[str, Any]
    instances: int
    #: A journal (``*.partial.jsonl``): the run that wrote it did not finish (killed, out of time).
    unfinished: bool = False
    #: The benchmarks of which a record lacks its own ``generation`` (a file older than per-instance settings):
    #: only for those are the benchmark's settings as a whole compared with another file's.
    without_generation: frozenset[str] = frozenset()

    @property
    def shard(self) -> Mapping[str, Any] | None:
        shard = self.meta.get("shard")
        return shard if isinstance(shard, dict) else None

    @property
    def run_id(self) -> str | None:
        """The id of the run the file is part of (its shard entry's ``run``, a merged file's ``run``); None for a
        file without one: an older version's, or a shard's that no engine and no ``IFBENCH_RUN_ID`` gave one."""
        value = (self.shard or {}).get("run", self.meta.get("run"))
        return None if value is None else str(value)

    @property
    def run_label(self) -> str:
        """The run id as the merge's lines name it, with where the shard took it from."""
        source = (self.shard or {}).get("run_source")
        return f"run id {self.run_id!r}" + (f" (from {source})" if source else "")

    @property
    def label(self) -> str:
        shard = self.shard
        return f"{self.path} (shard {shard['index']}/{shard['count']})" if shard else str(self.path)


@dataclass(frozen=True, slots=True, kw_only=True)
class Merged:
    #: The compact view of each merged record (:class:`~..reports.records.SummaryViews`), by node id: what
    #: the tables and the summary read, as in a run. The records themselves wait in :attr:`spool`.
    records: tuple[Mapping[str, Any], ...]
    #: The merged results file's metadata (model, judges, generation, merged_from, not_run); its ``metrics``
    #: are computed by the run's reporters (:mod:`.report`) and given to :meth:`write`.
    meta: Mapping[str, Any]
    #: Whether the shards ran with ``--judge-model`` (the summary's self-judging warning depends on it).
    judge_given: bool
    #: The merged records on disk, written out as the results file by :meth:`write`.
    spool: ResultsJournal
    missing: tuple[int, ...] = ()
    not_run: tuple[str, ...] = field(default=())
    #: The files whose run did not finish (journals), as the merge names them: their run stopped before its
    #: end, so the merge is not complete even when :attr:`not_run` is empty.
    unfinished: tuple[str, ...] = ()
    #: Why the instances not run cannot be listed (no file holds the split they belong to), when they cannot:
    #: :attr:`not_run` is then not the whole of them.
    not_run_unknown: str | None = None
    #: What the merge says without refusing or making the merge incomplete (files with and without a run id).
    notes: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.missing and not self.not_run and not self.unfinished

    def write(self, metrics: Mapping[str, Any] | None = None) -> None:
        """Write the merged results file (records in node-id order, :attr:`meta` and ``metrics`` -- the
        results file's ``metrics`` entry, as a run over the records writes it -- at the top); the spool is
        removed either way. Raises :class:`CannotWrite`."""
        meta = {**self.meta, "metrics": metrics} if metrics is not None else self.meta
        try:
            if self.records:
                self.spool.finish(meta)
            else:
                write_results(self.spool.target, [], meta)
        except OSError as exc:
            raise CannotWrite(f"{self.spool.target}: {exc.strerror or exc}") from None
        finally:
            self.spool.discard()


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[ResultsReader]:
    """A reader of ``path``: what cannot be read, is not JSON or is not a results file is :class:`NotResults`,
    raised while the records are read or, for the missing ``format`` and ``instances``, after them."""
    try:
        with Path(path).open(encoding="utf-8", newline="") as handle:
            reader = ResultsReader(handle)
            yield reader
    except OSError as exc:
        raise NotResults(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:
        raise NotResults(f"{path}: not JSON ({exc})") from None
    if not reader.has_instances or "format" not in reader.meta:
        raise NotResults(f"{path}: not a pytest-ifbench results file (no 'format' and 'instances')")


def load(path: Path) -> ResultsFile:
    """The file's metadata and the views of its records (a journal's: of the last record of each node id)."""
    make_view = SummaryViews().view
    with _reading(path) as reader:
        latest = {record["nodeid"]: make_view(record) for record, _ in reader if isinstance(record.get("nodeid"), str)}
    records = tuple(latest[key] for key in sorted(latest)) if reader.journal else tuple(latest.values())
    return ResultsFile(path=Path(path), meta=reader.meta, records=records)


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


def _same_run_id(files: Sequence[ShardFile], file: ShardFile) -> None:
    """``file`` and the first file read that has a run id are of one run, when ``file`` has one too. Files
    without one are not compared (older files, shards no engine gave an id): :func:`_run_id_notes`."""
    earlier = next((earlier for earlier in files if earlier.run_id is not None), None)
    if earlier is None or file.run_id is None or earlier.run_id == file.run_id:
        return
    raise MergeRefused(
        f"{earlier.label} and {file.label} are parts of different runs: {earlier.run_label} vs {file.run_label}. "
        "Merge the files of one run: is one of them left from another run (a stale file in a shared results "
        "folder, a job that failed to upload)? A shard re-run as a new job gets a new id from its engine (a "
        "re-submitted SLURM task a new SLURM_ARRAY_JOB_ID, a re-created Kubernetes Job a new uid): set "
        "IFBENCH_RUN_ID (or --ifbench-run-id) to one value for every shard of the run")


def _run_id_notes(files: Sequence[ShardFile]) -> tuple[str, ...]:
    """The note for a merge of files with a run id and files without: not refused (an older file, a shard
    re-run by hand where no engine gives an id), but nothing says the latter are of this run."""
    with_id = next((file for file in files if file.run_id is not None), None)
    without = [file.label for file in files if file.run_id is None]
    if with_id is None or not without:
        return ()
    return (f"{', '.join(without)}: no run id, so not checked against the others' ({with_id.run_label}); "
            "merged, but make sure it is of this run (a shard re-run by hand records one with "
            f"IFBENCH_RUN_ID={with_id.run_id})",)


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
        splits = [shard["assignment"] for shard in (a, b) if "assignment" in shard]  # a journal's may lack it
        if a.get("count") != b.get("count") or (len(splits) == 2 and splits[0] != splits[1]):
            raise MergeRefused(f"{first.label} and {other.label} are shards of different splits (another "
                               "number of shards, or another selection of instances: suites, -m, -k)")
    else:
        mine, theirs = first.meta.get("generation") or {}, other.meta.get("generation") or {}
        unrecorded = first.without_generation | other.without_generation
        for benchmark in sorted(set(mine) & set(theirs) & unrecorded):
            if {s for s, _ in mine[benchmark]} != {s for s, _ in theirs[benchmark]}:
                raise MergeRefused(f"{first.label} and {other.label} differ in generation settings for "
                                   f"{benchmark}: {mine[benchmark]!r} vs {theirs[benchmark]!r}")


def _same_generation(first: ShardFile, other: ShardFile, nodeid: str, ours: Any, theirs: Any) -> None:
    """An instance both files hold ran with the same settings in both (when both records carry them)."""
    if isinstance(ours, Mapping) and isinstance(theirs, Mapping) and ours and theirs and ours != theirs:
        raise MergeRefused(f"{first.label} and {other.label} differ in generation settings for {nodeid}: "
                           f"{difference(ours, theirs)}")


def merge(paths: Sequence[Path], *, out: Path, expect: int | None = None,
          on_file: Callable[[ShardFile], None] | None = None) -> Merged:
    """Read the files one record at a time: each record goes to a spool file beside ``out`` and only its
    compact view and a digest of its verdicts stay in memory, so a merge holds about what a run does per
    instance (docs/scale.md). Nothing is written to ``out`` until :meth:`Merged.write`; a refusal removes
    the spool. ``on_file`` is told of each file read (its progress: a large run's shards take seconds each)."""
    if not paths:
        raise MergeRefused("no results files given")
    out = Path(out)
    spool = ResultsJournal(out, {"merging": [str(p) for p in paths]},
                           journal=out.with_name(f".{out.name}.{os.getpid()}.merging.jsonl"))
    try:
        return _merge([Path(p) for p in paths], spool, expect, on_file)
    except BaseException:
        spool.discard()
        raise


def _attempts(first: ShardFile, other: ShardFile) -> str:
    """What to do when two files hold one instance with different verdicts: most often two attempts of a shard
    (a finished file beside a later attempt's journal, which the glob ``shard-*.partial.jsonl`` takes too)."""
    def when(file: ShardFile) -> str:
        try:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(file.path.stat().st_mtime))
        except OSError:
            stamp = "?"
        return f"{file.path.name}: {'a run that did not finish' if file.unfinished else 'a finished run'}, {stamp}"
    return (f" ({when(first)}; {when(other)}): two attempts of one shard? Give the merge only the attempt to "
            "keep (remove or leave out the other file)")


def _digest(record: Mapping[str, Any]) -> bytes:
    text = json.dumps(verdicts(record), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).digest()


def _merge(paths: list[Path], spool: ResultsJournal, expect: int | None,
           on_file: Callable[[ShardFile], None] | None) -> Merged:
    files: list[ShardFile] = []
    #: node id -> (the index of the file whose record is kept, the digest of its verdicts)
    kept: dict[str, tuple[int, bytes]] = {}
    views: dict[str, Mapping[str, Any]] = {}
    make_view = SummaryViews().view
    #: the node ids finished files hold, and each unfinished file's (a journal a finished file covers adds nothing)
    finished_ids: set[str] = set()
    unfinished_ids: dict[int, set[str]] = {}
    for index, path in enumerate(paths):
        #: node ids an earlier file holds -> the digest of this file's (last) record of it, and its settings
        again: dict[str, tuple[bytes, Any]] = {}
        instances = 0
        without_generation: set[str] = set()
        with _reading(path) as reader:
            for record, text in reader:
                nodeid = record.get("nodeid")
                if not isinstance(nodeid, str):
                    continue
                (unfinished_ids.setdefault(index, set()) if reader.journal else finished_ids).add(nodeid)
                if not record.get("generation"):
                    without_generation.add(str(record.get("benchmark")))
                holder = kept.get(nodeid)
                if holder is None or holder[0] == index:  # new, or a journal's later record of it
                    instances += holder is None
                    kept[nodeid] = (index, _digest(record))
                    try:
                        spool.add(record, None if "\n" in text else text)
                    except OSError as exc:  # not the file being read: say whose it is
                        raise CannotWrite(f"{spool.target}: {exc.strerror or exc} (spooling its records to "
                                          f"{spool.path.name})") from None
                    views[nodeid] = make_view(record)
                else:
                    instances += nodeid not in again
                    again[nodeid] = (_digest(record), record.get("generation"))
        file = ShardFile(path=path, meta=reader.meta, instances=instances, unfinished=reader.journal,
                         without_generation=frozenset(without_generation))
        if files:
            _same_run_id(files, file)
            _same_run(files[0], file)
        if any("assignment" in (earlier.shard or {}) for earlier in files):  # the first split read is kept
            file = ShardFile(path=path, meta=_without_assignment(reader.meta), instances=instances,
                             unfinished=reader.journal, without_generation=frozenset(without_generation))
        for nodeid, (digest, generation) in again.items():
            _same_generation(files[kept[nodeid][0]], file, nodeid, views[nodeid].get("generation"), generation)
            if kept[nodeid][1] != digest:
                raise MergeRefused(f"{files[kept[nodeid][0]].label} and {file.label} both hold {nodeid} "
                                   f"with different records{_attempts(files[kept[nodeid][0]], file)}")
        files.append(file)
        if on_file is not None:
            on_file(file)
    records = [views[nodeid] for nodeid in sorted(views)]
    missing, not_run = _missing(files, views, expect)
    covered = [i for i, ids in unfinished_ids.items() if ids <= finished_ids]  # an attempt killed after one finished
    unfinished = tuple(file.label for i, file in enumerate(files) if file.unfinished and i not in covered)
    meta = {
        "model": files[0].meta.get("model"), "judges": files[0].meta.get("judges"),
        "generation": settings_by_benchmark(records),
        "merged_from": [{"file": file.path.name, "shard": file.shard and f"{file.shard['index']}/"
                         f"{file.shard['count']}", "instances": file.instances,
                         **({"run": file.run_id} if file.run_id is not None else {}),
                         **({"unfinished": True} if file.unfinished else {}),
                         **{key: file.meta[key] for key in _KEPT_ENTRIES if key in file.meta}}
                        for file in files],
    }
    run_id = next((file.run_id for file in files if file.run_id is not None), None)
    if run_id is not None:
        meta["run"] = run_id
    if missing or not_run:
        meta["not_run"] = list(not_run)
    judge_given = any(bool((file.shard or {}).get("judge_given")) for file in files) or any(
        list(r.get("judges") or []) != [r.get("model")] for r in records)
    return Merged(records=tuple(records), meta=meta, judge_given=judge_given, spool=spool,
                  missing=tuple(missing), not_run=tuple(not_run), unfinished=unfinished,
                  not_run_unknown=_not_run_unknown(files) if missing or unfinished else None,
                  notes=_run_id_notes(files) + tuple(
                      f"{files[i].label} did not finish, but finished files hold every instance it holds, with the "
                      "same verdicts: it adds nothing" for i in covered))


def _without_assignment(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    """A later shard's metadata without its copy of the split (one entry per instance of the whole run):
    checked equal to the first shard's (:func:`_same_run`), it is not kept."""
    shard = meta.get("shard")
    if not isinstance(shard, dict) or "assignment" not in shard:
        return meta
    return {**meta, "shard": {k: v for k, v in shard.items() if k != "assignment"}}


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
    assignment: Mapping[str, int] = next((shard["assignment"] for shard in sharded if "assignment" in shard), {})
    not_run = sorted(nodeid for nodeid in assignment if nodeid not in records)
    return missing, not_run


def _not_run_unknown(files: Sequence[ShardFile]) -> str | None:
    """Why the instances a missing shard or an unfinished run did not run cannot be listed, or None when
    they can. Only a shard's split (its ``assignment``) names them: a journal of an unsharded run has none,
    and a journal written under ``-n`` has its shard entry without it (the controller learns the split from
    its workers at the end), so when every file is such a journal the merge cannot tell how many there are."""
    for file in files:
        if file.unfinished and file.shard is None:
            return f"{file.label} has no shard entry: which instances its run did not reach is unknown"
    if not any("assignment" in (file.shard or {}) for file in files):
        return ("no file holds the run's split (a shard's assignment; a journal written under -n has none): "
                "how many instances were not run is unknown")
    return None
