"""Recorded agent runs read from files, for a re-score (``ifbench score --trajectories``,
``--ifbench-recorded-trajectories``): ours, normalized JSONL or raw proxy logs, by instance id."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from .normalize import load_normalized, load_raw, normalize
from .trajectory import Trajectory
from .workspace_archive import archive_path


def recorded_trajectories(paths: Sequence[Path]) -> dict[str, Trajectory]:
    """Trajectories by instance id from files: ours (``.json``), normalized JSONL (ours or the
    authors'), or raw proxy logs (normalized here). The id is ``meta.instance_id``, else
    ``meta.session_id``, else the file name's stem; of several with one id, the one with the
    most assistant turns."""
    out: dict[str, Trajectory] = {}
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.suffix in (".json", ".jsonl")) if path.is_dir() else [path]
        for file in files:
            if file.suffix == ".json":
                found = [Trajectory.from_json(json.loads(file.read_text(encoding="utf-8")), default_id=file.stem)]
            elif file.name.endswith(".raw.jsonl") or _looks_raw(file):
                found = normalize(load_raw(file))[:1]
            else:
                found = load_normalized(file)
            archive = archive_path(file) if file.suffix == ".json" else None
            for trajectory in found:
                if archive is not None and archive.is_file():  # the run's final workspace, kept beside it
                    trajectory.meta["workspace_archive"] = str(archive.resolve())
                key = str(trajectory.meta.get("instance_id") or trajectory.meta.get("session_id") or file.stem)
                # Files with several records of one session (a warm-up call beside the run): keep the run.
                if key not in out or len(trajectory.assistant_turns()) > len(out[key].assistant_turns()):
                    out[key] = trajectory
    return out


def _looks_raw(path: Path) -> bool:
    with path.open(encoding="utf-8") as handle:
        first = handle.readline()
    return '"request_body"' in first and '"response_body"' in first
