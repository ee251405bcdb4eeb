"""The summary document behind ``--ifbench-summary``: its tables, plots and Markdown/HTML rendering.

:func:`write_summary` builds a :class:`Document` from the run's records and writes it;
:mod:`.summary_file` holds the hooks that decide whether and where (see its docstring).
Plots come from every ``pytest_ifbench_plots`` implementation, redrawn only when
their inputs changed (:func:`render_plots`), and drawn only when asked for
(``draw``): the text is written first with the plots that can be reused, then,
when drawing, written again with the new ones linked.
"""

from __future__ import annotations

import html
import os
import re
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..suite.run_settings import judge_warning, settings_lines
from .metrics import COLUMNS, INTERVAL_NOTE, Aggregate, MetricTable, errored
from .terminal import error_text

#: When the session started (set by :mod:`.summary_file`'s ``pytest_sessionstart``): the summary says how long it took.
START_KEY = pytest.StashKey[float]()

# ---------------------------------------------------------------------------
# the document: a few block kinds, rendered to Markdown or HTML


@dataclass
class Document:
    blocks: list[tuple[Any, ...]] = field(default_factory=list)

    def heading(self, level: int, text: str) -> None:
        self.blocks.append(("heading", level, text))

    def bullets(self, items: Sequence[str]) -> None:
        if items:
            self.blocks.append(("bullets", list(items)))

    def text(self, text: str) -> None:
        self.blocks.append(("text", text))

    def table(self, columns: Sequence[Any], rows: Sequence[Sequence[Any]], notes: Sequence[str] = ()) -> None:
        self.blocks.append(("table", [str(c) for c in columns], [[str(c) for c in r] for r in rows], list(notes)))

    def image(self, alt: str, src: str) -> None:
        self.blocks.append(("image", alt, src))

    def plots(self, slot: PlotSlot) -> None:
        """A benchmark's plots, filled in later (:func:`render_plots`): its images, then its problems."""
        self.blocks.append(("plots", slot))

    def plot_slots(self) -> list[PlotSlot]:
        return [block[1] for block in self.blocks if block[0] == "plots"]

    def _expanded(self) -> list[tuple[Any, ...]]:
        """The blocks with each plot slot as its image and bullet blocks."""
        out: list[tuple[Any, ...]] = []
        for block in self.blocks:
            if block[0] != "plots":
                out.append(block)
                continue
            slot: PlotSlot = block[1]
            out += [("image", f"{slot.benchmark}: {image.stem.replace('_', ' ').replace('-', ' ')}",
                     _relative(image, slot.base)) for image in slot.images]
            if slot.problems:
                out.append(("bullets", list(slot.problems)))
        return out

    def markdown(self) -> str:
        out: list[str] = []
        for block in self._expanded():
            kind = block[0]
            if kind == "heading":
                out.append(f"{'#' * block[1]} {_md(block[2])}")
            elif kind == "text":
                out.append(_md(block[1]))
            elif kind == "bullets":
                out.append("\n".join(f"- {_md(item)}" for item in block[1]))
            elif kind == "table":
                columns, rows, notes = block[1], block[2], block[3]
                right = _numeric_columns(columns, rows)
                lines = ["| " + " | ".join(_cell(c) or " " for c in columns) + " |",
                         "|" + "|".join("---:" if r else ":---" for r in right) + "|"]
                lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
                lines += [f"\n*{_md(note)}*" for note in notes]
                out.append("\n".join(lines))
            elif kind == "image":
                out.append(f"![{_md(block[1])}]({block[2].replace(' ', '%20')})")
        return "\n\n".join(out) + "\n"

    def html(self, title: str) -> str:
        out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
               f"<title>{html.escape(title)}</title>", f"<style>{_CSS}</style></head><body>"]
        for block in self._expanded():
            kind = block[0]
            if kind == "heading":
                out.append(f"<h{block[1]}>{html.escape(block[2])}</h{block[1]}>")
            elif kind == "text":
                out.append(f"<p>{_inline_html(block[1])}</p>")
            elif kind == "bullets":
                out.append("<ul>" + "".join(f"<li>{_inline_html(i)}</li>" for i in block[1]) + "</ul>")
            elif kind == "table":
                columns, rows, notes = block[1], block[2], block[3]
                right = _numeric_columns(columns, rows)
                head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
                body = "".join("<tr>" + "".join(f'<td class="n">{html.escape(c)}</td>' if r
                                                else f"<td>{html.escape(c)}</td>" for c, r in zip(row, right))
                               + "</tr>" for row in rows)
                out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
                out += [f'<p class="note">{html.escape(note)}</p>' for note in notes]
            elif kind == "image":
                out.append(f'<figure><img src="{html.escape(block[2])}" alt="{html.escape(block[1])}">'
                           f"<figcaption>{html.escape(block[1])}</figcaption></figure>")
        out.append("</body></html>")
        return "\n".join(out) + "\n"


