"""Which files are suites: robust detection, "looks like a suite but is not" warnings,
importers that crash, and results that survive values JSON cannot hold."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from pytest_ifbench.reports.records import json_safe, write_results
from pytest_ifbench.suite.detect import sniff_suite

CHECKS = "[{id: c, verifier: ifbench.case, params: {mode: lower}}]"
BODY = f"benchmark: demo\ninstances:\n  - id: one\n    prompt: hi\n    checks: {CHECKS}\n"
FLOW = f"{{benchmark: demo, instances: [{{id: one, prompt: hi, checks: {CHECKS}}}]"

#: Valid suites in every spelling the sniffer must accept: (name, bytes).
DETECTED: list[tuple[str, bytes]] = [
    ("plain", f"ifbench: 1\n{BODY}".encode()),
    ("header-after-4kb", (f"{BODY}description: |\n" + "  filler line\n" * 600 + "ifbench: 1\n").encode()),
    ("flow", (FLOW + ", ifbench: 1}\n").encode()),
    ("flow-first", ("{ifbench: 1, " + FLOW[1:] + "}\n").encode()),
    ("flow-multiline", ("{\n  benchmark: demo,\n  ifbench: 1,\n  " + FLOW[18:] + "}\n").encode()),
    ("double-quoted", f'"ifbench": 1\n{BODY}'.encode()),
    ("single-quoted", f"'ifbench': 1\n{BODY}".encode()),
    ("bom", f"\ufeffifbench: 1\n{BODY}".encode()),
    ("bom-flow", ("\ufeff{ifbench: 1, " + FLOW[1:] + "}\n").encode()),
    ("crlf", f"ifbench: 1\n{BODY}".replace("\n", "\r\n").encode()),
    ("comments-first", f"# a suite\n# ifbench: 0 (a comment)\n\nifbench: 1\n{BODY}".encode()),
    ("document-marker", f"---\nifbench: 1\n{BODY}".encode()),
    ("directive", f"%YAML 1.1\n---\nifbench: 1\n{BODY}".encode()),
    ("space-before-colon", f"ifbench : 1\n{BODY}".encode()),
    ("document-end", f"ifbench: 1\n{BODY}...\n".encode()),
]

#: Files holding a misplaced suite (an ``ifbench`` key beside a suite's other keys, below the top
#: level): (name, bytes, what the warning says).
LOOKALIKES: list[tuple[str, bytes, str]] = [
    ("nested", b"outer:\n  ifbench: 1\n  instances: []\n", "has an 'ifbench' key, but not at the top level"),
    ("nested-flow", b"{outer: {ifbench: 1, benchmark: x}}\n", "has an 'ifbench' key, but not at the top level"),
    ("list", b"- ifbench: 1\n  benchmark: x\n- x\n", "mentions 'ifbench' but its top level is a list"),
]

#: Top-level ``ifbench`` key, but broken: a collection error naming the file.
BROKEN: list[tuple[str, bytes, str]] = [
    ("version-2", f"ifbench: 2\n{BODY}".encode(), "ifbench: unsupported suite format version 2"),
    ("not-yaml", b"ifbench: 1\ninstances: [unclosed\n", "invalid YAML"),
    ("bomb", b"ifbench: 1\n" + b"a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
     + b"".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n".encode() for i in range(1, 10)),
     "refused: the document expands to more than"),
    ("deep", b"ifbench: 1\nx: " + b"[" * 100_000 + b"]" * 100_000 + b"\n", "refused: nested more than 100 levels"),
]

NOT_SUITES: list[tuple[str, bytes]] = [
    ("ci-job", b"jobs:\n  ifbench:\n    runs-on: ubuntu\n"),
    ("compose-service", b"services:\n  ifbench:\n    image: x\n"),
    ("list-of-names", b"- ifbench: 1\n- x\n"),
    ("comment-only", b"# ifbench: 1\nkey: value\n"),
    ("in-a-value", b"name: ifbench: no\n"),
    ("other-key", b"ifbench_version: 1\n"),
    ("empty", b""),
]


@pytest.mark.parametrize(("name", "content"), DETECTED, ids=[n for n, _ in DETECTED])
def test_every_spelling_of_a_suite_is_detected_and_collected(pytester, name, content):
    pytester.path.joinpath(f"{name}.yaml").write_bytes(content)
    assert sniff_suite(pytester.path / f"{name}.yaml") == "suite"
    result = pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([f"{name}.yaml::one"])
    assert result.ret == 0


def test_lookalikes_and_broken_suites_are_named_never_ignored(pytester):
    for name, content, _ in LOOKALIKES + BROKEN:
        pytester.path.joinpath(f"{name}.yaml").write_bytes(content)
    for name, content in NOT_SUITES:
        pytester.path.joinpath(f"{name}.yaml").write_bytes(content)
    pytester.path.joinpath("real.yaml").write_bytes(DETECTED[0][1])
    result = pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:cacheprovider", "-W", "always")
    out = result.stdout.str()
    assert "Traceback" not in out
    result.stdout.fnmatch_lines(["real.yaml::one"])
    for name, _, message in LOOKALIKES:
        assert f"{name}.yaml: {message}" in out and "NotASuiteWarning" in out
    for name, _, message in BROKEN:
        assert f"ERROR collecting {name}.yaml" in out and f"{name}.yaml: {message}" in out
    for name, _ in NOT_SUITES:
        assert f"{name}.yaml" not in out
    assert result.ret == pytest.ExitCode.INTERRUPTED  # the collection errors


def test_a_crashing_importer_leaves_its_file_alone_with_a_warning(pytester):
    """A stray deeply nested .jsonl makes an importer raise: its neighbours still collect."""
    pytester.makeconftest("""
        import json

        def pytest_ifbench_suite_data(path, config):
            if path.suffix == ".jsonl":
                return json.loads(path.read_text())  # RecursionError on the stray file
    """)
    pytester.path.joinpath("stray.jsonl").write_text("[" * 100_000 + "]" * 100_000)
    pytester.path.joinpath("neighbour.yaml").write_bytes(DETECTED[0][1])
    result = pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["neighbour.yaml::one", "*SuiteImportWarning*stray.jsonl: the suite importer of "
                                 "benchmark plugin *conftest.py* failed (RecursionError*the file is left alone*"])
    assert result.ret == 0


def test_an_importer_suite_error_is_still_a_collection_error(pytester):
    pytester.makeconftest("""
        from pytest_ifbench.suite.format import SuiteError

        def pytest_ifbench_suite_data(path, config):
            if path.suffix == ".json":
                raise SuiteError(path, "line 3: not an official row")
    """)
    pytester.path.joinpath("official.json").write_text("{}")
    result = pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*official.json: line 3: not an official row"])


def test_json_safe_turns_every_odd_value_into_json():
    looped: list = [1]
    looped.append(looped)
    value = {"date": datetime.date(2024, 6, 11), "bytes": b"\xff", "set": {3}, "nan": float("nan"),
             "huge": 10**5000, datetime.date(2020, 1, 1): "date key", 5: "int key", "loop": looped,
             "deep": json.loads("[" * 500 + "]" * 500)}
    safe = json_safe(value)
    text = json.dumps(safe, allow_nan=False)
    assert safe["date"] == "2024-06-11" and safe["2020-01-01"] == "date key" and safe["5"] == "int key"
    assert safe["nan"] == "nan" and safe["huge"].startswith("<int of") and safe["loop"] == [1, "…"]
    assert len(text) < 5000


def test_one_unserialisable_record_does_not_lose_the_results_file(tmp_path):
    looped: dict = {}
    looped["self"] = looped
    records = [{"nodeid": "s.yaml::a", "status": "passed", "metadata": {"when": datetime.date(2024, 1, 2)}},
               {"nodeid": "s.yaml::b", "status": "failed", "metadata": looped},
               {"nodeid": "s.yaml::c", "status": "passed", "metadata": {"plain": [1, 2]}}]
    path = tmp_path / "results.json"
    write_results(path, records, {"model": "m", "when": datetime.datetime(2024, 1, 2, 3, 4)})
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert [r["nodeid"] for r in doc["instances"]] == ["s.yaml::a", "s.yaml::b", "s.yaml::c"]
    assert doc["instances"][0]["metadata"] == {"when": "2024-01-02"}
    assert doc["instances"][1]["metadata"] == {"self": "…"}
    assert doc["instances"][2]["metadata"] == {"plain": [1, 2]} and doc["when"] == "2024-01-02T03:04:00"


def test_sniffing_reads_past_4kb_but_not_unrelated_files(tmp_path: Path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"key: value\n" * 100_000)
    assert sniff_suite(big) is None
    big.write_bytes(b"key: value\n" * 100_000 + b"ifbench: 1\n")
    assert sniff_suite(big) == "suite"
