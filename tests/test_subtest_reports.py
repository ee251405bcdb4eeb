"""Checks reported without a capture per subtest (``_subtests``) read exactly as pytest's own subtests.

Each case runs the same suite twice in a subprocess: once as shipped, once with the shared-capture
reporter switched off (so ``subtests.test()`` reports every check), and compares what a user sees:
the terminal with ``-rA`` (captured output and logs of passed and failed subtests included), the
JUnit XML, and the outcome counts, with and without xdist.
"""

from __future__ import annotations

import json
import re
from xml.etree import ElementTree

import pytest

from pytest_ifbench.testing import Reply
from tests._support import demo_suite, stub_args, write_suite

#: A check hook that writes to stdout, stderr and a logger, so every capture path carries something.
NOISY_HOOK = '''
import logging, sys



def pytest_ifbench_report_check(item, name, outcomes):
    print(f"out of {{name}}")
    sys.stderr.write(f"err of {{name}}\\n")
    logging.getLogger("checks").warning("log of %s", name)
    return None


{switch}
'''
#: conftest lines (last, so line numbers in log records agree) that restore pytest's ``subtests.test()`` path
#: for one run (an in-process run shares the module with the tests that follow).
FALLBACK = """import pytest_ifbench._subtests as _s
_kept, _s.SubtestReport = _s.SubtestReport, None

def pytest_unconfigure(config):
    _s.SubtestReport = _kept"""

SUITE = demo_suite(
    {"id": "both-pass", "prompt": "say hi", "checks": [
        {"id": "words", "verifier": "ifbench.word_count", "params": {"min": 1}},
        {"id": "short", "verifier": "ifbench.word_count", "params": {"max": 50}}]},
    {"id": "one-fails", "prompt": "say hi again", "checks": [
        {"id": "words", "verifier": "ifbench.word_count", "params": {"min": 1}},
        {"id": "upper", "verifier": "ifbench.case", "params": {"mode": "upper"}}]},
)
_VOLATILE = [
    (re.compile(r'time="[\d.]+"'), 'time="T"'), (re.compile(r'timestamp="[^"]+"'), 'timestamp="T"'),
    (re.compile(r'hostname="[^"]+"'), 'hostname="H"'),
    # pytest's last line is centred: "in 9.87s" and "in 10.02s" (a loaded machine) pad it with one "=" less,
    # and past a minute it adds "(0:01:05)"; the padding goes with the time
    (re.compile(r"^=+ (.*) in [\d.]+s(?: \(\d+:\d\d:\d\d\))? =+$", re.MULTILINE), r"= \1 in Ts ="),
    (re.compile(r"in [\d.]+s"), "in Ts"),
    (re.compile(r"\b\d+m\d\ds\b"), "Ns"),  # the live status line's elapsed time past a minute: 1m05s
    (re.compile(r"\d+(\.\d+)? ?s\b"), "Ns"), (re.compile(r"gw\d"), "gwN"),
    (re.compile(r"(/tmp|/private)\S*"), "PATH"),
]


def _normalised(text: str) -> str:
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def _run(pytester: pytest.Pytester, stub_env, *, fallback: bool, extra: tuple[str, ...]) -> tuple[str, str]:
    pytester.makeconftest(NOISY_HOOK.format(switch=FALLBACK if fallback else ""))
    result = pytester.runpytest("suites", *stub_args(stub_env), "-rA", "--junitxml=junit.xml",
                                "-o", "junit_logging=all", "--ifbench-results=", "--ifbench-no-cache",
                                *extra)
    result.assert_outcomes(passed=1, failed=2)  # one-fails, and its [upper] subtest
    lines = [line for line in result.stdout.lines if not line.startswith(("platform ", "rootdir", "plugins"))]
    return _normalised("\n".join(lines)), _normalised((pytester.path / "junit.xml").read_text())


@pytest.mark.parametrize("extra", [(), ("-n", "2")], ids=["no-xdist", "xdist"])
def test_reports_match_pytest_subtests(pytester, stub_env, extra):
    stub_env.add_rule("", Reply(content="hello there"))
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    lean_terminal, lean_junit = _run(pytester, stub_env, fallback=False, extra=extra)
    ref_terminal, ref_junit = _run(pytester, stub_env, fallback=True, extra=extra)
    assert "out of upper" in ref_terminal and "log of upper" in ref_terminal  # the test sees the captures
    if not extra:
        assert lean_terminal == ref_terminal
    else:  # under xdist, workers finish in any order: compare the lines but the progress characters
        progress = re.compile(r"^[.uFsE]+ +\[ *\d+%\]$")
        assert sorted(x for x in lean_terminal.splitlines() if not progress.match(x)) == \
            sorted(x for x in ref_terminal.splitlines() if not progress.match(x))
    if not extra:
        assert lean_junit == ref_junit
    else:  # the same test cases, in the order the workers happened to finish them
        assert _testcases(lean_junit) == _testcases(ref_junit)


