"""Helpers shared by the plugin's tests (``from tests._support import ...``)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from pytest_ifbench.stub_server import StubServer

#: A fake key: tests assert it never reaches a file on disk.
FAKE_KEY = "sk-ifbench-test-0123456789abcdef"

#: The checkout's root.
ROOT = Path(__file__).resolve().parents[1]
#: The papers, samples and notes beside the checkout (CI has them; ``IFBENCH_SHARED`` points elsewhere).
SHARED = Path(os.environ.get("IFBENCH_SHARED") or ROOT.parent / "shared")


def shared_sample(name: str) -> Path:
    """``../shared/samples/<name>``; the test is skipped only when ``../shared`` itself is absent."""
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} (the authors' samples) is not available")
    path = SHARED / "samples" / name
    assert path.is_file(), f"{path} is missing from ../shared"
    return path


def stub_args(server: StubServer, *extra: str) -> list[str]:
    """Command-line arguments that run suites against ``server`` quickly."""
    return ["--model=openai/stub", f"--api-base={server.url}", "-p", "no:cacheprovider",
            "--ifbench-max-wait=5", "--ifbench-timeout=5", "--ifbench-summary=", *extra]


def write_suite(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path
