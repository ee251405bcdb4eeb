"""The model-provider seam: the provider table, ``make_client`` and ``pytest_ifbench_model_providers``."""

from __future__ import annotations

import json
import os
import textwrap
from typing import Any

import pytest

from pytest_ifbench import Provider, make_client
from pytest_ifbench.models.anthropic_sdk import AnthropicSDKTransport
from pytest_ifbench.models.cache import ResponseCache
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.models.openai_compat import LITELLM_ONLY_ENV, DirectTransport
from pytest_ifbench.models.openai_sdk import OpenAISDKTransport
from pytest_ifbench.models.providers import ProviderTable
from tests._support import bulk_suite, write_suite

#: A provider of a third-party package: echoes the prompt, counts the calls in flight.
PROVIDER_CONFTEST = """
    import asyncio
    import pathlib

    from pytest_ifbench import Provider, chat_reply

    class Echo:
        in_flight = 0
        most = 0

        async def acompletion(self, *, model, messages, timeout, **params):
            Echo.in_flight += 1
            Echo.most = max(Echo.most, Echo.in_flight)
            try:
                await asyncio.sleep(0.2)
            finally:
                Echo.in_flight -= 1
            text = f"{model} says: {messages[-1]['content']}"
            return chat_reply({"choices": [{"message": {"role": "assistant", "content": text},
                                            "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": 3, "completion_tokens": 4}})

    def pytest_ifbench_model_providers(providers):
        providers.add(Provider(name="myprov", prefix="myprov/", transport=lambda model, api_base, extra: Echo(),
                               problem=lambda: PROBLEM, concurrency=2, needs_litellm=False))

    def pytest_sessionfinish(session):
        pathlib.Path("most-in-flight.txt").write_text(str(Echo.most))
"""


def _conftest(pytester: pytest.Pytester, problem: str | None) -> None:
    pytester.makeconftest(f"PROBLEM = {problem!r}\n" + textwrap.dedent(PROVIDER_CONFTEST))


def test_a_third_party_provider_serves_its_models_end_to_end(pytester):
    _conftest(pytester, None)
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(6))
    result = pytester.runpytest("suites", "--model=myprov/x", "-p", "no:cacheprovider", "--ifbench-summary=",
                                "--ifbench-no-cache")
    result.assert_outcomes(passed=6)
    doc = json.loads((pytester.path / "ifbench-results.json").read_text())
    assert doc["model"] == "myprov/x"
    texts = {json.dumps(record) for record in doc["instances"]}
    assert all("myprov/x says: question" in text for text in texts)
    # --ifbench-concurrency left at 0 (auto): the provider's default of 2, not the hosted default of 16
    assert (pytester.path / "most-in-flight.txt").read_text() == "2"


