"""Importers for official benchmark file formats, one module per benchmark.

Every module here is registered as a pytest plugin by the core plugin, so it
can implement ``pytest_ifbench_suite_data`` to let pytest collect an official
file directly (returning None for files it does not recognise).
"""