def _testcases(junit: str) -> list[str]:
    cases = ElementTree.fromstring(junit).iter("testcase")
    return sorted(ElementTree.tostring(case, encoding="unicode") for case in cases)


def test_item_output_outside_the_checks_stays_with_the_item(pytester, stub_env):
    """What the item writes before its checks (the agent-run section's neighbours, a verifier's print)
    is reported with the item, not with its first check."""
    stub_env.add_rule("", Reply(content="hello there"))
    write_suite(pytester.path, "suites/demo.yaml", demo_suite(
        {"id": "prints", "prompt": "x", "checks": [{"id": "upper", "verifier": "ifbench.case",
                                                     "params": {"mode": "upper"}}]}))
    pytester.makeconftest('''
def pytest_ifbench_instance_verified(item, record):
    print("item-level output")
''')
    result = pytester.runpytest("suites", *stub_args(stub_env), "-rA", "--ifbench-results=")
    text = result.stdout.str()
    subtest_at, item_at = text.index(" prints (demo.yaml) [upper] _"), text.index("_ prints (demo.yaml) _")
    assert subtest_at < item_at
    assert "item-level output" not in text[subtest_at:item_at]
    assert "item-level output" in text[item_at:text.index("ifbench summary")]


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-process", "xdist-controller"])
def test_an_instances_kept_reports_share_what_is_equal(pytester, stub_env, workers):
    """pytest's terminal reporter keeps every report to the end: an instance's reports share one keywords
    dict and its node id, and the reports of a check share one context across instances (on the xdist
    controller too, which rebuilds every report from a worker's mapping)."""
    stub_env.add_rule("", Reply(content="hello there"))
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    pytester.makeconftest('''
import json, pathlib, sys, pytest

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    kept = [r for reports in config.pluginmanager.get_plugin("terminalreporter").stats.values() for r in reports
            if hasattr(r, "when") and hasattr(r, "nodeid")]
    by_node = {}
    for r in kept:
        by_node.setdefault(r.nodeid, []).append(r)
    contexts = {}
    for r in kept:
        if hasattr(r, "context"):
            contexts.setdefault(r.context.msg, set()).add(id(r.context))
    pathlib.Path("shared.json").write_text(json.dumps({
        "reports": {node: len(rs) for node, rs in by_node.items()},
        "keywords": {node: len({id(r.keywords) for r in rs}) for node, rs in by_node.items()},
        "ids": {node: len({id(r.id) for r in rs}) for node, rs in by_node.items()},
        "contexts": {msg: len(ids) for msg, ids in contexts.items()},
        "empty": len({id(getattr(r, name)) for key in ("subtests passed", "passed")
                      for r in config.pluginmanager.get_plugin("terminalreporter").stats[key]
                      for name in ("sections", "user_properties")}),
        "items": ITEMS}))

ITEMS = {}

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    from _pytest.tmpdir import tmppath_result_key

    for name in ("extra_keyword_matches", "user_properties", "_report_sections", "fixturenames"):
        values = [getattr(item, name) for item in session.items]
        ITEMS[name] = [len({id(v) for v in values}), sum(len(v) == 0 for v in values)]
    ITEMS["tmp_path outcomes"] = sum(tmppath_result_key in item.stash for item in session.items)
    # what is left in their stashes, stashes whose dict kept a table, and stashes their old alias does not name
    ITEMS["stash"] = [sum(len(item.stash) for item in session.items),
                      sum(sys.getsizeof(item.stash._storage) > sys.getsizeof({}) for item in session.items),
                      sum(item._store is not item.stash for item in session.items)]
''')
    # -q: passed checks are counted ("subtests passed"), so kept (see test_only_an_instances_uncategorised...)
    result = pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-results=", "--ifbench-no-cache", "-q",
                                *workers)
    result.assert_outcomes(passed=1, failed=2)
    shared = json.loads((pytester.path / "shared.json").read_text())
    assert set(shared["reports"].values()) == {3}  # two checks and the call (setup/teardown: not kept)
    assert set(shared["keywords"].values()) == {1} and set(shared["ids"].values()) == {1}
    assert shared["contexts"] == {"words": 1, "short": 1, "upper": 1}
    # the empty sections and user_properties of the kept passed checks and calls: one shared tuple
    assert shared["empty"] == 1
    # a finished instance's empty set and lists: one shared empty each; its fixture names: the suite's list;
    # pytest's outcomes for tmp_path and its evaluated xfail mark: gone, the stash a new, empty one (under -n
    # the items are the workers')
    assert shared["items"] == {"extra_keyword_matches": [0, 0] if workers else [1, 2],
                               "user_properties": [0, 0] if workers else [1, 2],
                               "_report_sections": [0, 0] if workers else [1, 2],
                               "fixturenames": [0, 0] if workers else [1, 0], "tmp_path outcomes": 0,
                               "stash": [0, 0, 0]}


