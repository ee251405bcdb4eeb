"""One ruff process over many replies (``ruff.batch.check_many``), in ``ifbench verify`` and in suite runs.

``check_many`` must give exactly what ``check_code`` gives for each reply on
its own (violations, messages, order, errors), which ``test_batching.py`` ties
to one paper-style ruff process per instruction.
"""

from __future__ import annotations

import json
import random
import re
import tempfile

import pytest

from pytest_ifbench._text import extract_code
from pytest_ifbench.benchmarks.vericode.corpus import build_corpus, instruction_sets
from pytest_ifbench.benchmarks.vericode.instructions import BY_ID
from pytest_ifbench.cli.main import main as cli_main
from pytest_ifbench.ruff import batch as _ruff_batch
from pytest_ifbench.ruff import check as _ruff
from pytest_ifbench.ruff.batch import RuffBatcher, check_many
from pytest_ifbench.ruff.check import RuffCheck, RuffError, check_code, ruff_setting

LONG = "x = 1\nname = '" + "a" * 100 + "'\n"


def ruff_check(key: str, iid: str, params) -> RuffCheck:
    instruction = BY_ID[iid]
    clean = instruction.validate(params)
    return RuffCheck(key=key, select=instruction.select(clean),
                     settings=instruction.settings(clean) if instruction.settings else ())


def corpus_items(n: int, seed: int) -> list[tuple[str, list[RuffCheck]]]:
    sets = instruction_sets(n, 5, seed=seed)
    return [(extract_code(reply), [ruff_check(iid, iid, params) for iid, params in chosen])
            for reply, chosen in zip(build_corpus(n, seed=seed), sets)]


def plain(result):
    """Comparable form: errors by message (RuffError compares by identity)."""
    return {key: f"error: {value}" if isinstance(value, RuffError) else value for key, value in result.items()}


@pytest.fixture
def processes(monkeypatch):
    """Counts ruff processes: batch runs (files each) and single-reply runs."""
    seen = {"batch": [], "single": 0}
    real_files, real_group = _ruff_batch._run_files, _ruff.run_group

    def files(root, units, timeout):
        seen["batch"].append(len(units))
        return real_files(root, units, timeout)

    def group(code, checks, **kwargs):
        seen["single"] += 1
        return real_group(code, checks, **kwargs)

    monkeypatch.setattr(_ruff_batch, "_run_files", files)
    monkeypatch.setattr(_ruff, "run_group", group)
    return seen


def test_many_replies_in_one_process_equal_each_reply_alone(processes):
    items = corpus_items(60, seed=31)
    items.insert(7, items[3])  # a duplicate reply
    items.insert(11, ("def broken(:\n    pass\n", items[0][1]))  # does not parse
    items.append((items[5][0], []))  # no checks at all
    many = check_many(items)
    assert len(processes["batch"]) == 1 and processes["single"] == 0
    alone = [check_code(code, checks) for code, checks in items]
    assert [plain(r) for r in many] == [plain(r) for r in alone]
    assert all(v and v[0].code is None for v in many[11].values())  # the syntax error fails every check
    assert sum(not v for r in many for v in r.values()) > 50 and sum(bool(v) for r in many for v in r.values()) > 50


def test_configuration_around_the_temporary_tree_is_ignored(tmp_path, monkeypatch):
    """Ruff resolves each file's nearest configuration: the batch's own complete ruff.toml, never a
    project's or a parent folder's (which here would switch every rule off)."""
    (tmp_path / "pyproject.toml").write_text('[tool.ruff]\nline-length = 300\n[tool.ruff.lint]\nignore = ["ALL"]\n')
    inner = tmp_path / "project"
    inner.mkdir()
    (inner / "ruff.toml").write_text('line-length = 300\n[lint]\nselect = []\nper-file-ignores = {"*" = ["ALL"]}\n')
    monkeypatch.setattr(tempfile, "tempdir", str(inner))
    items = [(LONG, [ruff_check("style_3", "style_3", {"line_length": 79})]),
             (LONG, [ruff_check("style_2", "style_2", {"quote_style": "double"})])]
    many = check_many(items)
    assert [v.code for v in many[0]["style_3"]] == ["E501"]
    assert [v.code for v in many[1]["style_2"]] == ["Q000"]
    assert [plain(r) for r in many] == [plain(check_code(code, checks)) for code, checks in items]
    assert not any(p.name.startswith("ifbench-ruff-") for p in inner.iterdir())  # the tree is removed


