"""A third-party benchmark package, really installed, works like a shipped one.

``examples/ifbench-wordcount`` is built and installed once per module with pip
(offline: ``--no-build-isolation`` uses the running environment's setuptools)
into a folder that the subprocesses get on ``PYTHONPATH``; its entry point in
the ``pytest_ifbench.benchmarks`` group is then all that makes pytest and the
``ifbench`` command load it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path

import pytest
import yaml
from packaging.version import Version

from tests._support import ROOT

PACKAGE = ROOT / "examples" / "ifbench-wordcount"
SUITE = PACKAGE / "suites" / "wordcount.yaml"
REPLIES = PACKAGE / "replies.jsonl"
#: What ``wordcount.max_words`` says about each recorded reply: (passed, evidence).
EXPECTED_LIMITS = {
    "haiku-sea": (True, "15 words (limit 17)"),
    "describe-coffee": (False, "31 words, 6 over the limit of 25"),
    "one-line-summary": (True, "10 words (limit 12)"),
    "blog-title": (True, "3 words (limit 3)"),
}


def _offline_build_problem() -> str | None:
    """Why pip cannot build the package here without downloading a build backend, or None."""
    try:
        setuptools = version("setuptools")
    except PackageNotFoundError:
        return "setuptools is not installed in the running environment"
    if Version(setuptools) < Version("70.1") and find_spec("wheel") is None:
        return f"setuptools {setuptools} builds wheels only with the `wheel` package, which is not installed"
    return None


@pytest.fixture(scope="module")
def wordcount_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip install --target`` of a copy of the package (a copy: the build writes build/ and *.egg-info)."""
    problem = _offline_build_problem()
    if problem:
        pytest.skip(f"cannot build examples/ifbench-wordcount offline: {problem} (pip install 'setuptools>=70.1')")
    work = tmp_path_factory.mktemp("ifbench-wordcount")
    source = work / "source"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    site = work / "site"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {"PIP_CONFIG_FILE": os.devnull}
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "--no-input", "--target", str(site), str(source)],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    dist_info = site / "ifbench_wordcount-0.1.0.dist-info"
    assert "[pytest_ifbench.benchmarks]\nwordcount = ifbench_wordcount.plugin" in \
        (dist_info / "entry_points.txt").read_text(encoding="utf-8")
    return site


@pytest.fixture
def with_package(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, wordcount_site: Path) -> Path:
    """A pytester directory holding the suite and the recorded replies, the package on PYTHONPATH."""
    monkeypatch.setenv("PYTHONPATH", str(wordcount_site), prepend=os.pathsep)  # for the `ifbench` script
    monkeypatch.syspath_prepend(wordcount_site)  # for the in-process pytest runs: its entry point is found
    shutil.copy(SUITE, pytester.path / "wordcount.yaml")
    shutil.copy(REPLIES, pytester.path / "replies.jsonl")
    return wordcount_site


def _score(pytester: pytest.Pytester, *extra: str) -> pytest.RunResult:
    return pytester.runpytest("wordcount.yaml", "--ifbench-responses=replies.jsonl", "-p", "no:cacheprovider",
                              "--ifbench-summary=", *extra)


def _ifbench(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The ``ifbench`` console script of this environment, with the package on PYTHONPATH."""
    script = Path(sys.executable).with_name("ifbench")
    command = [str(script)] if script.is_file() else \
        [sys.executable, "-c", "import sys; from pytest_ifbench.cli.main import main; sys.exit(main())"]
    pythonpath = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=60, cwd=cwd, check=False,
                          env=os.environ | {"PYTHONPATH": pythonpath})


def test_installed_benchmark_scores_recorded_responses(pytester, with_package):
    result = _score(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.assert_outcomes(passed=3, failed=2)  # describe-coffee and its 'limit' subtest
    result.stdout.fnmatch_lines([
        "*describe-coffee (wordcount.yaml) [[]limit[]]*",
        "*check 'limit' failed: The reply has at most `max` words.",
        "*verifier: wordcount.max_words(max=25)",
        "*31 words, 6 over the limit of 25",
    ])
    result.stdout.fnmatch_lines([  # the plugin's metric table, after the core's
        "*ifbench summary*",
        "wordcount: reply length",
        "*items*errors*replies*mean words*within limit",
        "*all*4*0*4*14.8*75.0%",
        "*category=description*1*0*1*31.0*0.0%",
        "*category=summary*2*0*2*6.5*100.0%",
        "*note: within limit: share of wordcount.max_words checks passed*",
    ])

    results = json.loads((pytester.path / "ifbench-results.json").read_text(encoding="utf-8"))
    limits = {}
    for record in results["instances"]:
        assert record["benchmark"] == "wordcount"
        assert record["verifier_versions"]["wordcount.max_words"] == "1"
        (check,) = [c for c in record["checks"] if c["verifier"] == "wordcount.max_words"]
        limits[record["instance"]] = (check["passed"], check["verdict"]["evidence"])
        assert check["verdict"]["details"] == {"words": int(check["verdict"]["evidence"].split()[0]),
                                               "max": check["params"]["max"]}
    assert limits == EXPECTED_LIMITS


def test_blocked_benchmark_leaves_its_verifier_unknown(pytester, with_package):
    result = _score(pytester, "-p", "no:wordcount")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.fnmatch_lines([
        "wordcount.yaml: 4 malformed instances:",  # one mistake in every instance: one line, with its whole hint
        "  instances 'haiku-sea', 'describe-coffee', 'one-line-summary' and 1 more: checks[[]0[]].verifier: unknown "
        "verifier 'wordcount.max_words' (no verifier of 'wordcount' is registered: *-p no:wordcount?)",
    ])
    assert not (pytester.path / "ifbench-results.json").exists()


def test_ifbench_command_lists_the_verifier_and_the_generator(wordcount_site, tmp_path):
    proc = _ifbench(wordcount_site, "verifiers", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    start = lines.index("wordcount.max_words  (python, v1)")
    assert lines[start + 1:start + 3] == ["    The reply has at most `max` words.",
                                          "    - max: int, >= 1, required -- the most words the reply may have"]
    assert "ifbench.word_count  (python, v1)" in lines, "the core's verifiers are still there"

    proc = _ifbench(wordcount_site, "generate", "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wordcount" in proc.stdout.split("Benchmarks:")[1]


def test_ifbench_generate_writes_a_suite_that_loads(pytester, with_package):
    out = pytester.path / "generated.yaml"
    args = ("generate", "wordcount", "--out", str(out), "--seed", "3", "--instances", "4", "--max-words", "40")
    proc = _ifbench(with_package, *args, cwd=pytester.path)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert (data["ifbench"], data["benchmark"], len(data["instances"])) == (1, "wordcount", 4)
    for instance in data["instances"]:
        (limit,) = [c for c in instance["checks"] if c["verifier"] == "wordcount.max_words"]
        assert 10 <= limit["params"]["max"] <= 40
        assert str(limit["params"]["max"]) in instance["prompt"]

    assert _ifbench(with_package, *args, cwd=pytester.path).returncode == 0
    assert out.read_text(encoding="utf-8") == text, "the same seed writes the same file"

    bad = _ifbench(with_package, "generate", "wordcount", "--out", "x.yaml", "--instances", "0", cwd=pytester.path)
    assert bad.returncode == 2 and "--instances must be between 1 and 10" in bad.stderr

    result = pytester.runpytest("generated.yaml", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines([f"generated.yaml::wordcount-3-{n}" for n in range(1, 5)] + ["4 tests collected*"])
