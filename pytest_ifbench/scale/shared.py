"""``--ifbench-shared-cache URL``: a second tier behind the local response cache.

``s3://bucket/prefix`` or ``redis://host:port/db`` (:mod:`.stores`); every shard of a run,
on any machine, reads what any other shard paid for and adds what it pays for itself
(:mod:`.tier`). Each process (an xdist worker too) opens the store at configure time,
lists its keys while collection runs and waits for the listing before generation starts;
queued writes are sent before the process ends.

A store that does not answer at start stops the run there, before anything is paid for: the URL or the
credentials are wrong more often than the store is down, and every shard would otherwise pay for what
the store holds, said only in a warning at its end. ``--ifbench-shared-cache-optional`` makes it a
warning and the run goes on with the local cache. A store whose reads or writes stop during the run
(refused, or failing on) is one warning line at the end of the run saying what stopped (under xdist, a
worker's comes to the controller with its counts and names the workers it happened on); the run goes on
with the local cache.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .tier import StoreTier, warning

TIER_KEY = pytest.StashKey[StoreTier]()
#: How often the run asks a store that fails without refusing at start (0.5 s, then 1 s apart) before it stops.
START_ATTEMPTS = 3
_STATS_KEY = pytest.StashKey[dict[str, int]]()
#: xdist workers whose tier stood aside, by (the problem's exception type, whether during the run, what stopped):
#: the first worker's problem and every worker's id. (Two workers' texts differ by what each was asking: an S3
#: error names the object's URL.)
_WORKER_PROBLEMS_KEY = pytest.StashKey[dict[tuple[str, bool, str], tuple[str, list[str]]]]()
_WORKER_OUTPUT = "ifbench_shared_cache"
#: Every instance has run: the counts are final (a journal's header, written at the first record, has none).
_FINISHED_KEY = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ifbench")
    group.addoption("--ifbench-shared-cache", dest="ifbench_shared_cache", default=None, metavar="URL",
                    help="a shared response cache behind the local one, read and written by every shard: "
                         "s3://bucket/prefix (AWS_ENDPOINT_URL and credentials from the environment) or "
                         "redis://host:port/db")
    group.addoption("--ifbench-shared-cache-optional", dest="ifbench_shared_cache_optional", action="store_true",
                    help="when the shared cache does not answer at start, run on the local cache alone (a warning "
                         "at the end) instead of stopping before anything is paid for")


def _controller(config: pytest.Config) -> bool:
    return config.pluginmanager.hasplugin("dsession")


@pytest.hookimpl(trylast=True)  # after the core's configure, which builds the local cache
def pytest_configure(config: pytest.Config) -> None:
    url = config.getoption("ifbench_shared_cache", None)
    if not url:
        return
    from .._state import STATE_KEY
    from .stores import open_store

    state = config.stash[STATE_KEY]
    if state.cache is None:
        raise pytest.UsageError("pytest-ifbench: --ifbench-shared-cache stands behind the local response cache; "
                                "drop --ifbench-no-cache")
    try:
        store = open_store(url)
    except ValueError as exc:
        raise pytest.UsageError(f"pytest-ifbench: {exc}") from None
    # Its problem is said in the terminal summary (a worker's goes to the controller with its counts).
    tier = StoreTier(store)
    config.stash[TIER_KEY] = tier
    worker = hasattr(config, "workerinput")  # the controller asked before it started the workers
    if not tier.ping(attempts=1 if worker else START_ATTEMPTS):
        if not (worker or config.getoption("ifbench_shared_cache_optional") or config.getoption("collectonly")):
            raise pytest.UsageError(f"pytest-ifbench: the shared cache {store.display} does not answer "
                                    f"({tier.problem}); nothing was paid for. Check its URL and credentials, or "
                                    "give --ifbench-shared-cache-optional to run on the local cache alone")
        return
    if _controller(config) or config.getoption("collectonly"):
        return
    tier.start()
    state.cache.shared = tier


@pytest.hookimpl(tryfirst=True)  # before the core starts generating
def pytest_collection_finish(session: pytest.Session) -> None:
    tier = session.config.stash.get(TIER_KEY, None)
    if tier is not None:
        tier.wait_ready()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Every instance has run: send the queued writes before the summary counts them."""
    config = session.config
    tier = config.stash.get(TIER_KEY, None)
    if tier is None:
        return
    tier.close()
    config.stash[_FINISHED_KEY] = True
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_WORKER_OUTPUT] = json.dumps({"counts": _counts(tier), "problem": tier.problem,
                                                  "during_run": tier.failed_during_run, "stopped": tier.stopped})


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    text = getattr(node, "workeroutput", {}).get(_WORKER_OUTPUT)
    if not text:
        return
    output = json.loads(text)
    totals = node.config.stash.setdefault(_STATS_KEY, {"fetched": 0, "uploaded": 0, "waited": 0})
    for name, value in output["counts"].items():
        totals[name] = totals.get(name, 0) + int(value)
    if output.get("problem"):
        worker = getattr(getattr(node, "gateway", None), "id", None) or "a worker"
        problem, during_run = str(output["problem"]), bool(output.get("during_run"))
        stopped = str(output.get("stopped") or "everything")
        problems = node.config.stash.setdefault(_WORKER_PROBLEMS_KEY, {})
        problems.setdefault((problem.split(":", 1)[0], during_run, stopped), (problem, []))[1].append(worker)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    tier = config.stash.get(TIER_KEY, None)
    if tier is not None:
        tier.close()


