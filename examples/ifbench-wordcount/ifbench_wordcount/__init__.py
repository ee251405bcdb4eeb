"""ifbench-wordcount: a small third-party benchmark for pytest-ifbench (the plugin is ``plugin.py``)."""

__version__ = "0.1.0"
