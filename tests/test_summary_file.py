"""The summary file (``ifbench-summary.md`` / ``--ifbench-summary PATH``): tables, totals, plots."""

from __future__ import annotations

import json
import re
import struct
import zlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_ifbench.reports.metrics import INTERVAL_NOTE
from pytest_ifbench.reports.summary_file import summary_path
from pytest_ifbench.testing import Reply
from tests._support import FAKE_KEY, HELLO_LOWER, SHOUT, demo_suite, stub_args, write_suite

SUITE = demo_suite({**HELLO_LOWER, "markers": ["smoke"]}, SHOUT)

#: A benchmark plugin as a conftest: a metric table, a plot, and a plot plugin that breaks.
CONFTEST = '''
import struct, zlib
from pytest_ifbench.reports.metrics import MetricTable


def _png(path, width=4, height=3):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\\x00" + b"\\xff\\x00\\x00" * width for _ in range(height))
    path.write_bytes(b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def pytest_ifbench_metrics(benchmark, records):
    if benchmark == "demo":
        return [MetricTable(title="demo: survival", columns=("turn", "alive"), rows=((1, "100%"),),
                            notes=("a note from the plugin",))]


def pytest_ifbench_plots(benchmark, records, directory):
    if benchmark == "demo":
        path = directory / "survival_curve.png"
        _png(path)
        return [path]


class Broken:
    def pytest_ifbench_plots(self, benchmark, records, directory):
        raise RuntimeError("no plots today")


def pytest_configure(config):
    config.pluginmanager.register(Broken(), "broken-plots")
'''