_CSS = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:70em;color:#222}"
        "table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:.2em .6em}"
        "td{text-align:left}td.n{text-align:right}th{background:#f3f3f3}"
        ".note{font-style:italic;color:#555;margin:.2em 0}img{max-width:100%}code{background:#f3f3f3}")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)]+)\)")
_CODE = re.compile(r"`([^`]+)`")


_NUMBER = re.compile(r"^[-+$]?[\d.,]+%?( ?[±/] ?([\d.,]+|inf)%?)*( \[[-+\d., ]+\])?$|^-$")


def _numeric_columns(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[bool]:
    """Right-align a column (not the first) whose cells are all numbers, rates, money or '-'."""
    return [i > 0 and bool(rows) and all(_NUMBER.match(row[i].strip()) for row in rows if i < len(row))
            for i in range(len(columns))]


def _md(text: str) -> str:
    return str(text).replace("\n", " ")


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _inline_html(text: str) -> str:
    """The two bits of Markdown the summary's text uses: `code` and [links](href)."""
    escaped = html.escape(text, quote=True)
    escaped = _CODE.sub(r"<code>\1</code>", escaped)
    return _LINK.sub(r'<a href="\2">\1</a>', escaped)


# ---------------------------------------------------------------------------
# content


#: Said under a benchmark whose plots were not drawn (``draw=False``) and cannot be reused.
NOT_DRAWN = ("plots not drawn: add --ifbench-plots=yes (or name the summary with --ifbench-summary PATH) "
             "to draw them")


def write_summary(config: pytest.Config, records: Sequence[Mapping[str, Any]], path: Path, *,
                  draw: bool = True) -> Path:
    """Write the summary of ``records`` to ``path`` (Markdown or HTML by suffix), plots beside it.

    The text is written first, with the plots an earlier run drew from the same inputs; then, if
    ``draw`` and some plots are missing, they are drawn (matplotlib) and the text is written again
    with them linked. Without ``draw`` nothing is drawn and the summary says how to get them.
    """
    doc = build_document(config, records, path.parent, path.with_suffix(""))
    slots = doc.plot_slots()
    for slot in slots:
        render_plots(config, slot, draw=False)
    missing = [slot for slot in slots if slot.undrawn]
    if not draw:
        for slot in missing:
            slot.problems.append(NOT_DRAWN)
    _write_text(doc, path)
    if draw and missing:
        for slot in missing:
            render_plots(config, slot, draw=True)
        _write_text(doc, path)
    return path


def _write_text(doc: Document, path: Path) -> None:
    from .._atomic_file import replace_file
    from .._redact import redact

    text = redact(doc.html("pytest-ifbench summary") if path.suffix.lower() == ".html" else doc.markdown())
    replace_file(path, text, mode=0o644)


def build_document(config: pytest.Config, records: Sequence[Mapping[str, Any]], base: Path,
                   plots_dir: Path) -> Document:
    from .._version import __version__
    from .terminal import benchmark_tables

    records = sorted(records, key=lambda r: r["nodeid"])
    doc = Document()
    doc.heading(1, "pytest-ifbench summary")
    model = scored_what(config, records)
    judges = ", ".join(f"`{j}`" for j in (records[0].get("judges") or [])) or "-"
    errors = [r for r in records if errored(r)]
    started = config.stash.get(START_KEY, None)
    took = f" in {time.time() - started:.1f} s" if started else ""
    facts = [f"{model}; judges: {judges}",
             f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}: {len(records)} instances"
             + (f" ({len(errors)} errored)" if errors else "") + f"{took}, pytest-ifbench {__version__}"]
    results = config.getoption("ifbench_results", None)
    if results:
        results_path = Path(results) if Path(results).is_absolute() else Path(config.invocation_params.dir) / results
        facts.append(f"results file: [{Path(results).name}]({_relative(results_path, base)})")
    if not config.getoption("ifbench_responses", None):  # recorded replies: no generation settings apply
        facts.extend(settings_lines(records))
    warning = judge_warning(config, records)
    if warning:
        facts.append(f"**{warning}**")
    for lines in config.hook.pytest_ifbench_summary_facts(config=config):
        facts.extend(lines or ())
    doc.bullets(facts)

    by_benchmark: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        by_benchmark[record["benchmark"]].append(record)
    doc.heading(2, "Totals")
    doc.table(*totals_table(by_benchmark))

    tables = benchmark_tables(config, records)
    for benchmark, group in by_benchmark.items():
        doc.heading(2, benchmark)
        for table in tables.get(benchmark, []):
            _metric_table(doc, table)
        marker_table = markers_table(benchmark, group)
        if marker_table is not None:
            _metric_table(doc, marker_table)
        failed = failed_checks_table(benchmark, group)
        if failed is not None:
            _metric_table(doc, failed)
        doc.plots(PlotSlot(benchmark=benchmark, records=group, directory=plots_dir / _slug(benchmark), base=base))

    from .baseline import overview, overview_lines

    baseline = overview(config)
    if baseline is not None:
        doc.heading(2, "Baseline")
        lines = overview_lines(baseline, limit=50)
        doc.text(lines[0])
        doc.bullets([line.strip() for line in lines[1:]])
    if errors:
        doc.heading(2, "Errors")
        doc.table(("instance", "kind", "error"),
                  [(r["nodeid"], r.get("error_kind") or "check", error_text(r)[:300]) for r in errors[:50]])
    return doc


