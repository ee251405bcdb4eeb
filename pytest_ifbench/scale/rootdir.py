"""Node ids that do not depend on how an option was spelled.

pytest chooses the run's root directory before plugins add their options, so the value of a plugin's
option given as a separate argument (``--ifbench-cache /shared/cache``, ``--alluredir /results/allure``)
is taken for a path to test when it exists: the root moves up to what it shares with the suites, and
every node id gains the directories in between (``proj/suites/a.yaml::x`` instead of
``suites/a.yaml::x``). A shard's split is keyed on node ids, so the same shard command picked other
instances once its cache directory existed (its re-run paid for other shards' instances and left its own
out), and results stopped pairing with other runs' (found by a user re-running a shard).

So at start-up pytest's own rule is asked again with the arguments as finally parsed. When it gives
another root, a sharded run is refused (its split would not be the other shards') and any other run is
warned (its node ids carry the extra directories); the message names the option and the fix.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def _rootdir_of_the_arguments(config: pytest.Config) -> Path | None:
    """The root pytest's rule gives for the run's own arguments (None: this pytest's rule is not callable)."""
    try:
        from _pytest.config.findpaths import determine_setup

        rootpath, *_ = determine_setup(
            inifile=config.option.inifilename, override_ini=config.option.override_ini,
            args=list(config.option.file_or_dir or ()), rootdir_cmd_arg=config.option.rootdir or None,
            invocation_dir=config.invocation_params.dir)
    except (ImportError, TypeError, AttributeError, pytest.UsageError):
        return None
    return Path(rootpath)


def _misread_option(config: pytest.Config) -> str | None:
    """The first ``--option VALUE`` of the command line whose value is an existing path pytest did not get
    as a path to test (it read it as one before the option existed)."""
    args = [str(arg) for arg in config.invocation_params.args]
    given = {os.path.normpath(str(arg).split("::")[0]) for arg in config.option.file_or_dir or ()}
    for option, value in zip(args, args[1:]):
        if option.startswith("--") and "=" not in option and not value.startswith("-"):
            path = config.invocation_params.dir / value
            if path.exists() and os.path.normpath(value) not in given:
                return f"{option} {value}"
    return None


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has checked
        return
    expected = _rootdir_of_the_arguments(config)
    if expected is None or expected == config.rootpath:
        return
    option = _misread_option(config)
    cause = f"the value of `{option}` was" if option else "an option's value was"
    fix = f"write `{option.replace(' ', '=', 1)}`" if option else "write options as --option=value"
    message = (f"pytest-ifbench: pytest rooted this run at {config.rootpath} instead of {expected}: {cause} "
               f"taken for a path to test, as pytest reads its arguments before plugins add their options; "
               f"{fix} (or pass --rootdir={expected}).")
    from .shard import SPEC_KEY

    if config.stash.get(SPEC_KEY, None) is not None:
        raise pytest.UsageError(f"{message} A shard's split is keyed on node ids, which change with the root: "
                                "this shard would not run the instances the other shards leave to it.")
    config.issue_config_time_warning(pytest.PytestConfigWarning(
        f"{message} Node ids carry the extra directories, so these results pair with no run rooted at {expected}."),
        stacklevel=2)
