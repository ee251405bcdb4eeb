"""The benchmarks shipped with pytest-ifbench, one package each.

Each package is a self-contained benchmark: its verifiers, tables, generator,
official-format reader, metrics, plots and data. Its ``plugin`` module is the
benchmark's pluggy plugin, registered through the ``pytest_ifbench.benchmarks``
entry-point group exactly as a third-party benchmark package is, so
``-p no:<name>`` switches one off. No package here imports another.
"""
