"""``--ifbench-max-cost USD``: the run stops paying once its model and judge calls have cost USD.

One ledger for the whole run (:mod:`.models.spending`): the controller of an xdist run creates it in a
temporary directory and hands its path to every worker, and every client of every process (the
model's, the judges', an agent CLI's relay) asks it before each call. A call the limit refuses is
never sent; its instance is an error saying so (a failure outside the model's reach). A cached reply
costs nothing, so a later run with a higher limit, or none, pays only for what this one did not.

Under ``--ifbench-shard`` the limit is the shard's: each shard runs on its own machine with its own
ledger (give each its share of the whole). The limit needs prices: a model litellm's price table does
not price (the embedded model, a server of one's own) is refused at start-up, since its calls would
never count.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from .models.spending import SpendingLimit, Spent, usd

_LEDGER_KEY = pytest.StashKey[SpendingLimit]()
_DIRECTORY_KEY = pytest.StashKey[Path]()
_FINISHED_KEY = pytest.StashKey[bool]()
_WORKER_INPUT = "ifbench_spending_ledger"
_FILE = "ledger"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ifbench")
    group.addoption("--ifbench-max-cost", dest="ifbench_max_cost", type=float, default=None, metavar="USD",
                    help="stop paying once the run's model and judge calls (every xdist worker's; a shard's "
                         "own under --ifbench-shard) have cost USD: later calls are not made and their "
                         "instances error saying so; cached replies are free, so a later run resumes from "
                         "the cache. Needs models litellm's price table prices")


@pytest.hookimpl(trylast=True)  # after the core's configure, which builds the session state
def pytest_configure(config: pytest.Config) -> None:
    limit = config.getoption("ifbench_max_cost", None)
    if limit is None:
        return
    from ._state import STATE_KEY

    state = config.stash[STATE_KEY]
    worker_input = getattr(config, "workerinput", None)
    if worker_input is not None:  # the controller checked the option and made the ledger
        ledger = SpendingLimit(Path(worker_input[_WORKER_INPUT]))
    else:
        _check(limit, state)
        directory = Path(tempfile.mkdtemp(prefix="ifbench-spending-"))
        config.stash[_DIRECTORY_KEY] = directory
        ledger = SpendingLimit.create(directory / _FILE, limit)
    config.stash[_LEDGER_KEY] = ledger
    state.spending = ledger
    if state._runtime is not None:  # clients made before this hook (a plugin's configure asked for them)
        for client in {id(c): c for c in [state._runtime.model, *state._runtime.judges] if c is not None}.values():
            client.spending = ledger


def _check(limit: float, state: Any) -> None:
    if not limit > 0:
        raise pytest.UsageError(f"pytest-ifbench: --ifbench-max-cost must be above 0, not {limit:g}")
    from .models.prices import is_priced

    called = ([] if state.responses is not None else [state.model_name]) + list(state.judge_names)
    unpriced = [name for name in dict.fromkeys(called) if not is_priced(name)]
    if unpriced:
        raise pytest.UsageError(
            f"pytest-ifbench: --ifbench-max-cost counts what litellm's price table says a call costs, and it "
            f"has no price for {', '.join(map(repr, unpriced))} (the embedded model and servers of one's own "
            f"cost nothing it can count): name a priced model, or drop the option")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist, on the controller: every worker opens the controller's ledger."""
    ledger = node.config.stash.get(_LEDGER_KEY, None)
    if ledger is not None:
        node.workerinput[_WORKER_INPUT] = str(ledger.path)


def pytest_sessionfinish(session: pytest.Session) -> None:
    session.config.stash[_FINISHED_KEY] = True


def status(config: pytest.Config) -> Spent | None:
    """What the run has paid under its limit (every process's calls); None without ``--ifbench-max-cost``
    and on an xdist worker."""
    ledger = config.stash.get(_LEDGER_KEY, None)
    if ledger is None or hasattr(config, "workerinput"):
        return None
    return ledger.status()


def lines(entry: Mapping[str, Any]) -> list[str]:
    """The summary's lines for a ``spending_limit`` entry (:meth:`Spent.to_json`): what was paid against
    the limit, what was not called for it, and a warning for replies that came without a price."""
    out = [f"spending limit: {usd(entry['spent'])} of {usd(entry['limit'])} paid by {entry['calls']:,} call(s) "
           f"(--ifbench-max-cost; the costliest call {usd(entry['largest_call'])})"]
    if entry["refused"]:
        out.append(f"spending limit reached: {entry['refused']:,} call(s) not made; their instances errored "
                   f"(a run with a higher limit resumes from the cache)")
    if entry["unpriced"]:
        out.append(f"warning: {entry['unpriced']:,} paid call(s) came back without a price and are not in the "
                   f"total")
    return out


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    spent = status(config)
    if spent is not None:
        for line in lines(spent.to_json()):
            terminalreporter.write_line(line)


def pytest_ifbench_results_meta(config: pytest.Config) -> dict[str, Any] | None:
    """The results file's ``spending_limit`` entry (not in a journal's header: the run has only begun)."""
    spent = status(config) if config.stash.get(_FINISHED_KEY, False) else None
    return None if spent is None else {"spending_limit": spent.to_json()}


def pytest_ifbench_summary_facts(config: pytest.Config) -> list[str] | None:
    spent = status(config)
    return None if spent is None else lines(spent.to_json())


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    ledger = config.stash.get(_LEDGER_KEY, None)
    if ledger is not None:
        ledger.close()
    directory = config.stash.get(_DIRECTORY_KEY, None)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)
