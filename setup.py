"""Entry points and the ``ifbench`` script only; everything else is in pyproject.toml.

A shipped benchmark registers exactly as a third-party package does: through
the ``pytest_ifbench.benchmarks`` entry-point group. Each folder under
``pytest_ifbench/benchmarks/`` with a ``plugin.py`` becomes one entry point
named after the folder, so adding a benchmark touches only its own folder
(re-run ``pip install -e .`` afterwards, as for any new entry point).
"""

from pathlib import Path

from setuptools import setup

BENCHMARKS = Path(__file__).resolve().parent / "pytest_ifbench" / "benchmarks"

setup(entry_points={
    "console_scripts": ["ifbench = pytest_ifbench.cli.main:main"],
    "pytest11": ["ifbench = pytest_ifbench._plugin"],
    "pytest_ifbench.benchmarks": [
        f"{folder.name} = pytest_ifbench.benchmarks.{folder.name}.plugin"
        for folder in sorted(BENCHMARKS.iterdir()) if (folder / "plugin.py").is_file()
    ],
})
