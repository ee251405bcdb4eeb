"""A benchmark declared with ``Benchmark(...)``: the core derives its option, metrics, generator and
cached official reader (pytest_ifbench._benchmark)."""

from __future__ import annotations

import json
import os

import pytest

from pytest_ifbench import Benchmark, Compat, ReadOptions

#: A benchmark module: one verifier whose verdict shows the compat it was given, a metric table, a
#: generator and an official reader for ``*.wc.json`` files that logs each call to ``reads.log``.
MODULE = '''
from pathlib import Path

from pytest_ifbench import Benchmark, Compat, MetricTable, Param, Verdict


def register(registry):
    @registry.verifier("wc.strict", params={"compat": Param(str, default="paper")}, version="1",
                       description="passes under paper rules only")
    def strict(text, params, ctx):
        return Verdict(passed=params["compat"] == "paper", evidence=f"compat={params['compat']}")


def tables(records):
    return [MetricTable(title="wc: declared table", columns=("", "items"), rows=(("all", len(records)),))]


def generate(argv):
    Path(argv[0]).write_text("generated\\n", encoding="utf-8")
    return 0


def read(path, options):
    if not path.name.endswith(".wc.json"):
        return None
    with open(Path(path).parent / "reads.log", "a", encoding="utf-8") as log:
        log.write(f"{path.name} {options.compat}\\n")
    rows = __import__("json").loads(path.read_text(encoding="utf-8"))
    return {"ifbench": 1, "benchmark": "wc", "instances": [
        {"id": row["id"], "prompt": "p", "response": row["response"],
         "checks": [{"id": "strict", "verifier": "wc.strict"}]} for row in rows]}


BENCHMARK = Benchmark(name="wc", verifiers=register, metrics=tables, generator=generate, official_reader=read,
                      compat=Compat(help="wc rules: paper or reference"))
'''

SUITE = """
ifbench: 1
benchmark: wc
{options}
instances:
  - id: one
    prompt: p
    response: r
    checks:
      - {{id: strict, verifier: wc.strict}}
"""


@pytest.fixture
def declared(pytester: pytest.Pytester) -> pytest.Pytester:
    """A conftest holding a ``Benchmark`` declaration (imported from its module, as a package would)."""
    pytester.makepyfile(wcbench=MODULE)
    pytester.makeconftest("from wcbench import BENCHMARK  # noqa: F401\n")
    pytester.syspathinsert()
    return pytester


def _verdicts(pytester: pytest.Pytester, *args: str) -> dict[str, bool]:
    result = pytester.runpytest(*args, "-p", "no:cacheprovider", "--ifbench-results=r.json")
    assert result.ret in (0, 1), result.stdout.str()
    records = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["instances"]
    return {record["instance"]: record["checks"][0]["passed"] for record in records}


def test_the_compat_option_is_added_and_applied_to_the_checks(declared):
    declared.makefile(".yaml", plain=SUITE.format(options=""))
    declared.makefile(".yaml", option=SUITE.format(options="options: {compat: reference}").replace("one", "two"))
    help_text = declared.runpytest("--help").stdout.str()
    assert "--wc-compat={paper,reference}" in help_text and "wc rules: paper or reference" in help_text
    assert _verdicts(declared, "plain.yaml", "option.yaml") == {"one": True, "two": False}
    assert _verdicts(declared, "plain.yaml", "option.yaml", "--wc-compat=reference") == {"one": False, "two": False}
    assert _verdicts(declared, "plain.yaml", "option.yaml", "--wc-compat=paper") == {"one": True, "two": True}


def test_a_bad_suite_compat_is_a_collection_error(declared):
    declared.makefile(".yaml", bad=SUITE.format(options="options: {compat: authors}"))
    result = declared.runpytest("bad.yaml", "-p", "no:cacheprovider", "--ifbench-results=")
    result.stdout.fnmatch_lines(["*bad.yaml: options.compat: expected paper or reference, got 'authors'*"])
    assert result.ret != 0


def test_the_metrics_reach_the_summary(declared):
    declared.makefile(".yaml", plain=SUITE.format(options=""))
    result = declared.runpytest("plain.yaml", "-p", "no:cacheprovider", "--ifbench-results=")
    result.stdout.fnmatch_lines(["*ifbench summary*", "wc: declared table", "*all*1*"])


