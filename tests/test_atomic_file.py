"""Files the run writes are replaced whole: never seen half-written, no debris when a write fails."""

from __future__ import annotations

import os
import stat
import threading

import pytest

from pytest_ifbench._atomic_file import replace_file
from pytest_ifbench.reports.records import write_results


def test_a_file_is_replaced_whole_with_its_directory_made(tmp_path):
    path = tmp_path / "a" / "b" / "entry.json"
    replace_file(path, "first")
    replace_file(path, b"second")
    assert path.read_bytes() == b"second" and os.listdir(path.parent) == ["entry.json"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_text_is_utf8_with_a_lone_surrogate_written_as_a_question_mark(tmp_path):
    replace_file(tmp_path / "t", "caf\u00e9 \ud800!", mode=0o644)
    assert (tmp_path / "t").read_bytes() == "café ?!".encode()
    assert stat.S_IMODE((tmp_path / "t").stat().st_mode) == 0o644


def test_a_failed_replacement_raises_and_leaves_neither_debris_nor_a_changed_target(tmp_path):
    (tmp_path / "results.json").mkdir()  # the rename onto it fails
    (tmp_path / "results.json" / "kept").write_text("x")
    with pytest.raises(IsADirectoryError):
        replace_file(tmp_path / "results.json", "{}")
    assert sorted(os.listdir(tmp_path)) == ["results.json"] and os.listdir(tmp_path / "results.json") == ["kept"]


def test_the_results_file_written_where_it_cannot_be_leaves_no_temporary_file(tmp_path):
    """Before: ``results.json.tmp`` stayed beside the target, and two writers of one results file shared it."""
    (tmp_path / "results.json").mkdir()
    with pytest.raises(OSError):
        write_results(tmp_path / "results.json", [], {})
    assert os.listdir(tmp_path) == ["results.json"]


def test_writers_of_one_path_never_mix_their_texts(tmp_path):
    """Each writer has a temporary file of its own: the file always holds one writer's text, whole."""
    path = tmp_path / "results.json"
    texts = [bytes([65 + n]) * (200_000 + 5_000 * n) for n in range(6)]
    seen: list[bytes] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            if path.exists():
                seen.append(path.read_bytes())

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=lambda t=t: [replace_file(path, t) for _ in range(20)]) for t in texts]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    stop.set()
    reader.join()
    assert seen and all(text in texts for text in seen)
    assert os.listdir(tmp_path) == ["results.json"]
