"""Project-wide pytest configuration.

Suites under ``suites/`` need nothing from here: the plugin is registered
through its ``pytest11`` entry point. Hooks that extend pytest-ifbench for
this checkout (extra verifiers, protocols, metrics) would go here; see
``examples/conftest.py`` for a worked example.
"""
