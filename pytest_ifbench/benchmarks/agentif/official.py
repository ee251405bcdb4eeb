"""AgentIF-OneDay files as suites.

* The official release: ``pytest path/to/data.jsonl`` (recognised by content: a JSON-lines file whose first row
  has ``question_id`` and ``score_criteria``) runs every row unchanged as one ``agentif`` instance. A row's
  attachments (``Attachments/Questions/<name>`` beside the file) are copied into an environment directory of
  its own, built once per content in a cache directory (``$IFBENCH_AGENTIF_CACHE``, else
  ``~/.cache/pytest-ifbench/agentif``), so the agent's workspace holds exactly the attachments.
* Our YAML suites (``benchmark: agentif``): validated against docs/agentif.md, and given the markers
  ``domain_<x>``, ``with_attachments`` and ``needs_web`` and ``metadata.attachments``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pytest_ifbench import ReadOptions, SuiteError, suite_yaml_or_none, user_cache_dir

BENCHMARK = "agentif"
CATEGORIES = ("open_workflow", "latent_inference", "iterative_refinement")
DOMAINS = ("work", "study", "life")
DIMENSIONS = ("instruction_following", "factuality", "logic", "negative_constraint")
ASPECTS = ("content", "form", "execution")
RUBRIC = "agentif.rubric"
_SNIFF = 1 << 16


def read(path: Path, options: ReadOptions) -> Any:
    """The core's official reader (cached per file content): :func:`suite_data`."""
    return suite_data(path)


def suite_data(path: Path) -> Any:
    """Suite data for an official ``data.jsonl`` or an AgentIF YAML suite; None for anything else."""
    if path.suffix == ".jsonl":
        return _official(path)
    if path.suffix in (".yaml", ".yml"):
        return _yaml(path)
    return None


def _first_row(path: Path) -> dict[str, Any] | None:
    try:
        with path.open("rb") as handle:
            head = handle.read(_SNIFF)
    except OSError:
        return None
    if b'"question_id"' not in head or b'"score_criteria"' not in head:
        return None
    try:
        row = json.loads(head.split(b"\n", 1)[0])
    except ValueError:  # not JSON, not UTF-8, a number of 4,300 digits
        return None
    if not isinstance(row, dict) or ("question_id" not in row and "score_criteria" not in row):
        return None
    return row  # a first row without one of the two is still ours: its error names the missing field


def cache_root() -> Path:
    override = os.environ.get("IFBENCH_AGENTIF_CACHE")
    if override:
        return Path(override)
    return user_cache_dir() / "agentif"


