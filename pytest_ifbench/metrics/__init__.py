"""Benchmark metric plugins, one module per benchmark.

Every module here is registered as a pytest plugin by the core plugin, so it
can implement ``pytest_ifbench_metrics`` / ``pytest_ifbench_plots`` for its
benchmark (and return None for others). Keep imports inside functions.
"""
