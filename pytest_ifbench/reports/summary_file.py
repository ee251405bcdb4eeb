"""A summary file people read: Markdown or HTML, with plots, written after every run.

The controller (never an xdist worker) writes it after the results file, from
the same records: every benchmark's metric tables (the core tables plus the
``pytest_ifbench_metrics`` ones), a breakdown by suite marker, the most failed
checks, token/cost/time totals, errors, the baseline comparison when
``--ifbench-baseline`` is on, and the PNG plots returned by
``pytest_ifbench_plots`` (this module contributes ISR/CSR by category for
every benchmark). Where it goes:

* ``--ifbench-summary PATH`` (``.md`` or ``.html``): there;
* otherwise, when the results file is written, beside it: ``ifbench-results.json``
  gives ``ifbench-summary.md`` (a stem without "results" gets ``-summary``);
* ``--ifbench-summary=`` (empty): nowhere.

Plots go to a folder named after the file (``ifbench-summary/<benchmark>/``)
and are linked relatively. They are drawn only when asked for -- ``--ifbench-plots=yes``,
or a summary named with ``--ifbench-summary PATH`` -- and then after the results
file and the summary's text are written: matplotlib costs ~0.8 s, which a run
whose summary nobody asked for should not wait for at exit. The default summary
still links the plots an earlier run drew from the same results (nothing is
drawn or imported for those), and says how to draw the others. matplotlib is
imported only to draw (Agg, without pyplot). See docs/summary.md.

This module holds the hooks (the option, where the file goes, when it is written)
and the core plot; the document itself is built by :mod:`.summary_writer`.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from .metrics import errored, instance_passed_share
from .summary_writer import START_KEY, write_summary

FORMATS = (".md", ".html")
_WRITTEN_KEY = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ifbench")
    group.addoption("--ifbench-summary", dest="ifbench_summary", default=None, metavar="PATH",
                    help="write a readable summary with tables and plots to PATH (.md or .html); "
                         "default: beside the results file (ifbench-summary.md); '' to skip")
    group.addoption("--ifbench-plots", dest="ifbench_plots", default=None, choices=("yes", "no"),
                    help="draw the summary's plots (matplotlib, ~0.8 s) after the results file and the summary "
                         "text are written; default: yes with --ifbench-summary PATH, no for the default "
                         "summary (which still links plots drawn earlier from the same results)")


def pytest_configure(config: pytest.Config) -> None:
    target = config.getoption("ifbench_summary", None)
    if target and Path(target).suffix.lower() not in FORMATS:
        raise pytest.UsageError(f"--ifbench-summary: {target!r} must end in .md or .html")


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[START_KEY] = time.time()


def summary_path(config: pytest.Config) -> Path | None:
    """Where this run's summary goes, or None (see the module docstring)."""
    target = config.getoption("ifbench_summary", None)
    if target is None:
        results = config.getoption("ifbench_results", None)
        if not results:
            return None
        results_path = Path(results)
        stem = results_path.stem
        stem = stem.replace("results", "summary") if "results" in stem else f"{stem}-summary"
        target = str(results_path.with_name(stem + ".md"))
    if not target:
        return None
    path = Path(target)
    return path if path.is_absolute() else Path(config.invocation_params.dir) / path


def plots_wanted(config: pytest.Config) -> bool:
    """Whether this run draws its summary's plots: ``--ifbench-plots``, else whether the summary was
    asked for by name (``--ifbench-summary PATH``) rather than written by default."""
    chosen = config.getoption("ifbench_plots", None)
    if chosen is not None:
        return chosen == "yes"
    return bool(config.getoption("ifbench_summary", None))


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session):
    # A wrapper: the core's sessionfinish (which writes the results file) has run
    # when this continues, and the terminal summary has not been printed yet.
    result = yield
    config = session.config
    if hasattr(config, "workerinput"):
        return result
    from .._state import RECORDS_KEY

    records = list(config.stash.get(RECORDS_KEY, {}).values())
    path = summary_path(config)
    if records and path is not None:
        try:
            write_summary(config, records, path, draw=plots_wanted(config))
            config.stash[_WRITTEN_KEY] = f"summary: {_display(path, config)}"
        except Exception as exc:  # a report must never turn a run into a crash
            config.stash[_WRITTEN_KEY] = f"summary: not written ({type(exc).__name__}: {exc})"
    return result


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    line = config.stash.get(_WRITTEN_KEY, None)
    if line:
        terminalreporter.write_line(line)


def _display(path: Path, config: pytest.Config) -> str:
    try:
        return str(path.relative_to(Path(config.invocation_params.dir)))
    except ValueError:
        return str(path)


def pytest_ifbench_plots(benchmark: str, records: list[dict[str, Any]], directory: Path) -> list[Path] | None:
    """The core plot for every benchmark: ISR and CSR by category (or overall)."""
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("category") is not None:
            groups[str(record["category"])].append(record)
    labels = ["all"] + sorted(groups) if len(groups) > 1 else ["all"]
    series = [[r for r in records] if label == "all" else groups[label] for label in labels]
    isr, csr, counts = [], [], []
    for group in series:
        shares = [s for r in group if not errored(r) if (s := instance_passed_share(r)) is not None]
        isr.append(statistics.fmean(float(a) for a, _ in shares) if shares else 0.0)
        csr.append(statistics.fmean(b for _, b in shares) if shares else 0.0)
        counts.append(len(shares))
    if not any(counts):
        return None
    from matplotlib.figure import Figure

    figure = Figure(figsize=(max(4.5, 1.1 * len(labels) + 2), 3.2), dpi=100, layout="constrained")
    axes = figure.add_subplot()
    positions = range(len(labels))
    width = 0.38
    bars_isr = axes.bar([p - width / 2 for p in positions], isr, width, label="ISR", color="#4c72b0")
    bars_csr = axes.bar([p + width / 2 for p in positions], csr, width, label="CSR", color="#dd8452")
    for bars in (bars_isr, bars_csr):
        axes.bar_label(bars, labels=[f"{100 * b.get_height():.0f}%" for b in bars], fontsize=7, padding=1)
    axes.set_xticks(list(positions), [f"{label}\n(n={n})" for label, n in zip(labels, counts)], fontsize=8)
    axes.set_xlim(-0.6, len(labels) - 0.4)
    axes.set_ylim(0, 1.3)
    axes.set_yticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"], fontsize=8)
    axes.set_title(f"{benchmark}: ISR and CSR by category" if len(labels) > 1 else f"{benchmark}: ISR and CSR",
                   fontsize=10)
    axes.legend(fontsize=8, loc="upper center", ncols=2, frameon=False)
    path = directory / "isr_csr_by_category.png"
    figure.savefig(path)
    return [path]
