"""What a run imports: nothing heavy that it does not use.

* A re-score of cached responses redraws no plot whose inputs are unchanged, so it never imports
  matplotlib, and the summary still shows the plot.
* Calls to an OpenAI-compatible endpoint take the direct path and never import litellm;
  ``PYTEST_IFBENCH_LITELLM_ONLY=1`` sends them through litellm, imported in the background from
  ``pytest_configure``.
* A run whose cache already has entries does not import litellm up front: a re-score may make no
  call at all. Nor does a run that collects no suite.
* Every way of naming the endpoint (``--api-base``, ``OPENAI_API_BASE``, ``OPENAI_BASE_URL``) and the
  hosted providers' SDK routes (an OpenAI priced model, Anthropic) reach the stub without litellm.
"""

from __future__ import annotations

import json
from importlib.util import find_spec

import pytest

from pytest_ifbench.models.openai_compat import LITELLM_ONLY_ENV
from pytest_ifbench.reports.summary_writer import PLOTS_MANIFEST
from pytest_ifbench.testing import Reply
from tests._support import HELLO_LOWER, SHOUT, demo_suite, stub_args, write_suite

#: conftest that records which heavy modules the run imported, after everything (summary included).
RECORD_IMPORTS = '''
import json, sys

import pytest


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    with open("imported.json", "w") as out:
        json.dump({name: name in sys.modules for name in ("matplotlib", "litellm", "aiohttp")}, out)
'''


def _run(pytester: pytest.Pytester, stub_env, *extra: str) -> dict[str, bool]:
    # Subprocesses throughout this file: what a run imports is only seen in a fresh interpreter.
    args = [a for a in stub_args(stub_env) if a != "--ifbench-summary="]  # the default: a summary beside the results
    result = pytester.runpytest_subprocess("suites", *args, *extra)
    result.assert_outcomes(passed=1, failed=2)
    return json.loads((pytester.path / "imported.json").read_text())


@pytest.fixture
def suite(pytester, stub_env):
    stub_env.add_rule("lowercase", Reply(content="hello there"))
    stub_env.add_rule("uppercase", Reply(content="Hello There"))
    write_suite(pytester.path, "suites/demo.yaml", demo_suite(HELLO_LOWER, SHOUT))
    pytester.makeconftest(RECORD_IMPORTS)


@pytest.mark.slow
def test_plots_are_drawn_only_when_their_inputs_change(pytester, stub_env, suite):
    if find_spec("matplotlib") is None:  # (importing it here would break numpy in later pytester runs)
        pytest.skip("matplotlib is not installed")
    first = _run(pytester, stub_env, "--ifbench-plots=yes")  # the default summary draws none; asked for here
    assert first["matplotlib"], "the first run draws the plot"
    assert not first["litellm"] and first["aiohttp"], "the stub is an OpenAI-compatible endpoint: direct path"
    plots = pytester.path / "ifbench-summary" / "demo"
    png = plots / "isr_csr_by_category.png"
    assert png.is_file() and (plots / PLOTS_MANIFEST).is_file()
    drawn_at = png.stat().st_mtime_ns

    again = _run(pytester, stub_env)  # a re-score of the cached responses
    assert stub_env.calls == 2, "the re-score is served from the cache"
    assert not again["matplotlib"] and not again["litellm"]
    assert png.stat().st_mtime_ns == drawn_at
    assert "isr_csr_by_category.png" in (pytester.path / "ifbench-summary.md").read_text()

    stub_env.reset()
    stub_env.add_rule("", Reply(content="HELLO THERE"))  # now hello-lower fails and shout passes
    result = pytester.runpytest_subprocess("suites", *stub_args(stub_env), "--ifbench-no-cache",
                                           "--ifbench-summary=ifbench-summary.md")
    result.assert_outcomes(passed=1, failed=2)
    assert json.loads((pytester.path / "imported.json").read_text())["matplotlib"], "new results: redrawn"
    assert png.stat().st_mtime_ns != drawn_at


@pytest.mark.slow
def test_litellm_is_imported_in_the_background_unless_the_cache_may_answer(pytester, stub_env, suite,
                                                                           monkeypatch):
    monkeypatch.setenv(LITELLM_ONLY_ENV, "1")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    pytester.runpytest_subprocess("test_plain.py", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert not json.loads((pytester.path / "imported.json").read_text())["litellm"], "no suite, no import"
    assert _run(pytester, stub_env, "--ifbench-summary=")["litellm"]
    assert not _run(pytester, stub_env, "--ifbench-summary=")["litellm"], "every response is cached"
    assert stub_env.calls == 2


#: Every way of naming the endpoint, and the hosted models' SDK routes: (case, model, --api-base or None,
#: environment). The stub's root serves both formats; the Anthropic SDK adds the /v1 itself.
ENDPOINTS = [
    ("api-base-flag", "openai/stub", "{url}", {}),
    ("OPENAI_API_BASE", "openai/stub", None, {"OPENAI_API_BASE": "{url}"}),
    ("OPENAI_BASE_URL", "openai/stub", None, {"OPENAI_BASE_URL": "{url}"}),
    ("openai-sdk-priced-model", "openai/gpt-4o-mini", "{url}", {}),
    ("openai-sdk-by-env", "openai/gpt-4o-mini", None, {"OPENAI_BASE_URL": "{url}"}),
    ("anthropic-sdk", "anthropic/claude-sonnet-4-5", "{root}", {"ANTHROPIC_API_KEY": "sk-ant-ifbench-test-0123"}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("model", "api_base", "env"), [e[1:] for e in ENDPOINTS], ids=[e[0] for e in ENDPOINTS])
def test_every_way_of_naming_the_endpoint_skips_litellm(pytester, stub_env, suite, monkeypatch, model, api_base,
                                                         env):
    """``--api-base``, ``OPENAI_API_BASE``/``OPENAI_BASE_URL`` and the hosted providers' SDK routes reach the stub
    without importing litellm -- neither up front nor for a call -- and a priced model's cost is recorded."""
    for name in ("OPENAI_API_BASE", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_API_BASE", LITELLM_ONLY_ENV):
        monkeypatch.delenv(name, raising=False)
    where = {"url": stub_env.url, "root": stub_env.url.removesuffix("/v1")}
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(**where))
    args = [a for a in stub_args(stub_env) if not a.startswith(("--model=", "--api-base="))]
    args += [f"--model={model}"] + ([f"--api-base={api_base.format(**where)}"] if api_base else [])
    result = pytester.runpytest_subprocess("suites", *args, "--ifbench-results=results.json")
    result.assert_outcomes(passed=1, failed=2)
    assert stub_env.calls == 2, "both instances were answered by the stub"
    imported = json.loads((pytester.path / "imported.json").read_text())
    assert not imported["litellm"] and imported["aiohttp"]
    records = json.loads((pytester.path / "results.json").read_text())["instances"]
    costs = [r.get("cost") for r in records]
    if model == "openai/stub":
        assert not any(costs), "litellm has no price for the stub's model"
    else:
        assert all(c and c > 0 for c in costs), costs
