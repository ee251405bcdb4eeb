"""The ``wordcount`` benchmark, declared: a verifier, a metric table and a suite generator.

Published under the ``pytest_ifbench.benchmarks`` entry-point group as
``wordcount`` (see pyproject.toml), so installing the package is all it takes:
pytest and the ``ifbench`` command both load this module, and
``pytest -p no:wordcount`` switches it off. pytest-ifbench derives the hooks
from the declaration and imports each module named in it only when needed;
only the public API (``pytest_ifbench``) is used.

* ``wordcount.max_words`` (verifiers.py): the reply has at most ``max`` words;
* a metric table for ``benchmark: wordcount`` (metrics.py);
* ``ifbench generate wordcount`` (generate.py): a seeded generator that writes a suite file.
"""

from __future__ import annotations

from pytest_ifbench import Benchmark

BENCHMARK = Benchmark(
    name="wordcount",
    verifiers="ifbench_wordcount.verifiers:register",
    metrics="ifbench_wordcount.metrics:tables",
    generator="ifbench_wordcount.generate:main",
)
