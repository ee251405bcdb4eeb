"""A hosted model without its API key stops the run at start-up, with one line naming the model and the
variable to set; a call that fails for want of a key (or of a provider) is not retried.

Fake keys only: every run here is offline or against the local stub server.
"""

from __future__ import annotations

import asyncio

import pytest

from pytest_ifbench._types import GenerationParams
from pytest_ifbench.models.client import ModelCallError, RetryPolicy
from pytest_ifbench.models.openai_compat import LITELLM_ONLY_ENV
from pytest_ifbench.models.providers import make_client
from tests._support import bulk_suite, write_suite

#: Every variable that names a key or an endpoint for the models used here.
_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_FEDERATION_RULE_ID", "ANTHROPIC_API_BASE", "OPENAI_IDENTITY_PROVIDER_ID", "MISTRAL_API_KEY",
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", LITELLM_ONLY_ENV)
#: A run that, were it not stopped, would fail fast (one attempt, offline).
_QUICK = ("-p", "no:cacheprovider", "--ifbench-summary=", "--ifbench-no-cache", "--ifbench-max-attempts=1",
          "--ifbench-max-wait=1", "--ifbench-timeout=5")
OPENAI_LINE = ("pytest-ifbench: model {model!r} needs an API key: set OPENAI_API_KEY in the environment "
               "(or name a server of your own with --api-base)")


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)


def _stopped(result: pytest.RunResult, line: str) -> None:
    said = result.stdout.str() + "\n" + result.stderr.str()
    assert f"ERROR: {line}" in said.splitlines(), said[-3000:]
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in said


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "gpt-4o-mini"])
def test_an_openai_model_without_its_key_stops_the_run(pytester, model):
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(3))
    result = pytester.runpytest("suites", f"--model={model}", *_QUICK)
    _stopped(result, OPENAI_LINE.format(model=model))
    result.assert_outcomes()  # no instance ran


def test_under_xdist_the_controller_stops_the_run(pytester):
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(3))
    result = pytester.runpytest_subprocess("suites", "--model=openai/gpt-4o-mini", "-n", "2", *_QUICK)
    _stopped(result, OPENAI_LINE.format(model="openai/gpt-4o-mini"))


def test_an_anthropic_model_without_its_key_stops_the_run(pytester):
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(3))
    result = pytester.runpytest("suites", "--model=anthropic/claude-sonnet-4-5", *_QUICK)
    _stopped(result, "pytest-ifbench: model 'anthropic/claude-sonnet-4-5' needs an API key: "
                     "set ANTHROPIC_API_KEY in the environment")


def test_a_judge_without_its_key_is_named_and_the_model_on_its_own_server_is_not(pytester, stub_server,
                                                                                 monkeypatch):
    """``OPENAI_BASE_URL`` points the model under test at a server of one's own (no key needed there); the
    judge is Anthropic's, with no key and no endpoint: the run stops before the model is called."""
    monkeypatch.setenv("OPENAI_BASE_URL", stub_server.url)
    write_suite(pytester.path, "suites/judged.yaml", """
        ifbench: 1
        benchmark: demo
        instances:
          - id: j1
            prompt: hi
            checks: [{id: polite, verifier: ifbench.judge, params: {criterion: "is polite"}}]
    """)
    result = pytester.runpytest("suites", "--model=openai/stub", "--judge-model=anthropic/claude-sonnet-4-5",
                                *_QUICK)
    _stopped(result, "pytest-ifbench: judge model 'anthropic/claude-sonnet-4-5' needs an API key: "
                     "set ANTHROPIC_API_KEY in the environment")
    assert stub_server.calls == 0


def test_another_litellm_provider_is_asked_of_litellm(pytester):
    """A provider whose variable is not known here: litellm names it (this process has litellm imported,
    as a run that calls the model through it has)."""
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(2))
    result = pytester.runpytest("suites", "--model=mistral/mistral-large-latest", *_QUICK)
    _stopped(result, "pytest-ifbench: model 'mistral/mistral-large-latest' needs an API key: "
                     "set MISTRAL_API_KEY in the environment")


def test_litellm_is_asked_only_when_the_run_imports_it_and_only_about_api_keys(monkeypatch):
    from pytest_ifbench.models import credentials
    from pytest_ifbench.models.providers import ProviderTable

    table = ProviderTable()
    assert credentials.missing_key("mistral/mistral-large-latest", None, table) == ("MISTRAL_API_KEY",)
    # AWS credentials may come from a profile or a role litellm does not see in the environment
    assert credentials.missing_key("bedrock/anthropic.claude-3-haiku-20240307-v1:0", None, table) == ()
    assert credentials.missing_key("mistral/mistral-large-latest", "http://127.0.0.1:9/v1", table) == ()
    monkeypatch.setattr(credentials, "litellm_coming", lambda: False)  # a cached re-score, an xdist controller
    assert credentials.missing_key("mistral/mistral-large-latest", None, table) == ()
    assert credentials.missing_key("openai/gpt-4o-mini", None, table) == ("OPENAI_API_KEY",)  # known: no litellm


def test_a_missing_key_reported_by_litellm_is_not_retried():
    """litellm words OpenAI's missing key as an HTTP 500: one attempt, not six."""
    waits: list[float] = []

    async def no_sleep(delay: float) -> None:
        waits.append(delay)

    client = make_client("openai/gpt-4o-mini",
                         retry=RetryPolicy(max_attempts=6, base_delay=0.01, max_total_wait=5, timeout=5,
                                           sleep=no_sleep))
    assert client.uses_litellm
    with pytest.raises(ModelCallError) as raised:
        asyncio.run(client.complete([{"role": "user", "content": "hi"}], GenerationParams()))
    assert raised.value.attempts == 1 and waits == [], str(raised.value)
    assert "OPENAI_API_KEY" in str(raised.value)
    assert raised.value.status is None and "HTTP" not in str(raised.value), "no endpoint answered: no status"