def test_a_broken_check_errors_alone_and_the_batch_still_holds(processes):
    items = corpus_items(12, seed=32)
    bad = RuffCheck(key="bad", select=("E501",), settings=(ruff_setting("line-length", "not a number"),))
    items[4] = (items[4][0], [*items[4][1], bad])
    many = check_many(items)
    assert isinstance(many[4]["bad"], RuffError)
    assert [plain(r) for r in many] == [plain(check_code(code, checks)) for code, checks in items]
    assert len(processes["batch"]) > 1  # the failing process was split, not trusted


def test_a_batch_that_crashes_leaves_each_reply_to_ruff_alone(monkeypatch):
    from pytest_ifbench._composition import default_registry

    def crash(items):
        raise TypeError("can only concatenate str (not 'NoneType') to str")  # e.g. a racing sysconfig

    monkeypatch.setattr(_ruff_batch, "check_many", crash)
    from pytest_ifbench._types import CheckSpec
    from pytest_ifbench.ruff.batch import ruff_checks

    registry = default_registry()
    batcher = RuffBatcher(registry)
    [reply] = build_corpus(1, seed=5)
    [chosen] = instruction_sets(1, 3, seed=5)
    specs = [CheckSpec(id=iid, verifier=f"vericode.{iid}", params=registry.get(f"vericode.{iid}").validate(params))
             for iid, params in chosen]
    batcher.queue(specs, reply)
    checks = [rc for _, rc in ruff_checks(specs, registry)]
    assert checks and batcher.results(extract_code(reply), checks) is None  # the caller runs check_code itself
    assert batcher.unclaimed == 0


def test_the_ruff_executable_is_found_when_ruffs_finder_fails(monkeypatch):
    import ruff.__main__

    def broken():
        raise TypeError("can only concatenate str (not 'NoneType') to str")

    monkeypatch.setattr(ruff.__main__, "find_ruff_bin", broken)
    found = _ruff._find_ruff()
    assert found.endswith("ruff") and check_code("x = 1\n", [RuffCheck(key="e", select=("E501",))])["e"] == []


def test_replies_ruff_cannot_read_from_disk_alike_go_through_stdin(processes):
    shebang = "#!/usr/bin/env python\nx = 1\n"  # EXE001 reads the file's mode: only stdin agrees
    items = [(shebang, [RuffCheck(key="exe", select=("EXE",))]),
             ("x = '\ud800'\n", [ruff_check("style_2", "style_2", {})]),  # not encodable as UTF-8
             (LONG, [ruff_check("style_3", "style_3", {})])]
    many = check_many(items)
    assert many[0] == {"exe": []}
    assert isinstance(many[1]["style_2"], RuffError)
    assert [plain(r) for r in many] == [plain(check_code(code, checks)) for code, checks in items]
    assert processes["batch"] == [1] and processes["single"] >= 2


