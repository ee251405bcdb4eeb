"""The ``ifbench`` subcommand seam: one module with ``add_parser(commands)`` plus its entry in ``SUBCOMMANDS``."""

from __future__ import annotations

import importlib
import pkgutil
import types

import pytest

import pytest_ifbench.cli
from pytest_ifbench.cli import main as cli_main
from pytest_ifbench.cli.errors import UsageError


def test_every_subcommand_module_is_registered():
    modules = {importlib.import_module(f"pytest_ifbench.cli.{info.name}")
               for info in pkgutil.iter_modules(pytest_ifbench.cli.__path__)}
    with_parser = {m.__name__ for m in modules if callable(getattr(m, "add_parser", None))}
    assert with_parser == {m.__name__ for m in cli_main.SUBCOMMANDS}
    assert len(with_parser) == 7


def _fake_subcommand(takes_pytest_args: bool) -> types.ModuleType:
    module = types.ModuleType("fake")
    seen: list[tuple[object, list[str]]] = []

    def run(args, extra):
        seen.append((args.value, extra))
        if args.value == "bad":
            raise UsageError("bad value")
        return 7

    def add_parser(commands):
        parser = commands.add_parser("fake", help="a test subcommand")
        parser.add_argument("value")
        parser.set_defaults(run=run, takes_pytest_args=takes_pytest_args)

    module.add_parser, module.seen = add_parser, seen
    return module


@pytest.mark.parametrize("takes_pytest_args", [True, False])
def test_a_new_subcommand_needs_only_its_module_and_one_entry(monkeypatch, capsys, takes_pytest_args):
    fake = _fake_subcommand(takes_pytest_args)
    monkeypatch.setattr(cli_main, "SUBCOMMANDS", (*cli_main.SUBCOMMANDS, fake))
    assert cli_main.main(["fake", "x"]) == 7
    assert cli_main.main(["fake", "bad"]) == cli_main.USAGE_ERROR
    assert "ifbench fake: error: bad value" in capsys.readouterr().err
    code = cli_main.main(["fake", "y", "--", "-q"])
    if takes_pytest_args:
        assert code == 7 and fake.seen[-1] == ("y", ["-q"])
    else:
        assert code == cli_main.USAGE_ERROR and "unrecognized arguments: -- -q" in capsys.readouterr().err
    assert [value for value, _ in fake.seen] == (["x", "bad", "y"] if takes_pytest_args else ["x", "bad"])