def test_only_an_instances_uncategorised_reports_leave_the_kept_reports(pytester, stub_env):
    """pytest keeps passed setups and teardowns (and, at the default verbosity, passed subtests) under
    ``stats[""]``, which nothing reads: an instance's leave it; a plain test's, an instance's failed
    teardown, failed check and own report stay; the summary and -rA read the same. With -q a passed
    check is filed under "subtests passed", which pytest only counts: it stays, every field readable."""
    stub_env.add_rule("", Reply(content="hello there"))
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    pytester.makeconftest('''
import json, pathlib, pytest

def pytest_ifbench_instance_verified(item, record):
    if item.name == "both-pass":
        item.addfinalizer(lambda: 1 / 0)

def _name(r):
    check = r.context.msg if hasattr(r, "context") else ""
    return f"{r.nodeid.rpartition('::')[2]}:{r.when}:{check}"

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    stats = config.pluginmanager.get_plugin("terminalreporter").stats
    pathlib.Path("kept.json").write_text(json.dumps(
        {key: sorted(_name(r) for r in reports if hasattr(r, "when")) for key, reports in stats.items()}))
''')
    for verbosity in ((), ("-q",)):
        result = pytester.runpytest("suites", "test_plain.py", *stub_args(stub_env), "--ifbench-results=",
                                    "--ifbench-no-cache", "-rA", *verbosity)
        kept = json.loads((pytester.path / "kept.json").read_text())
        assert kept[""] == ["test_plain:setup:", "test_plain:teardown:"]
        assert kept["error"] == ["both-pass:teardown:"]
        assert kept["passed"] == ["both-pass:call:", "test_plain:call:"]
        assert kept["failed"] == ["one-fails:call:", "one-fails:call:upper"]
        assert kept.get("subtests passed", []) == (
            ["both-pass:call:short", "both-pass:call:words", "one-fails:call:words"] if verbosity else [])
        summary = result.stdout.lines[-1]
        assert "2 failed, 2 passed" in summary and "1 error" in summary
        assert ("3 subtests passed" in summary) == bool(verbosity)
        assert "PASSED suites/demo.yaml::both-pass" in result.stdout.str()


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-process", "xdist-controller"])
def test_a_passed_check_pytest_keeps_to_count_is_a_counted_check_of_56_bytes(pytester, stub_env, workers):
    """With -q pytest keeps each passed check's report to the end to count it (~350 bytes a check, ~1.5 KB
    an instance of five): it keeps a CountedCheck, which names the check as the report did; the summary
    counts the same, and --durations lists no check, as at the default verbosity."""
    stub_env.add_rule("", Reply(content="hello there"))
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    pytester.makeconftest('''
import json, pathlib, sys, pytest

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    kept = config.pluginmanager.get_plugin("terminalreporter").stats.get("subtests passed", [])
    pathlib.Path("counted.json").write_text(json.dumps([
        [type(r).__name__, sys.getsizeof(r), r.nodeid, r.when, r.outcome, r.passed, r.context.msg,
         "ifbench" in r.keywords] for r in kept]))
''')
    result = pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-results=", "--ifbench-no-cache", "-q",
                                "--durations=0", "--durations-min=0", *workers)
    assert "2 failed, 1 passed, 3 subtests passed" in result.stdout.str()
    counted = json.loads((pytester.path / "counted.json").read_text())
    assert sorted(entry[2:] for entry in counted) == [
        ["suites/demo.yaml::both-pass", "call", "passed", True, "short", True],
        ["suites/demo.yaml::both-pass", "call", "passed", True, "words", True],
        ["suites/demo.yaml::one-fails", "call", "passed", True, "words", True]]
    assert {(name, size) for name, size, *_ in counted} == {("CountedCheck", 56)}
    durations = result.stdout.str().partition("slowest durations")[2]
    assert "suites/demo.yaml::one-fails" in durations and "[words]" not in durations, durations