def assert_png(path: Path) -> tuple[int, int]:
    """A complete PNG: signature, chunks with good CRCs, IHDR first, IEND last, inflatable data."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    offset, kinds, idat = 8, [], b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset:offset + 4])
        kind, body = data[offset + 4:offset + 8], data[offset + 8:offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length:offset + 12 + length])
        assert zlib.crc32(kind + body) == crc, (path, kind)
        kinds.append(kind)
        idat += body if kind == b"IDAT" else b""
        offset += 12 + length
    assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND" and b"IDAT" in kinds, kinds
    width, height = struct.unpack(">II", data[16:24])
    assert width > 0 and height > 0 and zlib.decompress(idat)
    return width, height


def _images(text: str, pattern: str) -> list[str]:
    return re.findall(pattern, text)


def test_markdown_summary_tables_totals_and_plots(pytester, stub_env):
    stub_env.add_rule("lowercase", Reply(content="hello there"))
    stub_env.add_rule("uppercase", Reply(content="Hello There"))
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    pytester.makeconftest(CONFTEST)
    # stub_args turns the summary off for speed; the default place (no option) is what is tested here,
    # with its plots asked for (the default summary draws none: test_default_summary_draws_no_plots).
    args = [a for a in stub_args(stub_env) if a != "--ifbench-summary="]
    result = pytester.runpytest("suites", *args, "--ifbench-plots=yes")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["summary: ifbench-summary.md"])

    text = (pytester.path / "ifbench-summary.md").read_text()
    doc = json.loads((pytester.path / "ifbench-results.json").read_text())
    prompt = sum(r["tokens"]["prompt"] for r in doc["instances"])
    completion = sum(r["tokens"]["completion"] for r in doc["instances"])
    assert prompt > 0 and completion > 0
    for expected in (
        "- model: `openai/stub`; judges: `openai/stub`",
        "results file: [ifbench-results.json](ifbench-results.json)",
        "## Totals",
        "| demo | 2 | 0 | " + f"{prompt} | {completion} | 0 | 0 | - |",
        "## demo",
        "| all | 2 | 0 | 0 | 50.0% ±35.4 [9.5, 90.5] | 50.0% ±50.0 [0.0, 100.0] "
        "| - | " + f"{prompt}/{completion}" + " | - |",
        "| category=format | 1 | 0 | 0 | 100.0% ±0.0 [20.7, 100.0] | 100.0% ±inf [0.0, 100.0] |",
        "### demo: by marker",
        "| marker=smoke | 1 | 0 | 0 | 100.0% ±0.0 [20.7, 100.0] | 100.0% ±inf [0.0, 100.0] |",
        "*" + INTERVAL_NOTE + "*",
        "### demo: most failed checks",
        "| upper | ifbench.case | 1 | 1 | 0.0% |",
        "### demo: survival",
        "*a note from the plugin*",
        "plots by broken-plots failed: RuntimeError: no plots today",
    ):
        assert expected in text, f"{expected!r} not in:\n{text}"
    images = _images(text, r"!\[[^\]]*\]\(([^)]+)\)")
    assert images == ["ifbench-summary/demo/isr_csr_by_category.png", "ifbench-summary/demo/survival_curve.png"]
    sizes = [assert_png(pytester.path / image) for image in images]
    assert sizes[0][0] > 300 and sizes[1] == (4, 3)
    assert FAKE_KEY not in text


def test_html_summary_under_xdist(pytester):
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    write_suite(pytester.path, "suites/more.yaml", SUITE.replace("benchmark: demo", "benchmark: more"))
    pytester.makeconftest(CONFTEST)
    replies = [{"id": "hello-lower", "response": "hello"}, {"id": "shout", "response": "HELLO"}]
    (pytester.path / "replies.jsonl").write_text("\n".join(json.dumps(r) for r in replies) + "\n")
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--ifbench-responses=replies.jsonl",
                                "--ifbench-results=out/run-results.json",
                                "--ifbench-summary=out/report.html", "--ifbench-baseline", "-n", "2")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["summary: out/report.html"])
    text = (pytester.path / "out" / "report.html").read_text()
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert '<a href="run-results.json">run-results.json</a>' in text
    assert "<h2>demo</h2>" in text and "<h2>more</h2>" in text
    assert '<tr><td>all</td><td class="n">4</td><td class="n">0</td>' in text, "the totals add both benchmarks"
    assert "<td>marker=smoke</td>" in text and "<h3>demo: survival</h3>" in text
    assert "<h2>Baseline</h2>\n<p>baseline: 0 regressions, 0 improvements, 0 known failures, 4 new instances" in text
    images = _images(text, r'<img src="([^"]+)"')
    assert sorted(images) == ["report/demo/isr_csr_by_category.png", "report/demo/survival_curve.png",
                              "report/more/isr_csr_by_category.png"]
    for image in images:
        assert_png(pytester.path / "out" / image)
    assert not (pytester.path / "out" / "run-summary.md").exists()


def test_where_the_summary_goes(tmp_path):
    def config(summary, results="ifbench-results.json"):
        options = {"ifbench_summary": summary, "ifbench_results": results}
        return SimpleNamespace(getoption=lambda name, default=None: options.get(name, default),
                               invocation_params=SimpleNamespace(dir=tmp_path))

    assert summary_path(config(None)) == tmp_path / "ifbench-summary.md"
    assert summary_path(config(None, "runs/gpt4.json")) == tmp_path / "runs" / "gpt4-summary.md"
    assert summary_path(config(None, "runs/a-results.json")) == tmp_path / "runs" / "a-summary.md"
    assert summary_path(config(None, "")) is None, "no results file, no default summary"
    assert summary_path(config("", "x.json")) is None
    assert summary_path(config("r/s.html", "")) == tmp_path / "r" / "s.html"


def test_bad_summary_suffix_is_a_usage_error(pytester):
    result = pytester.runpytest("--ifbench-summary=report.txt", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ifbench-summary: 'report.txt' must end in .md or .html*"])


#: A plot plugin that notes what was already on disk when it was called, and counts its calls.
ORDER_CONFTEST = CONFTEST.split("class Broken")[0].replace("def pytest_ifbench_plots(", "def _plain_plots(") + '''
import json
from pathlib import Path


def pytest_ifbench_plots(benchmark, records, directory):
    summary = Path("ifbench-summary.md")
    seen = {"results": Path("ifbench-results.json").is_file(),
            "summary": summary.read_text() if summary.is_file() else None}
    calls = Path("plot-calls.jsonl")
    with calls.open("a") as out:
        out.write(json.dumps(seen) + "\\n")
    return _plain_plots(benchmark, records, directory)
'''


def _recorded_run(pytester: pytest.Pytester, *extra: str) -> str:
    replies = [{"id": "hello-lower", "response": "hello"}, {"id": "shout", "response": "hello"}]
    (pytester.path / "replies.jsonl").write_text("\n".join(json.dumps(r) for r in replies) + "\n")
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--ifbench-responses=replies.jsonl",
                                "--ifbench-live-status=off", *extra)
    result.assert_outcomes(passed=1, failed=2)  # shout's failed check counts as a failed subtest too
    result.stdout.fnmatch_lines(["summary: ifbench-summary.md"])
    return (pytester.path / "ifbench-summary.md").read_text()


def _plot_calls(pytester: pytest.Pytester) -> list[dict]:
    calls = pytester.path / "plot-calls.jsonl"
    return [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []


def test_default_summary_draws_no_plots_and_reuses_earlier_ones(pytester):
    """The default summary (beside the results file) calls no plot plugin and links no image, and says
    how to get them; asked for, they are drawn after the results file and the summary text are written,
    and the text is rewritten with them; a later default run of the same results links them undrawn."""
    from pytest_ifbench.reports.summary_writer import NOT_DRAWN

    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    pytester.makeconftest(ORDER_CONFTEST)
    text = _recorded_run(pytester)
    assert _plot_calls(pytester) == [], "nobody asked for plots: no plugin drew any"
    assert not (pytester.path / "ifbench-summary").exists()
    assert _images(text, r"!\[[^\]]*\]\(([^)]+)\)") == []
    assert NOT_DRAWN in text and "## demo" in text and "### demo: survival" in text

    text = _recorded_run(pytester, "--ifbench-plots=yes")
    (seen,) = _plot_calls(pytester)
    assert seen["results"], "the results file is written before any plot is drawn"
    assert seen["summary"] is not None and "### demo: survival" in seen["summary"], "and the summary's text"
    assert "survival_curve.png" not in seen["summary"]
    images = _images(text, r"!\[[^\]]*\]\(([^)]+)\)")
    assert images == ["ifbench-summary/demo/isr_csr_by_category.png", "ifbench-summary/demo/survival_curve.png"]
    assert NOT_DRAWN not in text
    drawn_at = [(pytester.path / image).stat().st_mtime_ns for image in images]

    text = _recorded_run(pytester)  # the default again, same results: the plots are reused, not drawn
    assert len(_plot_calls(pytester)) == 1
    assert _images(text, r"!\[[^\]]*\]\(([^)]+)\)") == images and NOT_DRAWN not in text
    assert [(pytester.path / image).stat().st_mtime_ns for image in images] == drawn_at

    _recorded_run(pytester, "--ifbench-plots=no", "--ifbench-summary=ifbench-summary.md")
    assert len(_plot_calls(pytester)) == 1, "--ifbench-plots=no wins over a named summary"


def test_a_named_summary_draws_its_plots(pytester):
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    pytester.makeconftest(ORDER_CONFTEST)
    text = _recorded_run(pytester, "--ifbench-summary=ifbench-summary.md")
    assert len(_plot_calls(pytester)) == 1
    assert "ifbench-summary/demo/survival_curve.png" in text
