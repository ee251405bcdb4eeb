"""``python -m pytest_ifbench.testing``: see :mod:`pytest_ifbench.testing.cli`."""

from pytest_ifbench.testing.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