def environment_for(question_id: str, files: list[Path]) -> Path:
    """A directory holding exactly ``files`` (by name), keyed by their content; built once, atomically."""
    digest = hashlib.sha256()
    for file in sorted(files, key=lambda p: p.name):
        digest.update(file.name.encode() + b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    root = cache_root() / "environments"
    target = root / f"{question_id}-{digest.hexdigest()[:16]}"
    if target.is_dir():
        return target
    root.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
    try:
        for file in files:
            shutil.copyfile(file, building / file.name)
        try:
            building.rename(target)
        except OSError:  # another process built it first
            shutil.rmtree(building, ignore_errors=True)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return target


def _check_fields(path: Path, row: dict[str, Any], qid: str) -> None:
    """The fields of a row other than its criteria, of their types: a description or title of another type
    was collected as its repr, and a list of file names given as a number crashed the import (as a
    string, its letters were the file names)."""
    description = row.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SuiteError(path, f"expected the task text (a non-empty string), got {description!r:.60}",
                         instance=qid, field="description")
    for field in ("title", "reference_answer_description"):
        if row.get(field) is not None and not isinstance(row[field], str):
            raise SuiteError(path, f"expected a string, got {row[field]!r:.60}", instance=qid, field=field)
    for field in ("attachment_filenames", "reference_answer_attachment_filenames"):
        names = row.get(field)
        if names is not None and not isinstance(names, list):
            raise SuiteError(path, f"expected a list of file names, got {names!r:.60}", instance=qid, field=field)
        for index, name in enumerate(names or []):
            # a name leading out of the release's Attachments folder would copy that file into the agent's workspace
            if not isinstance(name, str) or not name.strip() or os.path.isabs(name) or ".." in Path(name).parts:
                raise SuiteError(path, f"expected a file name in the release's Attachments folder, got {name!r:.60}",
                                 instance=qid, field=f"{field}[{index}]")


def _criterion(path: Path, item: Any, qid: str, field: str) -> tuple[str, int | float]:
    """An item's ``(content, score)``: a content of another type (``null`` included) became a criterion
    such as "None", and a score of NaN a penalty of NaN points."""
    if not isinstance(item, dict):
        raise SuiteError(path, f"expected {{content, score}}, got {item!r:.60}", instance=qid, field=field)
    content, score = item.get("content"), item.get("score")
    if not isinstance(content, str) or not content.strip():
        raise SuiteError(path, f"expected the criterion text (a non-empty string), got {content!r:.60}",
                         instance=qid, field=f"{field}.content")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise SuiteError(path, f"expected a number, got {score!r:.60}", instance=qid, field=f"{field}.score")
    return content, score


def _row_instance(path: Path, number: int, row: Any) -> dict[str, Any]:
    where = f"line {number}"
    if not isinstance(row, dict):
        raise SuiteError(path, f"{where}: expected a JSON object, got {row!r:.60}")
    qid = row.get("question_id")
    if not isinstance(qid, str) or not qid.strip():
        raise SuiteError(path, f"{where}: question_id: expected a task id (a non-empty string), got {qid!r:.60}")
    _check_fields(path, row, qid)
    criteria = row.get("score_criteria")
    if not isinstance(criteria, list) or not criteria:
        raise SuiteError(path, f"expected a non-empty list of {{content, score}}, got {criteria!r:.60}", instance=qid,
                         field="score_criteria")
    checks, dropped = [], []
    for index, item in enumerate(criteria, start=1):
        content, score = _criterion(path, item, qid, f"score_criteria[{index - 1}]")
        if score == 0:
            dropped.append(content)
            continue
        checks.append({"id": f"c{index}", "verifier": RUBRIC, "params": {"criterion": content},
                       "kind": "bonus" if score > 0 else "penalty", "points": abs(float(score)),
                       "metadata": {"score": score}})
    if not any(c["kind"] == "bonus" for c in checks):
        raise SuiteError(path, "no positive item: S_max would be 0", instance=qid, field="score_criteria")
    names = list(row.get("attachment_filenames") or [])
    folder = path.parent / "Attachments" / "Questions"
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        raise SuiteError(path, f"missing under {folder}: {', '.join(missing)}", instance=qid,
                         field="attachment_filenames")
    reference = row.get("reference_answer_attachment_filenames") or []
    answers = path.parent / "Attachments" / "Reference_answer"
    missing = [n for n in reference if not (answers / n).is_file()]
    if missing:  # the judge would be told "cannot read" and decide without the reference, after the run was paid
        raise SuiteError(path, f"missing under {answers}: {', '.join(missing)}", instance=qid,
                         field="reference_answer_attachment_filenames")
    instance: dict[str, Any] = {
        "id": qid, "prompt": row["description"], "checks": checks,
        "markers": ["with_attachments"] if names else [],
        "metadata": {"title": row.get("title", ""), "question_id": qid, "attachments": names,
                     "reference_answer": row.get("reference_answer_description") or "",
                     "reference_attachments": [f"Attachments/Reference_answer/{n}" for n in reference]}
                    | ({"dropped_zero_score_criteria": dropped} if dropped else {}),
    }
    if names:
        instance["environment"] = str(environment_for(qid, [folder / n for n in names]))
    return instance


def _official(path: Path) -> Any:
    if _first_row(path) is None:
        return None
    instances = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    row = json.loads(line)
                except ValueError as exc:  # not JSON, or a number too long for Python's int conversion
                    raise SuiteError(path, f"line {number}: not JSON ({str(exc)[:200]})") from None
                instances.append(_row_instance(path, number, row))
    return {"ifbench": 1, "benchmark": BENCHMARK, "description": f"AgentIF-OneDay official file {path.name}",
            "defaults": {"protocol": "agentif"}, "instances": instances}


def _one_of(path: Path, value: Any, allowed: tuple[str, ...], instance: str, field: str) -> str:
    if value not in allowed:
        raise SuiteError(path, f"expected one of {', '.join(allowed)}, got {value!r}", instance=instance, field=field)
    return value


def _yaml(path: Path) -> Any:
    data = suite_yaml_or_none(path, BENCHMARK)  # None: not ours, or the core reports the file
    if data is None:
        return None
    defaults = data.get("defaults") if isinstance(data.get("defaults"), dict) else {}
    for index, instance in enumerate(data.get("instances") or []):
        if isinstance(instance, dict):
            _annotate(path, instance, defaults, index)
    return data


def _check_references(path: Path, names: Any, iid: str) -> None:
    """``metadata.reference_attachments``: files relative to the suite file. A missing one reached the judge as
    "cannot read", after the run was paid for."""
    if names is None:
        return
    if not isinstance(names, list):
        raise SuiteError(path, f"expected a list of paths relative to the suite file, got {names!r:.60}",
                         instance=iid, field="metadata.reference_attachments")
    for index, name in enumerate(names):
        if not isinstance(name, str) or not name.strip() or not (path.parent / name).is_file():
            raise SuiteError(path, f"expected a file relative to the suite file, got {name!r:.80}"
                                   + (" (not found)" if isinstance(name, str) and name.strip() else ""),
                             instance=iid, field=f"metadata.reference_attachments[{index}]")


def _annotate(path: Path, instance: dict[str, Any], defaults: dict[str, Any], index: int) -> None:
    """Validate one YAML instance against the AgentIF conventions and add its markers."""
    iid = str(instance.get("id", f"#{index}"))
    merged = defaults | instance
    if merged.get("protocol") != "agentif":
        raise SuiteError(path, f"AgentIF tasks run with protocol agentif, got {merged.get('protocol')!r}",
                         instance=iid, field="protocol")
    _one_of(path, merged.get("category"), CATEGORIES, iid, "category")
    metadata = instance.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        raise SuiteError(path, "expected a mapping", instance=iid, field="metadata")
    domain = _one_of(path, metadata.get("domain"), DOMAINS, iid, "metadata.domain")
    _check_references(path, metadata.get("reference_attachments"), iid)
    markers = list(instance.get("markers") or [])
    extra = [f"domain_{domain}"]
    environment = merged.get("environment")
    attachments = []
    if isinstance(environment, str) and (path.parent / environment).is_dir():
        base = path.parent / environment
        attachments = sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file())
    if attachments:
        extra.append("with_attachments")
    metadata.setdefault("attachments", attachments)
    if metadata.get("needs_web"):
        extra.append("needs_web")
    instance["markers"] = markers + [m for m in extra if m not in markers]
    for number, check in enumerate(instance.get("checks") or []):
        if not isinstance(check, dict) or check.get("verifier") != RUBRIC:
            continue
        field = f"checks[{number}]"
        if check.get("kind") not in ("bonus", "penalty"):
            raise SuiteError(path, f"expected bonus or penalty, got {check.get('kind')!r}", instance=iid,
                             field=f"{field}.kind")
        _one_of(path, check.get("category"), DIMENSIONS, iid, f"{field}.category")
        check_metadata = check.get("metadata")
        aspect = check_metadata.get("aspect") if isinstance(check_metadata, dict) else None
        _one_of(path, aspect, ASPECTS, iid, f"{field}.metadata.aspect")
    if not any(isinstance(c, dict) and c.get("kind") == "bonus" for c in instance.get("checks") or []):
        raise SuiteError(path, "at least one bonus item is needed (S_max > 0)", instance=iid, field="checks")