def test_a_providers_problem_stops_the_run_with_its_message(pytester):
    _conftest(pytester, "myprov needs MYPROV_TOKEN")
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(2))
    result = pytester.runpytest("suites", "--model=myprov/x", "-p", "no:cacheprovider", "--ifbench-summary=")
    result.stderr.fnmatch_lines(["*pytest-ifbench: model 'myprov/x' is needed but myprov needs MYPROV_TOKEN*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (pytester.path / "most-in-flight.txt").exists() or \
        (pytester.path / "most-in-flight.txt").read_text() == "0"  # nothing was called


@pytest.mark.parametrize("xdist", [pytest.param([], id="one-process"), pytest.param(["-n", "2"], id="n2")])
def test_a_judge_of_a_provider_with_a_problem_stops_the_run_too(pytester, stub_env, xdist):
    """Under -n the controller checks the workers' collection (a worker's usage error was an INTERNALERROR
    with the reason lost)."""
    _conftest(pytester, "myprov is down")
    write_suite(pytester.path, "suites/judged.yaml", """
        ifbench: 1
        benchmark: demo
        instances:
          - id: j1
            prompt: hi
            checks: [{id: polite, verifier: ifbench.judge, params: {criterion: "is polite"}}]
    """)
    result = pytester.runpytest_subprocess("suites", "--model=openai/stub", f"--api-base={stub_env.url}", *xdist,
                                           "--judge-model=myprov/judge", "-p", "no:cacheprovider", "--ifbench-summary=")
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output, output[-3000:]
    assert "pytest-ifbench: model 'myprov/judge' is needed but myprov is down" in output
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert stub_env.calls == 0


# ------------------------------------------------------------------ make_client == the rule it replaced


def _old_rule(model: str, api_base: str | None, **kwargs: Any) -> ModelClient:
    """The client-building rule as it was written out in _state, the ifbench command and a generator."""
    extra: dict[str, Any] = {}
    if api_base and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        extra["api_key"] = "no-key"
    return ModelClient(model=model, api_base=None if model.startswith("local/") else api_base, extra=extra,
                       **kwargs)


def _shape(client: ModelClient) -> tuple[Any, ...]:
    direct = client.direct
    return (client.model, client.api_base, dict(client.extra), client.cache, client.retry, client.strip_think,
            getattr(direct, "url", None), getattr(direct, "_headers", None))


def _sdk_expected(model: str, api_base: str | None, key: str | None, anthropic_key: str | None,
                  litellm_only: bool) -> type | None:
    """The SDK transport that now serves what the old rule sent through litellm (None: as before)."""
    if litellm_only:
        return None
    if model == "openai/gpt-4o-mini" and (api_base or key):  # priced: the direct path never took it
        return OpenAISDKTransport
    if model == "openai/stub" and key and not api_base:  # the real API, with a key
        return OpenAISDKTransport
    if model == "anthropic/claude-x" and anthropic_key:
        return AnthropicSDKTransport
    return None  # o-series names stay with litellm (it rewrites their requests), like local/ and recorded


@pytest.mark.parametrize("model", ["openai/stub", "openai/gpt-4o-mini", "openai/o3-mini-local", "local/smollm2",
                                   "anthropic/claude-x", "recorded-responses"])
@pytest.mark.parametrize("api_base", [None, "http://127.0.0.1:9/v1"])
@pytest.mark.parametrize(("key", "anthropic_key"), [(None, None), ("sk-test", "sk-ant-test")])
@pytest.mark.parametrize("litellm_only", [False, True])
def test_make_client_builds_what_the_old_rule_built(monkeypatch, tmp_path, model, api_base, key, anthropic_key,
                                                     litellm_only):
    """Every client is the old rule's, except that OpenAI's and Anthropic's models now take their SDKs."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (("OPENAI_API_KEY", key), ("ANTHROPIC_API_KEY", anthropic_key)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    if litellm_only:
        monkeypatch.setenv(LITELLM_ONLY_ENV, "1")
    else:
        monkeypatch.delenv(LITELLM_ONLY_ENV, raising=False)
    settings = {"cache": ResponseCache(tmp_path), "retry": RetryPolicy(max_attempts=2), "strip_think": False}
    new, old = make_client(model, api_base=api_base, **settings), _old_rule(model, api_base, **settings)
    sdk = _sdk_expected(model, api_base, key, anthropic_key, litellm_only)
    assert _shape(new) == _shape(old)
    if sdk is None:
        assert type(new.direct) is type(old.direct) and new.uses_litellm == old.uses_litellm
    else:
        assert type(new.direct) is sdk and old.uses_litellm and not new.uses_litellm
    assert new.uses_litellm == ProviderTable().for_model(model, api_base).needs_litellm


def test_the_direct_path_is_chosen_exactly_when_before(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", LITELLM_ONLY_ENV, "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    base = "http://127.0.0.1:9/v1"
    direct = make_client("openai/stub", api_base=base)
    assert isinstance(direct.direct, DirectTransport) and direct.extra == {"api_key": "no-key"}
    assert ProviderTable().for_model("openai/stub", base).name == "openai-compatible"
    # no key known: litellm, as before (it reports the missing key); a priced model on a server: the SDK
    for model, api_base in [("openai/stub", None), ("anthropic/claude-x", base), ("mistral/mistral-large", None)]:
        assert make_client(model, api_base=api_base).direct is None
        assert ProviderTable().for_model(model, api_base).name == "litellm"
    assert ProviderTable().for_model("openai/gpt-4o-mini", base).name == "openai"
    monkeypatch.setenv(LITELLM_ONLY_ENV, "1")
    assert make_client("openai/stub", api_base=base).direct is None


# ------------------------------------------------------------------ the table


def test_the_built_in_table_and_its_defaults():
    table = ProviderTable()
    assert [p.name for p in table] == ["local", "recorded", "openai-compatible", "openai", "anthropic", "litellm"]
    local = table.for_model("local/smollm2", "http://127.0.0.1:9/v1")
    assert (local.name, local.concurrency, local.needs_litellm, local.uses_api_base) == ("local", 1, True, False)
    assert table.for_model("openai/gpt-4o-mini").concurrency == 16
    assert table.for_model("recorded-responses").name == "recorded"


def test_added_providers_are_asked_first_and_names_are_unique():
    table = ProviderTable()
    mine = Provider(name="mine", prefix="openai/")
    table.add(mine)
    assert table.for_model("openai/stub", "http://127.0.0.1:9/v1") is mine
    assert table.for_model("local/smollm2").name == "local"
    with pytest.raises(ValueError, match="model provider 'mine' is already registered"):
        table.add(Provider(name="mine", prefix="x/"))
    with pytest.raises(ValueError, match="'litellm' is already registered"):
        table.add(Provider(name="litellm", prefix="y/"))
    with pytest.raises(TypeError, match="Provider declarations"):
        table.add({"name": "dict"})  # type: ignore[arg-type]


def test_unavailable_asks_each_provider_once_and_names_the_model():
    asked = []

    def problem() -> str:
        asked.append(1)
        return "no token"

    table = ProviderTable([Provider(name="p", prefix="p/", problem=problem)])
    assert table.unavailable(["openai/x", "p/a", "p/b"]) == ("p/a", table.for_model("p/a"), "no token")
    assert asked == [1]
    assert table.unavailable(["openai/x", "anthropic/y"]) is None


def test_make_client_uses_a_providers_transport_and_its_api_base_setting():
    class Sender:
        async def acompletion(self, **kwargs: Any) -> Any:
            raise AssertionError("not called here")

    seen = []

    def transport(model, api_base, extra):
        seen.append((model, api_base, dict(extra)))
        return Sender()

    table = ProviderTable([Provider(name="t", prefix="t/", transport=transport, uses_api_base=False)])
    client = make_client("t/m", api_base="http://127.0.0.1:9/v1", extra={"x": 1}, providers=table)
    assert isinstance(client.direct, Sender) and not client.uses_litellm
    assert client.api_base is None and seen == [("t/m", None, {"x": 1})]


def test_ifbench_verify_asks_the_table_before_judging(tmp_path, capsys, monkeypatch):
    """The command's judges: the embedded model's problem is a case error with the old wording."""
    import pytest_ifbench.models.local as local
    from pytest_ifbench.cli.main import main

    monkeypatch.setattr(local, "local_model_problem", lambda: "llama_cpp is not installed")
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"verifier": "ifbench.judge", "response": "Thanks!",
                                 "params": {"criterion": "The reply is polite."}}) + "\n", encoding="utf-8")
    code = main(["verify", "--in", str(cases), "--judge-model", "local/smollm2"])
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 1
    assert out == [{"passed": None, "error": "line 1: judge 'local/smollm2' cannot run: llama_cpp is not installed"}]


def test_a_providers_revision_keeps_replies_of_another_revision_out_of_the_cache(tmp_path):
    """A change of how a provider decodes (the embedded model's grammars) must not reuse what the old
    decoding answered; a provider without a revision keeps the keys it always had."""
    import asyncio

    from pytest_ifbench import chat_reply
    from pytest_ifbench.models import local
    from pytest_ifbench.models.cache import cache_key
    from pytest_ifbench.models.client import GenerationParams

    answers = iter(["old decoding", "new decoding"])

    class Sender:
        async def acompletion(self, **kwargs: Any) -> Any:
            return chat_reply({"choices": [{"message": {"role": "assistant", "content": next(answers)},
                                            "finish_reason": "stop"}]})

    def client(revision: str | None) -> ModelClient:
        table = ProviderTable([Provider(name="t", prefix="t/", transport=lambda *_: Sender(), needs_litellm=False,
                                        revision=None if revision is None else lambda model: revision)])
        return make_client("t/m", cache=ResponseCache(tmp_path), providers=table, retry=RetryPolicy(max_attempts=1))

    ask = [{"role": "user", "content": "hi"}]
    assert asyncio.run(client("1").complete(ask)).text == "old decoding"
    assert asyncio.run(client("1").complete(ask)).cached
    again = asyncio.run(client("2").complete(ask))
    assert (again.text, again.cached) == ("new decoding", False)
    plain = make_client("t/m", providers=ProviderTable([Provider(name="t", prefix="t/")]))
    params = GenerationParams()
    assert plain.key(ask, params, sample=0, tools=(), response_format=None) == cache_key(
        model="t/m", messages=ask, params=params.litellm_kwargs())
    assert local.PROVIDER.revision is not None and local.PROVIDER.revision("local/smollm2")
