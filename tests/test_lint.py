"""The project's own code passes its ruff configuration (pyproject.toml)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pytest_ifbench.ruff.check import ruff_binary

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    proc = subprocess.run([ruff_binary(), "check", "--no-cache", "--output-format", "concise", str(ROOT)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
