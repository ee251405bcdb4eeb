"""``--ifbench-max-cost USD``: the run stops paying once its model and judge calls have cost USD.

One ledger for the whole run (:mod:`.models.spending`): the controller of an xdist run creates it in a
temporary directory and hands its path to every worker, and every client of every process (the
model's, the judges', an agent CLI's relay) asks it before each call. A call the limit refuses is
never sent; its instance is an error saying so (a failure outside the model's reach). A cached reply
costs nothing, so a later run with a higher limit, or none, pays only for what this one did not.

Under ``--ifbench-shard`` the limit is the shard's: each shard runs on its own machine with its own
ledger (give each its share of the whole), unless every shard names one shared ledger with
``--ifbench-max-cost-ledger redis://host:port/db/NAME`` (:mod:`.scale.shared_ledger`): the limit is then
the run's, across machines. The limit needs prices: a model litellm's price table does
not price (a server of one's own) is refused at start-up, since its calls would never count; the
embedded model's calls cost nothing, so the limit leaves them alone (a local judge beside a paid model).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from .models.spending import Ledger, LedgerUnavailable, SpendingLimit, Spent, usd

_LEDGER_KEY = pytest.StashKey[Ledger]()
#: The shared ledger's URL as shown (no credentials); absent: the run's own file.
_SHARED_KEY = pytest.StashKey[str]()
#: Why the shared ledger could not be read for the summary.
_UNREAD_KEY = pytest.StashKey[str]()
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
    group.addoption("--ifbench-max-cost-ledger", dest="ifbench_max_cost_ledger", default=None, metavar="URL",
                    help="keep --ifbench-max-cost's ledger in Redis, redis://host:port/db/NAME, so that every "
                         "shard naming it shares one limit (NAME: the run's, e.g. the CI run's id)")


@pytest.hookimpl(trylast=True)  # after the core's configure, which builds the session state
def pytest_configure(config: pytest.Config) -> None:
    limit = config.getoption("ifbench_max_cost", None)
    shared = config.getoption("ifbench_max_cost_ledger", None)
    if limit is None:
        if shared:
            raise pytest.UsageError("pytest-ifbench: --ifbench-max-cost-ledger keeps --ifbench-max-cost's "
                                    "ledger: give the limit too")
        return
    from ._state import STATE_KEY

    state = config.stash[STATE_KEY]
    worker_input = getattr(config, "workerinput", None)
    if worker_input is None:  # a worker's controller checked the option
        _check(limit, state)
    ledger: Ledger
    if shared:
        ledger = _shared(shared, limit, opened=worker_input is not None)
        config.stash[_SHARED_KEY] = ledger.display  # type: ignore[attr-defined]
    elif worker_input is not None:  # the controller made the ledger
        ledger = SpendingLimit(Path(worker_input[_WORKER_INPUT]))
    else:
        directory = Path(tempfile.mkdtemp(prefix="ifbench-spending-"))
        config.stash[_DIRECTORY_KEY] = directory
        ledger = SpendingLimit.create(directory / _FILE, limit)
    config.stash[_LEDGER_KEY] = ledger
    state.spending = ledger
    if state._runtime is not None:  # clients made before this hook (a plugin's configure asked for them)
        for client in {id(c): c for c in [state._runtime.model, *state._runtime.judges] if c is not None}.values():
            if not _free(state, client.model):
                client.spending = ledger


def _check(limit: float, state: Any) -> None:
    if not limit > 0:
        raise pytest.UsageError(f"pytest-ifbench: --ifbench-max-cost must be above 0, not {limit:g}")
    from .models.prices import is_priced

    called = ([] if state.responses is not None else [state.model_name]) + list(state.judge_names)
    unpriced = [name for name in dict.fromkeys(called) if not is_priced(name) and not _free(state, name)]
    if unpriced:
        raise pytest.UsageError(
            f"pytest-ifbench: --ifbench-max-cost counts what litellm's price table says a call costs, and it "
            f"has no price for {', '.join(map(repr, unpriced))} (a server of one's own costs nothing it can "
            f"count): name a priced model, or drop the option")


def _free(state: Any, model: str) -> bool:
    """Whether ``model``'s calls cost nothing (the embedded model): the limit leaves them alone."""
    return state.providers.for_model(model, state.api_base).free