def test_ifbench_verify_checks_all_lines_in_one_process(tmp_path, processes, monkeypatch):
    replies = build_corpus(30, seed=33)
    rng = random.Random(33)
    lines = []
    for reply, chosen in zip(replies, instruction_sets(30, 3, seed=33, ruff_only=False)):
        lines += [json.dumps({"id": f"{n}-{iid}", "verifier": f"vericode.{iid}", "params": params,
                              "response": reply}) for n, (iid, params) in enumerate(chosen)]
    lines += [lines[2], "not json", json.dumps({"verifier": "vericode.style_3", "params": {"line_length": 7},
                                                "response": LONG}),
              json.dumps({"verifier": "ifbench.ruff", "params": {"select": ["E501"]}, "response": LONG}), ""]
    rng.shuffle(lines)
    source = tmp_path / "cases.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def verify(out: str) -> str:
        assert cli_main(["verify", "--in", str(source), "--out", str(tmp_path / out)]) == 1  # "not json" errs
        return (tmp_path / out).read_text(encoding="utf-8")

    batched = verify("batched.jsonl")
    assert len(processes["batch"]) == 1 and processes["single"] == 0
    monkeypatch.setattr(RuffBatcher, "results", lambda self, code, checks: None)
    one_by_one = verify("alone.jsonl")
    assert processes["single"] >= 30  # one ruff run per reply at least: a reply's lines are checked together
    assert batched == one_by_one
    assert batched.count('"passed": true') > 10 and batched.count('"passed": false') > 10


def _suite(n: int) -> str:
    import yaml

    instances = []
    sets = instruction_sets(n, 5, seed=34, ruff_only=False)
    for index, (reply, chosen) in enumerate(zip(build_corpus(n, seed=34), sets)):
        checks = [{"id": iid, "verifier": f"vericode.{iid}", "params": params} for iid, params in chosen]
        instances.append({"id": f"r{index:02d}", "prompt": "write it", "response": reply, "checks": checks})
    return yaml.safe_dump({"ifbench": 1, "benchmark": "batchdemo", "instances": instances}, sort_keys=False)


CONFTEST = """
import json, os
from pytest_ifbench.ruff.batch import RuffBatcher
from pytest_ifbench._state import STATE_KEY

if os.environ.get("IFBENCH_TEST_UNBATCHED"):
    RuffBatcher.results = lambda self, code, checks: None

def pytest_sessionfinish(session):
    batcher = session.config.stash[STATE_KEY].ruff_batch()
    # workerinput, not PYTEST_XDIST_WORKER: the outer test run may itself be an xdist worker.
    name = getattr(session.config, "workerinput", {}).get("workerid", "main")
    (session.config.rootpath / f"batches-{name}.json").write_text(json.dumps([batcher.batches, batcher.replies,
                                                                                  batcher.unclaimed]))
"""


def test_suite_runs_batch_finished_replies_with_identical_reports(pytester, monkeypatch):
    pytester.makeconftest(CONFTEST)
    (pytester.path / "suite.yaml").write_text(_suite(24), encoding="utf-8")

    def run(*args: str) -> tuple[list[str], list]:
        result = pytester.runpytest("suite.yaml", "-p", "no:cacheprovider", "-v", "-rA",
                                    "--ifbench-summary=", *args)
        doc = json.loads((pytester.path / "ifbench-results.json").read_text())
        checks = [(r["instance"], c["id"], c["passed"], c.get("error"), c.get("verdict"))
                  for r in sorted(doc["instances"], key=lambda r: r["instance"]) for c in r["checks"]]
        report = sorted(re.sub(r"\s*\[\s*\d+%\]$", "", line) for line in result.outlines if "suite.yaml::" in line)
        return report, checks

    batched = run()
    batches, replies, unclaimed = json.loads((pytester.path / "batches-main.json").read_text())
    assert replies == 24 and batches < 6  # replies arrive together: a few batches, not one per reply
    assert unclaimed == 0  # every item read its batched results
    monkeypatch.setenv("IFBENCH_TEST_UNBATCHED", "1")
    unbatched = run()
    assert batched == unbatched
    assert any("SUBFAIL" in line for line in batched[0]) and any("SUBPASS" in line for line in batched[0])
    monkeypatch.delenv("IFBENCH_TEST_UNBATCHED")
    workers = run("-n", "2")
    assert workers[1] == batched[1]
    per_worker = [json.loads(p.read_text()) for p in pytester.path.glob("batches-gw*.json")]
    assert len(per_worker) == 2 and sum(r for _, r, _ in per_worker) == 24 and not any(u for *_, u in per_worker)
