"""Where baselines are stored: a syrupy JSON extension, one file per instance beside its suite.

``<suite dir>/__baselines__/<suite stem>/<id>.json``, or with ``--ifbench-baseline-dir DIR``
``DIR/<suite dir relative to the rootdir>/<suite stem>/<id>.json`` (set on the class by
:mod:`.baseline`'s ``pytest_configure``). See docs/baselines.md.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from syrupy.extensions.json import JSONSnapshotExtension

#: Directory created beside each suite when no ``--ifbench-baseline-dir`` is given.
DIRNAME = "__baselines__"


@dataclass(frozen=True, slots=True)
class _Stored:
    """Already-serialized snapshot text: asserting it "uses" a snapshot unchanged."""

    text: str


class BaselineExtension(JSONSnapshotExtension):
    """One JSON file per instance, beside the suite (or under a chosen directory).

    syrupy creates extensions without arguments (also on the xdist controller,
    by import path, to delete unused snapshots), so the chosen directory lives
    on the class, set by ``pytest_configure`` in every process.
    """

    snapshot_dirname = DIRNAME
    #: ``--ifbench-baseline-dir`` (absolute) and the rootdir whose layout it mirrors.
    custom_dir: ClassVar[Path | None] = None
    rootdir: ClassVar[Path | None] = None

    def serialize(self, data: Any, **kwargs: Any) -> str:
        if isinstance(data, _Stored):
            return data.text
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    @classmethod
    def dirname(cls, *, test_location: Any) -> str:
        return _suite_dir(test_location.filepath, cls.custom_dir, cls.rootdir)

    @classmethod
    def matches_test_location(cls, *, test_location: Any, snapshot_location: str) -> bool:
        # Exact: syrupy's own rule relates snapshots to tests by file basename and by
        # the identifier-like prefix of the name ("hello-lower" ~ "hello-upper"), which
        # would report the baselines of deselected instances as unused. syrupy calls this
        # for every (snapshot, test of the same suite) pair, so it must stay cheap.
        if not snapshot_location.endswith(f"{test_location.testname}.{cls.file_extension}"):
            return False  # instance ids are valid file names: the stored name is the id
        name = cls.get_snapshot_name(test_location=test_location, index=0)
        expected = os.path.join(cls.dirname(test_location=test_location), f"{name}.{cls.file_extension}")
        return os.path.normpath(snapshot_location) == os.path.normpath(expected)


@functools.lru_cache(maxsize=4096)
def _suite_dir(filepath: str, custom_dir: Path | None, rootdir: Path | None) -> str:
    suite = Path(filepath)
    if custom_dir is None:
        return str(suite.parent / DIRNAME / suite.stem)
    try:
        relative = suite.parent.relative_to(rootdir) if rootdir is not None else Path(*suite.parent.parts[1:])
    except ValueError:
        relative = Path(*suite.parent.parts[1:])
    return str(custom_dir / relative / suite.stem)


def suite_baseline_dir(suite: Path) -> Path:
    """Where the snapshots of the instances of ``suite`` live."""
    return Path(_suite_dir(str(suite.absolute()), BaselineExtension.custom_dir, BaselineExtension.rootdir))