def scored_what(config: pytest.Config, records: Sequence[Mapping[str, Any]]) -> str:
    """What this run scored: the model under test, or the recordings it re-scored (no model was called)."""
    recorded = []
    responses = config.getoption("ifbench_responses", None)
    if responses and _holds_responses(Path(responses)):  # (`ifbench score --trajectories` alone passes an empty one)
        recorded.append(f"pre-recorded responses (`{Path(responses).name}`)")
    trajectories = config.getoption("ifbench_recorded_trajectories", None) or []
    if trajectories:
        recorded.append("recorded agent trajectories (" + ", ".join(f"`{Path(t).name}`" for t in trajectories) + ")")
    if recorded:
        return "scored: " + " and ".join(recorded) + ", re-scored without calling the model under test"
    return f"model: `{records[0].get('model') or '-'}`"


def _holds_responses(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return True  # named by the user: say so


def _metric_table(doc: Document, table: MetricTable) -> None:
    doc.heading(3, table.title)
    doc.table(table.columns, table.rows, table.notes)


def _relative(path: Path, base: Path) -> str:
    try:
        return Path(os.path.relpath(path, base)).as_posix()
    except ValueError:  # another drive on Windows
        return path.as_posix()


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "benchmark"


def totals_table(by_benchmark: Mapping[str, Sequence[Mapping[str, Any]]]) -> tuple[tuple[str, ...], list[tuple]]:
    """Instances, errors (:func:`~.metrics.errored`: with a check left undecided too), tokens and cost (paid
    in this run, of it the judges', and from the cache) and model time, per benchmark and in all."""
    columns = ("", "instances", "errors", "prompt tokens", "completion tokens", "cached prompt",
               "cached completion", "cost", "judges' cost", "cached cost", "generation s", "verification s")

    def usd(records: Sequence[Mapping[str, Any]], key: str) -> str:
        costs = [r[key] for r in records if r.get(key) is not None]
        return f"${sum(costs):.4f}" if costs else "-"

    def row(label: str, records: Sequence[Mapping[str, Any]]) -> tuple:
        tokens = [r.get("tokens") or {} for r in records]
        durations = [r.get("durations") or {} for r in records]
        return (label, len(records), sum(errored(r) for r in records),
                sum(t.get("prompt", 0) for t in tokens), sum(t.get("completion", 0) for t in tokens),
                sum(t.get("cached_prompt", 0) for t in tokens), sum(t.get("cached_completion", 0) for t in tokens),
                usd(records, "cost"), usd(records, "judge_cost"), usd(records, "cached_cost"),
                f"{sum(d.get('generation', 0) for d in durations):.1f}",
                f"{sum(d.get('verification', 0) for d in durations):.2f}")

    rows = [row(name, group) for name, group in by_benchmark.items()]
    if len(rows) > 1:
        rows.append(row("all", [r for group in by_benchmark.values() for r in group]))
    return columns, rows


def markers_table(benchmark: str, records: Sequence[Mapping[str, Any]]) -> MetricTable | None:
    """The core columns per suite marker (``markers:`` of the instances), when any are set."""
    groups: dict[str, Aggregate] = defaultdict(Aggregate)
    for record in records:
        for marker in record.get("markers") or ():
            groups[marker].add(record)
    if not groups:
        return None
    return MetricTable(title=f"{benchmark}: by marker", columns=COLUMNS,
                       rows=tuple(groups[m].row(f"marker={m}") for m in sorted(groups)), notes=(INTERVAL_NOTE,))


def failed_checks_table(benchmark: str, records: Sequence[Mapping[str, Any]], limit: int = 15) -> MetricTable | None:
    """The scored checks that failed most often (by check id), with their pass rate. Errored instances are
    left out, as from the rates: a check left undecided did not fail, and its instance's others count nowhere."""
    seen: Counter[tuple[str, str]] = Counter()
    failed: Counter[tuple[str, str]] = Counter()
    for record in records:
        if errored(record):
            continue
        for check in record.get("checks", []):
            if check.get("scored", True) and check.get("applicable", True):
                key = (check["id"], check.get("verifier", ""))
                seen[key] += 1
                failed[key] += not check.get("passed")
    worst = [(key, n) for key, n in failed.most_common() if n][:limit]
    if not worst:
        return None
    rows = tuple((check_id, verifier, n, seen[(check_id, verifier)],
                  f"{100 * (1 - n / seen[(check_id, verifier)]):.1f}%") for (check_id, verifier), n in worst)
    notes = (f"{len([k for k, n in failed.items() if n]) - limit} more checks failed at least once",) \
        if len([k for k, n in failed.items() if n]) > limit else ()
    return MetricTable(title=f"{benchmark}: most failed checks", columns=("check", "verifier", "failed", "of",
                                                                          "pass rate"), rows=rows, notes=notes)


# ---------------------------------------------------------------------------
# plots


#: Record fields that say how a result was obtained, not what it is: left out of a plot's input hash, so
#: a re-score of cached responses (other timings, ``cached: true``, its tokens counted as cached and
#: its cost as not paid again) reuses the plots it would redraw. A plot must not show these fields.
_VOLATILE = frozenset({"latency", "duration", "durations", "cached", "attempts", "tokens", "cost", "cached_cost"})
#: Per plots folder: plugin name -> {"key": input hash, "images": [file names]} of the last rendering.
PLOTS_MANIFEST = ".ifbench-plots.json"


def plot_inputs_key(benchmark: str, records: Sequence[Mapping[str, Any]]) -> str:
    """A hash of what a plot can show: the records less their timing/provenance fields (``_VOLATILE``).

    Those fields sit at known places (the record, its checks, its turns' responses, its judge calls),
    so only those levels are copied; the rest is hashed as it is, by the C JSON encoder.
    """
    import hashlib
    import json

    from .._version import __version__

    def lean(mapping: Any) -> Any:
        return {k: v for k, v in mapping.items() if k not in _VOLATILE} if isinstance(mapping, Mapping) else mapping

    def project(record: Mapping[str, Any]) -> dict[str, Any]:
        out = lean(record)
        for key in ("checks", "judge_calls"):
            if isinstance(out.get(key), list):
                out[key] = [lean(entry) for entry in out[key]]
        if isinstance(out.get("turns"), list):
            out["turns"] = [lean(turn) | {"response": lean(turn.get("response"))} if isinstance(turn, Mapping)
                            else turn for turn in out["turns"]]
        return out

    digest = hashlib.sha256(f"{__version__}\0{benchmark}".encode())
    for record in records:
        digest.update(json.dumps(project(record), sort_keys=True, default=str).encode())
    return digest.hexdigest()


def _read_manifest(directory: Path) -> dict[str, Any]:
    import json

    try:
        data = json.loads((directory / PLOTS_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(slots=True, kw_only=True)
class PlotSlot:
    """One benchmark's place for plots in the summary, filled by :func:`render_plots`."""

    benchmark: str
    records: Sequence[Mapping[str, Any]]
    directory: Path  # where its images go
    base: Path  # what the summary links them relative to
    key: str = ""  # plot_inputs_key, computed once
    images: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    undrawn: int = 0  # plugins whose plots are neither reusable nor drawn


def render_plots(config: pytest.Config, slot: PlotSlot, *, draw: bool = True) -> None:
    """Fill ``slot`` from every ``pytest_ifbench_plots`` implementation; one that fails does not stop
    the others.

    A plugin whose images from an earlier run are still there, drawn from the same inputs
    (:func:`plot_inputs_key`), is not called again: re-scoring unchanged results imports no
    matplotlib and draws nothing. Without ``draw`` only those are used; the others are counted in
    ``slot.undrawn`` and nothing is written.
    """
    import json

    directory = slot.directory
    if not slot.key:
        slot.key = plot_inputs_key(slot.benchmark, slot.records)
    if draw:
        directory.mkdir(parents=True, exist_ok=True)
    kwargs = {"benchmark": slot.benchmark, "records": list(slot.records), "directory": directory}
    previous = _read_manifest(directory)
    manifest: dict[str, Any] = {}
    slot.images, slot.problems, slot.undrawn = [], [], 0
    for impl in config.hook.pytest_ifbench_plots.get_hookimpls():  # registration order: the core first
        if impl.hookwrapper or impl.wrapper:
            continue
        done = previous.get(impl.plugin_name)
        if isinstance(done, dict) and done.get("key") == slot.key and isinstance(done.get("images"), list) \
                and all((directory / name).is_file() for name in done["images"]):
            manifest[impl.plugin_name] = done
            slot.images.extend(directory / name for name in done["images"])
            continue
        if not draw:
            slot.undrawn += 1
            continue
        try:
            out = impl.function(**{name: kwargs[name] for name in impl.argnames})
        except ImportError as exc:
            slot.problems.append(f"plots by {impl.plugin_name} skipped: {exc} (install matplotlib)")
            continue
        except Exception as exc:
            slot.problems.append(f"plots by {impl.plugin_name} failed: {type(exc).__name__}: {exc}")
            continue
        drawn: list[Path] = []
        for item in out or ():
            image = Path(item)
            if not image.is_absolute():
                image = directory / image
            if image.is_file():
                drawn.append(image)
            else:
                slot.problems.append(f"plots by {impl.plugin_name}: {item} does not exist")
        slot.images.extend(drawn)
        if all(image.parent == directory for image in drawn):  # reusable only if it lives in this folder
            manifest[impl.plugin_name] = {"key": slot.key, "images": [image.name for image in drawn]}
    if not draw:
        return
    try:
        (directory / PLOTS_MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    except OSError:
        pass  # no reuse next time; the plots themselves are written