def test_a_passed_checks_report_has_exactly_the_fields_pytests_subtests_give_it():
    """Made directly (no JSON round trip, no dict of its own until asked), it reads and serializes as
    ``SubtestReport._new`` makes it."""
    from _pytest.reports import TestReport
    from _pytest.subtests import SubtestReport

    from pytest_ifbench._kept_reports import check_context
    from pytest_ifbench._subtests import _subtest_report

    call = TestReport("suites/a.yaml::x", ("suites/a.yaml", None, "x (a.yaml)"), {"x": 1, "ifbench": 1}, "passed",
                      None, "call", [], 0.25, 10.0, 10.25, [("prop", 1)], extra_field="kept")
    ours, pytests = (_subtest_report(call, check_context("words"), None, None),
                     SubtestReport._new(call, check_context("words"), None, None))
    assert type(ours) is SubtestReport and ours._to_json() == pytests._to_json()
    assert vars(ours) == vars(pytests) and list(vars(ours)) == list(vars(pytests))
    assert ours.user_properties is not call.user_properties and ours.sections is not call.sections
    failed = TestReport("suites/a.yaml::x", ("suites/a.yaml", None, "x"), {}, "failed", "boom", "call")
    assert _subtest_report(failed, check_context("words"), None, None)._to_json() == \
        SubtestReport._new(failed, check_context("words"), None, None)._to_json()


#: conftest: on xdist workers, count the report messages sent per instance (and what a call report
#: carries); on the controller, the order in which reports reach ``pytest_runtest_logreport``.
MESSAGES_PROBE = '''
import json, os, pathlib, pytest

SENT = []
SEEN = []


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):
        return
    for plugin in session.config.pluginmanager.get_plugins():
        if type(plugin).__name__ == "WorkerInteractor":
            send = plugin.sendevent

            def counted(name, send=send, **kwargs):
                if name == "testreport":
                    data = kwargs["data"]
                    SENT.append([data.get("nodeid") or json.loads(data["ifbench_report_json"])["nodeid"],
                                 len(data.get("ifbench_checks", []))])
                return send(name, **kwargs)

            plugin.sendevent = counted


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    context = getattr(report, "context", None)
    SEEN.append([report.nodeid, report.when, context.msg if context else None, report.outcome,
                 getattr(getattr(report, "node", None), "gateway", None) is not None])


def pytest_unconfigure(config):
    who = config.workerinput["workerid"] if hasattr(config, "workerinput") else "controller"
    pathlib.Path(f"messages-{who}.json").write_text(json.dumps(SENT if who != "controller" else SEEN))
'''


def test_under_xdist_passed_checks_travel_with_their_call_report(pytester, stub_env):
    """A worker sends an instance as three messages (setup, the call carrying its passed checks,
    teardown); a failed check goes at once, carrying the passed ones made before it. The controller's
    plugins see every report in the order of one process (setup, the checks as made, call, teardown),
    each with the worker's node."""
    stub_env.add_rule("", Reply(content="hello there"))
    write_suite(pytester.path, "suites/demo.yaml", SUITE)
    pytester.makeconftest(MESSAGES_PROBE)
    result = pytester.runpytest("suites", *stub_args(stub_env), "--ifbench-results=", "--ifbench-no-cache",
                                "-n", "2", "-v")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*SUBPASSED[[]words[]] suites/demo.yaml::both-pass*",
                                 "*SUBPASSED[[]short[]] suites/demo.yaml::both-pass*"], consecutive=True)
    result.stdout.fnmatch_lines(["*SUBPASSED[[]words[]] suites/demo.yaml::one-fails*",
                                 "*SUBFAILED[[]upper[]] suites/demo.yaml::one-fails*"], consecutive=True)
    sent = [entry for path in pytester.path.glob("messages-gw*.json") for entry in json.loads(path.read_text())]
    by_node: dict[str, list[int]] = {}
    for nodeid, carried in sent:
        by_node.setdefault(nodeid.split("::")[1], []).append(carried)
    # one-fails: [words] passes first and rides on the failed [upper], which travels at once
    assert by_node == {"both-pass": [0, 2, 0], "one-fails": [0, 1, 0, 0]}
    seen = json.loads((pytester.path / "messages-controller.json").read_text())
    for instance, checks in (("both-pass", [["words", "passed"], ["short", "passed"]]),
                             ("one-fails", [["words", "passed"], ["upper", "failed"]])):
        order = [[when, msg, outcome] for nodeid, when, msg, outcome, _ in seen if nodeid.endswith(f"::{instance}")]
        assert order == [["setup", None, "passed"], *[["call", msg, outcome] for msg, outcome in checks],
                         ["call", None, "failed" if instance == "one-fails" else "passed"],
                         ["teardown", None, "passed"]]
    assert all(has_node for *_, has_node in seen)