def test_the_official_reader_is_called_once_per_file_content(declared):
    path = declared.path / "rows.wc.json"
    path.write_text(json.dumps([{"id": "a", "response": "x"}]), encoding="utf-8")
    log = declared.path / "reads.log"
    for _ in range(2):  # two runs in one process: the second is served from the core's cache
        assert _verdicts(declared, "rows.wc.json") == {"a": True}
    assert log.read_text(encoding="utf-8").splitlines() == ["rows.wc.json None"]
    assert _verdicts(declared, "rows.wc.json", "--wc-compat=reference") == {"a": True}  # options key the cache
    assert log.read_text(encoding="utf-8").splitlines() == ["rows.wc.json None", "rows.wc.json reference"]
    path.write_text(json.dumps([{"id": "a", "response": "x"}, {"id": "b", "response": "y"}]), encoding="utf-8")
    assert _verdicts(declared, "rows.wc.json") == {"a": True, "b": True}  # the file changed: read again
    assert log.read_text(encoding="utf-8").splitlines()[-1] == "rows.wc.json None"
    assert len(log.read_text(encoding="utf-8").splitlines()) == 3


def test_the_cache_rereads_a_file_changed_to_the_same_size(tmp_path):
    calls = []
    benchmark = Benchmark(name="same", official_reader=lambda path, options: calls.append(path) or {"n": len(calls)})
    path = tmp_path / "f.json"
    path.write_text("aaaa", encoding="utf-8")
    assert benchmark.pytest_ifbench_suite_data(path, None) == {"n": 1}
    assert benchmark.pytest_ifbench_suite_data(path, None) == {"n": 1}
    path.write_text("bbbb", encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert benchmark.pytest_ifbench_suite_data(path, None) == {"n": 2}


def test_the_generator_runs_under_ifbench_generate(declared, monkeypatch):
    """Published under the entry-point group (a dist-info on sys.path), the module's generator is a
    subcommand of ``ifbench generate``."""
    dist = declared.path / "wcbench-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: wcbench\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[pytest_ifbench.benchmarks]\nwc = wcbench\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(declared.path))
    from pytest_ifbench.cli.main import main

    assert main(["generate", "wc", str(declared.path / "out.txt")]) == 0
    assert (declared.path / "out.txt").read_text(encoding="utf-8") == "generated\n"


def test_undeclared_parts_contribute_nothing(tmp_path):
    bare = Benchmark(name="bare")
    generators: dict = {}
    bare.pytest_ifbench_generators(generators)
    assert generators == {}
    assert bare.pytest_ifbench_metrics("bare", []) is None
    assert bare.pytest_ifbench_plots("bare", [], tmp_path) is None
    assert bare.pytest_ifbench_suite_data(tmp_path / "x.yaml", None) is None
    assert bare.read_options(None) == ReadOptions()


def test_references_are_imported_when_first_used():
    benchmark = Benchmark(name="lazy", metrics="json:dumps")
    assert benchmark.pytest_ifbench_metrics("lazy", [1]) == "[1]"
    with pytest.raises(ValueError, match="package.module:function"):
        Benchmark(name="bad", metrics="json.dumps").pytest_ifbench_metrics("bad", [])
    assert Compat(help="h").choices == ("paper", "reference")


def test_a_failing_reader_is_named_by_its_own_benchmark(pytester):
    """Every declaration's importer is the same method: the warning still names the one that failed."""
    pytester.makeconftest('''
from pytest_ifbench import Benchmark


def fine(path, options):
    return None


def broken(path, options):
    if path.name == "stray.json":
        raise RuntimeError("not my shape")
    return None


FIRST = Benchmark(name="first", official_reader=fine)
SECOND = Benchmark(name="second", official_reader=broken)
THIRD = Benchmark(name="third", official_reader=fine)
''')
    (pytester.path / "stray.json").write_text("{}", encoding="utf-8")
    result = pytester.runpytest("stray.json", "-p", "no:cacheprovider", "--ifbench-results=", "-W",
                                "default::UserWarning")
    result.stdout.fnmatch_lines(["*stray.json: the suite importer of benchmark plugin 'second' failed "
                                 "(RuntimeError: not my shape)*"])


def test_a_declaration_module_is_a_plugin_of_the_ifbench_command(declared, monkeypatch, capsys):
    """``ifbench verifiers --plugin MODULE``: a module holding only a declaration is accepted."""
    monkeypatch.syspath_prepend(str(declared.path))
    from pytest_ifbench.cli.main import main

    assert main(["verifiers", "--plugin", "wcbench"]) == 0
    assert "wc.strict" in capsys.readouterr().out
