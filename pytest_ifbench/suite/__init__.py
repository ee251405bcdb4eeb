"""Suites: the format, safe YAML and the parsed-suite cache, importers, run settings, JSON Lines input."""
