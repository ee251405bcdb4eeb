"""Helpers shared by the plugin's tests (importable as ``_support``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from pytest_ifbench.stub_server import StubServer

#: A fake key: tests assert it never reaches a file on disk.
FAKE_KEY = "sk-ifbench-test-0123456789abcdef"




def stub_args(server: StubServer, *extra: str) -> list[str]:
    """Command-line arguments that run suites against ``server`` quickly."""
    return ["--model=openai/stub", f"--api-base={server.url}", "-p", "no:cacheprovider",
            "--ifbench-max-wait=5", "--ifbench-timeout=5", "--ifbench-summary=", *extra]


def write_suite(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path