def status(config: pytest.Config) -> dict[str, Any] | None:
    """What the shared cache did in this run (the controller's view, the workers' counts added): ``store``
    (its URL, without credentials), ``fetched`` (keys whose entry came from the store), ``written``, ``waited``
    and ``warnings`` (one line per problem: the store unavailable, or its reads, its writes and leases or both
    stopped during the run, naming the xdist workers it happened on); when the store held damaged entries,
    ``damaged`` and ``replaced`` (the keys whose entry could not be read, and those of them this run's reply
    replaced); when reads failed in passing, ``unread`` (keys the store listed that were paid for again so).
    None without ``--ifbench-shared-cache``. ``fetched`` and the rest are None when the store was never
    reached (the warning says it all)."""
    tier = config.stash.get(TIER_KEY, None)
    if tier is None or hasattr(config, "workerinput"):
        return None
    down = tier.problem is not None and not tier.failed_during_run  # never reached (the controller: at start)
    warnings = []
    if tier.problem is not None:
        warnings.append(warning(tier.store.display, tier.problem, during_run=tier.failed_during_run,
                                stopped=tier.stopped or "everything"))
    for (_, during_run, stopped), (problem, workers) in config.stash.get(_WORKER_PROBLEMS_KEY, {}).items():
        if down and not during_run:  # down from the start: said once, above
            continue
        warnings.append(warning(tier.store.display, problem, during_run=during_run, stopped=stopped,
                                where=f" on {', '.join(sorted(workers))}"))
    stats = None if down else (config.stash.get(_STATS_KEY, None) or _counts(tier))
    found: dict[str, Any] = {"store": tier.store.display, "fetched": stats and stats["fetched"],
                             "written": stats and stats["uploaded"], "waited": stats and stats.get("waited", 0),
                             "warnings": warnings}
    if stats and stats.get("damaged"):
        found.update(damaged=stats["damaged"], replaced=stats.get("replaced", 0))
    if stats and stats.get("unread"):
        found.update(unread=stats["unread"])
    return found


def _counts_line(found: dict[str, Any]) -> str | None:
    if found["fetched"] is None:
        return None
    waited = f", {found['waited']} waited for (being asked elsewhere)" if found["waited"] else ""
    return (f"shared cache {found['store']}: {found['fetched']} entries fetched, {found['written']} written{waited}"
            f"{_damaged(found.get('damaged') or 0, found.get('replaced') or 0)}{_unread(found.get('unread') or 0)}")


def _unread(unread: int) -> str:
    """What the counts line says of the entries a failing read missed (each asked of the model, unless found later)."""
    if not unread:
        return ""
    return f", {unread} listed {'entry' if unread == 1 else 'entries'} not read (reads failed: paid again)"


def _damaged(damaged: int, replaced: int) -> str:
    """What the counts line says of the store's damaged entries (cut short, not JSON): each costs a call."""
    if not damaged:
        return ""
    entries = "entry" if damaged == 1 else "entries"
    if replaced == damaged:
        return f", {damaged} damaged {entries} replaced"
    return f", {damaged} damaged {entries} found ({replaced} replaced)"


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    found = status(config)
    if found is None:
        return
    for text in found["warnings"]:
        terminalreporter.write_line(f"warning: {text}")
    line = _counts_line(found)
    if line:
        terminalreporter.write_line(line)


def pytest_ifbench_results_meta(config: pytest.Config) -> dict[str, Any] | None:
    """The results file's ``shared_cache`` entry: :func:`status` (``ifbench merge`` names a shard whose
    store failed). Not in a journal's header: the run has only begun."""
    found = status(config) if config.stash.get(_FINISHED_KEY, False) else None
    return None if found is None else {"shared_cache": found}


def pytest_ifbench_summary_facts(config: pytest.Config) -> list[str] | None:
    found = status(config)
    if found is None:
        return None
    line = _counts_line(found)
    return [*(f"**warning: {text}**" for text in found["warnings"]), *([line] if line else [])]


def _counts(tier: StoreTier) -> dict[str, int]:
    stats = tier.stats
    return {"fetched": stats.fetched, "uploaded": stats.uploaded, "waited": stats.waited, "damaged": stats.damaged,
            "replaced": stats.replaced, "unread": stats.unread}