def _shared(url: str, limit: float, *, opened: bool) -> Ledger:
    """The shared ledger ``url`` names; a usage error when it cannot be reached or keeps another limit
    (a run never goes on without the limit it was given). ``opened``: an xdist worker, whose controller
    has checked both; Redis going away since is its calls' error, not the worker's."""
    from .scale.shared_ledger import RedisLedger

    try:
        ledger = RedisLedger(url, limit, opened=opened)
    except ValueError as exc:
        raise pytest.UsageError(f"pytest-ifbench: {exc}") from None
    except LedgerUnavailable as exc:
        raise pytest.UsageError(f"pytest-ifbench: --ifbench-max-cost-ledger: cannot be reached ({exc}); the "
                                f"run does not start without its spending limit") from None
    if abs(ledger.limit - limit) > 1e-9:
        ledger.close()
        raise pytest.UsageError(
            f"pytest-ifbench: --ifbench-max-cost={limit:g}, but the shared ledger {ledger.display} keeps a limit "
            f"of {ledger.limit:g}: give every shard of the run the same limit (a new budget: a new ledger name)")
    return ledger


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist, on the controller: every worker opens the controller's ledger."""
    ledger = node.config.stash.get(_LEDGER_KEY, None)
    if isinstance(ledger, SpendingLimit):  # (a shared ledger: every worker opens it from its own options)
        node.workerinput[_WORKER_INPUT] = str(ledger.path)


def pytest_sessionfinish(session: pytest.Session) -> None:
    session.config.stash[_FINISHED_KEY] = True


def status(config: pytest.Config) -> Spent | None:
    """What the run has paid under its limit (every process's calls); None without ``--ifbench-max-cost``
    and on an xdist worker."""
    ledger = config.stash.get(_LEDGER_KEY, None)
    if ledger is None or hasattr(config, "workerinput"):
        return None
    try:
        spent = ledger.status()
    except LedgerUnavailable as exc:  # a shared ledger's store went away: said in the summary, unless it is back
        config.stash[_UNREAD_KEY] = str(exc)
        return None
    if _UNREAD_KEY in config.stash:
        del config.stash[_UNREAD_KEY]
    return spent


def entry(config: pytest.Config) -> dict[str, Any] | None:
    """The results file's ``spending_limit`` entry: :meth:`Spent.to_json`, plus ``ledger`` (the shared
    ledger's URL, no credentials) when the limit is shared by shards."""
    spent = status(config)
    shared = config.stash.get(_SHARED_KEY, None)
    if spent is None:
        unread = config.stash.get(_UNREAD_KEY, None)
        if not (shared and unread):
            return None
        # still an entry, so that the merge counts this shard among the ledger's and says it could not read it
        return {"limit": config.stash[_LEDGER_KEY].limit, "ledger": shared, "unread": unread}
    return {**spent.to_json(), **({"ledger": shared} if shared else {})}


def lines(entry: Mapping[str, Any]) -> list[str]:
    """The summary's lines for a ``spending_limit`` entry (:func:`entry`): what was paid against the limit,
    what was not called for it, and a warning for replies that came without a price."""
    if entry.get("unread"):  # (the summary's warning says it)
        return []
    shared = f", every shard's calls in {entry['ledger']}" if entry.get("ledger") else ""
    over = float(entry["spent"]) - float(entry["limit"])
    past = (f"; over by {usd(over)}: calls already on their way when it was reached cost more than they had "
            f"reserved") if over > 0 else ""
    out = [f"spending limit: {usd(entry['spent'])} of {usd(entry['limit'])} paid by {entry['calls']:,} call(s)"
           f"{shared} (--ifbench-max-cost; the costliest call {usd(entry['largest_call'])}{past})"]
    if entry["refused"]:
        whose = " by the shards together" if entry.get("ledger") else ""
        out.append(f"spending limit reached: {entry['refused']:,} call(s) not made{whose}; their instances errored "
                   f"(a run with a higher limit resumes from the cache)")
    if entry["unpriced"]:
        out.append(f"warning: {entry['unpriced']:,} call(s) had no price and are not in the total: replies that "
                   f"reported no usage, or calls given up at their timeout after they were sent (a provider may "
                   f"bill them)")
    return out


def _summary(config: pytest.Config) -> list[str]:
    found = entry(config)
    unread = config.stash.get(_UNREAD_KEY, None)
    return [*(lines(found) if found else ()),
            *([f"warning: the shared spending ledger could not be read ({unread})"] if unread else [])]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    for line in _summary(config):
        terminalreporter.write_line(line)


def pytest_ifbench_results_meta(config: pytest.Config) -> dict[str, Any] | None:
    """The results file's ``spending_limit`` entry (not in a journal's header: the run has only begun)."""
    found = entry(config) if config.stash.get(_FINISHED_KEY, False) else None
    return None if found is None else {"spending_limit": found}


def pytest_ifbench_summary_facts(config: pytest.Config) -> list[str] | None:
    return _summary(config) or None


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    ledger = config.stash.get(_LEDGER_KEY, None)
    if ledger is not None:
        ledger.close()
    directory = config.stash.get(_DIRECTORY_KEY, None)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)
