"""Suite generators and importers, one module per benchmark.

Each module exposes ``main(argv: list[str]) -> int`` and is run as
``ifbench generate <module name> ...``.
"""
