"""OpenAI's and Anthropic's models through their SDKs end every call exactly as litellm does.

The same stub cases go through the SDK route and through litellm (``PYTEST_IFBENCH_LITELLM_ONLY=1``),
against the real local stub server -- OpenAI chat completions for ``openai/gpt-4o-mini`` (a model
litellm prices), Anthropic Messages for ``anthropic/claude-sonnet-4-5``: good replies (text,
reasoning, tool calls, tokens, finish reason, cost), the request each route sends, HTTP errors
(status, retryability, the provider's message), keys in error messages, and the response cache
(an entry written through litellm answers the SDK route). Malformed replies are in
tests/test_reliability_faults.py, parametrized over these routes.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from pytest_ifbench._redact import REDACTED
from pytest_ifbench._types import GenerationParams
from pytest_ifbench.models.anthropic_sdk import AnthropicSDKTransport
from pytest_ifbench.models.cache import ResponseCache
from pytest_ifbench.models.client import ModelCallError, RetryPolicy
from pytest_ifbench.models.openai_compat import LITELLM_ONLY_ENV
from pytest_ifbench.models.openai_sdk import OpenAISDKTransport
from pytest_ifbench.models.providers import make_client
from pytest_ifbench.testing import Fault, Reply
from tests._support import FAKE_KEY
from tests._support import closing_sessions as _closing

QUICK = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, max_total_wait=5, timeout=5)
ANTHROPIC_KEY = "sk-ant-ifbench-test-0123456789abcdef"
OPENAI_MODEL = "openai/gpt-4o-mini"
ANTHROPIC_MODEL = "anthropic/claude-sonnet-4-5"
CALL = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
GOOD = [
    ("plain", Reply(content="hello there")),
    ("think", Reply(content="<think>plan</think>Hi")),
    ("tool-call", Reply(content=None, tool_calls=[CALL])),
    ("text-and-tool-call", Reply(content="let me look", tool_calls=[CALL])),
    ("length", Reply(content="cut sh", finish_reason="length")),
]
ERRORS = [
    ("401", Fault(kind="status", status=401, message="bad key")),
    ("404", Fault(kind="status", status=404, message="no such model")),
    ("500", Fault(kind="status", status=500, message="backend down")),
]
#: A conversation with everything the translation handles: system text, a tool call and its result.
CONVERSATION = [
    {"role": "system", "content": "You answer briefly."},
    {"role": "user", "content": "Look up x."},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": "x is 42"},
    {"role": "user", "content": [{"type": "text", "text": "And now answer."}]},
]
TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Look a thing up.",
                                           "parameters": {"type": "object", "properties": {"q": {"type": "string"}},
                                                          "required": ["q"]}}}]


@pytest.fixture
def keys(monkeypatch, stub_env):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return stub_env


def _base(server, model: str) -> str:
    # the Anthropic SDK and litellm's anthropic/ add /v1 themselves
    return server.url if model.startswith("openai/") else server.url.removesuffix("/v1")


def _client(server, monkeypatch, model: str, route: str, **settings: Any):
    if route == "litellm":
        monkeypatch.setenv(LITELLM_ONLY_ENV, "1")
    else:
        monkeypatch.delenv(LITELLM_ONLY_ENV, raising=False)
    client = make_client(model, api_base=_base(server, model), retry=QUICK, **settings)
    expected = {"litellm": type(None), "sdk": OpenAISDKTransport if model.startswith("openai/")
                else AnthropicSDKTransport}[route]
    assert type(client.direct) is expected
    return client


def _outcome(server, monkeypatch, model: str, route: str, messages=None, **call) -> Any:
    client = _client(server, monkeypatch, model, route)
    try:
        done = asyncio.run(_closing(client.complete(messages or [{"role": "user", "content": "hi"}],
                                                    GenerationParams(max_tokens=9), **call)))
    except ModelCallError as exc:
        return ("error", exc.status, exc.attempts)
    return done.to_json() | {"latency": None}


@pytest.mark.parametrize("model", [OPENAI_MODEL, ANTHROPIC_MODEL])
@pytest.mark.parametrize("reply", [r for _, r in GOOD], ids=[c for c, _ in GOOD])
def test_good_replies_are_read_the_same(keys, monkeypatch, model, reply):
    keys.add_rule("", reply)
    sdk, litellm = (_outcome(keys, monkeypatch, model, route) for route in ("sdk", "litellm"))
    assert litellm["cost"] and sdk["cost"] == pytest.approx(litellm["cost"], rel=1e-9)
    assert sdk | {"cost": None} == litellm | {"cost": None}


@pytest.mark.parametrize("model", [OPENAI_MODEL, ANTHROPIC_MODEL])
def test_the_request_is_the_one_litellm_sends(keys, monkeypatch, model):
    """Conversation, tools and generation parameters reach the provider as litellm sends them."""
    keys.add_rule("", Reply(content="42"))
    bodies = []
    for route in ("sdk", "litellm"):
        client = _client(keys, monkeypatch, model, route)
        params = GenerationParams(max_tokens=50, temperature=0.5, stop=("END",))
        asyncio.run(_closing(client.complete(CONVERSATION, params, tools=TOOLS)))
        bodies.append(_comparable(keys.requests[-1].body))
    assert bodies[0] == bodies[1]


def _comparable(body: dict) -> dict:
    """A request body in one spelling where the API takes two: Anthropic's ``system`` as a string or as
    text blocks, its tools with or without ``"type": "custom"``, OpenAI's null content left out or sent."""
    out = dict(body)
    if isinstance(out.get("system"), list):
        out["system"] = "\n".join(block["text"] for block in out["system"])
    out["messages"] = [{k: v for k, v in m.items() if v is not None} for m in out["messages"]]
    if body.get("system") is not None or "stop_sequences" in body:  # Anthropic
        out["tools"] = [{k: v for k, v in t.items() if (k, v) != ("type", "custom")} for t in out.get("tools", ())]
    return out


@pytest.mark.parametrize("model", [OPENAI_MODEL, ANTHROPIC_MODEL])
@pytest.mark.parametrize("fault", [f for _, f in ERRORS], ids=[c for c, _ in ERRORS])
def test_http_errors_end_the_same(keys, monkeypatch, model, fault):
    ends = []
    for route in ("sdk", "litellm"):
        keys.reset()
        keys.inject_faults(fault, fault)
        client = _client(keys, monkeypatch, model, route)
        with pytest.raises(ModelCallError) as excinfo:
            asyncio.run(_closing(client.complete([{"role": "user", "content": "hi"}], GenerationParams(max_tokens=9))))
        error = excinfo.value
        assert fault.message in str(error), (route, str(error))
        ends.append((error.status, error.attempts))
    assert ends[0] == ends[1]


@pytest.mark.parametrize("model", [OPENAI_MODEL, ANTHROPIC_MODEL])
def test_a_key_echoed_in_an_error_is_redacted(keys, monkeypatch, model):
    key = FAKE_KEY if model.startswith("openai/") else ANTHROPIC_KEY
    keys.inject_faults(Fault(kind="status", status=401, message=f"Incorrect API key provided: {key}."))
    client = _client(keys, monkeypatch, model, "sdk")
    with pytest.raises(ModelCallError) as excinfo:
        asyncio.run(_closing(client.complete([{"role": "user", "content": "hi"}], GenerationParams(max_tokens=9))))
    assert key not in str(excinfo.value) and key[:7] not in str(excinfo.value)
    assert REDACTED in str(excinfo.value) and "AuthenticationError" in str(excinfo.value)
    assert excinfo.value.status == 401 and excinfo.value.attempts == 1


@pytest.mark.parametrize("model", [OPENAI_MODEL, ANTHROPIC_MODEL])
def test_a_rate_limit_is_retried_after_its_retry_after(keys, monkeypatch, model):
    keys.inject_faults(Fault(kind="status", status=429, message="slow down", retry_after=0.2))
    keys.add_rule("", Reply(content="fine now"))
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    client = _client(keys, monkeypatch, model, "sdk")
    client.retry = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, max_total_wait=5, timeout=5,
                               sleep=sleep)
    done = asyncio.run(_closing(client.complete([{"role": "user", "content": "hi"}], GenerationParams(max_tokens=9))))
    assert done.text == "fine now" and done.attempts == 2 and waits and waits[0] >= 0.2


@pytest.mark.parametrize("model", [OPENAI_MODEL, ANTHROPIC_MODEL])
def test_a_response_cached_through_litellm_answers_the_sdk_route(keys, monkeypatch, tmp_path, model):
    """The cache key is the model string and the request, whichever route sends it: a cached run
    made before the SDK routes existed makes no call now."""
    keys.add_rule("", Reply(content="cached answer"))
    messages = [{"role": "user", "content": "hi"}]
    first = _client(keys, monkeypatch, model, "litellm", cache=ResponseCache(tmp_path))
    asyncio.run(_closing(first.complete(messages, GenerationParams(max_tokens=9))))
    again = _client(keys, monkeypatch, model, "sdk", cache=ResponseCache(tmp_path))
    done = asyncio.run(_closing(again.complete(messages, GenerationParams(max_tokens=9))))
    assert done.cached and done.text == "cached answer" and keys.calls == 1


@pytest.mark.parametrize("model", [ANTHROPIC_MODEL, "anthropic/claude-3-5-haiku-20241022"])
def test_a_json_schema_reply_format_answers_as_through_litellm(keys, monkeypatch, model):
    """The judges' ``response_format`` reaches Anthropic as a forced tool with the schema (litellm's way for
    most models; for those flagged for Anthropic's structured-output beta litellm sends ``output_format``
    instead), and the reply's text is the JSON either way."""
    schema = {"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "verdicts", "schema": schema}}
    keys.add_rule("", Reply(content=None, tool_calls=[{"id": "toolu_1", "type": "function", "function": {
        "name": "json_tool_call", "arguments": json.dumps({"verdict": "yes"})}}]))
    client = _client(keys, monkeypatch, model, "sdk")
    done = asyncio.run(_closing(client.complete([{"role": "user", "content": "judge"}],
                                                GenerationParams(max_tokens=50), response_format=fmt)))
    assert (json.loads(done.text), done.tool_calls, done.finish_reason) == ({"verdict": "yes"}, (), "stop")
    body = keys.requests[-1].body
    assert body["tool_choice"] == {"type": "tool", "name": "json_tool_call"}
    assert body["tools"] == [{"name": "json_tool_call", "input_schema": schema}]
    if model.endswith("20241022"):  # litellm sends this model the same forced tool
        litellm = _client(keys, monkeypatch, model, "litellm")
        again = asyncio.run(_closing(litellm.complete([{"role": "user", "content": "judge"}],
                                                      GenerationParams(max_tokens=50), response_format=fmt)))
        assert again.text == done.text
        sent = keys.requests[-1].body
        assert (sent["tool_choice"], sent["tools"]) == (body["tool_choice"], body["tools"])


def test_the_endpoint_a_model_is_called_at(monkeypatch):
    """``--api-base`` first; for OpenAI's models ``OPENAI_BASE_URL``, then ``OPENAI_API_BASE`` (litellm's
    order); never for another provider's models."""
    from pytest_ifbench.models.openai_compat import DirectTransport
    from pytest_ifbench.models.providers import endpoint

    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", LITELLM_ONLY_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    assert endpoint("openai/stub", None) is None
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:7/v1")
    assert endpoint("openai/stub", None) == endpoint("gpt-4o-mini", None) == "http://127.0.0.1:7/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8/v1")
    assert endpoint("openai/stub", None) == "http://127.0.0.1:8/v1"
    assert endpoint("openai/stub", "http://127.0.0.1:9/v1") == "http://127.0.0.1:9/v1"
    for other in ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5", "local/smollm2", "mistral/mistral-large"):
        assert endpoint(other, None) is None
    client = make_client("openai/stub")
    assert isinstance(client.direct, DirectTransport) and client.direct.url == "http://127.0.0.1:8/v1/chat/completions"
    assert client.api_base == "http://127.0.0.1:8/v1" and client.endpoint == "http://127.0.0.1:8/v1"
    priced = make_client("openai/gpt-4o-mini")
    assert isinstance(priced.direct, OpenAISDKTransport) and priced.direct.api_base == "http://127.0.0.1:8/v1"


def test_a_connection_refused_reaches_the_circuit_breaker(keys, monkeypatch):
    """An SDK's connection error keeps the refused connection in its chain: the breaker counts it."""
    from pytest_ifbench.models.breaker import is_connection_failure
    from pytest_ifbench.models.sdk_pool import provider_error

    for model in (OPENAI_MODEL, ANTHROPIC_MODEL):
        monkeypatch.delenv(LITELLM_ONLY_ENV, raising=False)
        client = make_client(model, api_base="http://127.0.0.1:9/v1", retry=QUICK)
        transport = client.direct
        with pytest.raises(Exception) as excinfo:
            asyncio.run(_closing(transport.acompletion(model=model, messages=[{"role": "user", "content": "hi"}],
                                                       timeout=5, max_tokens=5)))
        assert getattr(excinfo.value, "kind", None) == "APIConnectionError", excinfo.value
        assert "ClientConnectorError: Cannot connect to host" in str(excinfo.value)
        assert is_connection_failure(excinfo.value) and provider_error(ValueError("x"), 1) is None


def test_the_price_table_is_kept_compact_in_the_user_cache(tmp_path, monkeypatch):
    """The first process reads litellm's 3 MB file and keeps the fields it reads per model in the
    per-user cache; later processes read that copy (a damaged one is made again); costs are the same."""
    from pytest_ifbench.models import prices

    full = json.loads(prices._price_file().read_text())
    long_priced = next(name for name, entry in full.items()
                       if isinstance(entry, dict) and "input_cost_per_token_above_200k_tokens" in entry)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    usage = prices.Usage(prompt=250_000, completion=1000)
    prices.price_table.cache_clear()
    try:
        cost = prices.cost_of(long_priced, usage)
        kept, = (tmp_path / "pytest-ifbench" / "prices").glob("*.json")
        table = json.loads(kept.read_text())
        assert table == {name: {key: value for key, value in entry.items()
                                if key in prices._READ_FIELDS or prices._LONG_PRICE.fullmatch(key)}
                         for name, entry in full.items() if isinstance(entry, dict)}
        assert "max_tokens" not in table["gpt-4o-mini"] and "input_cost_per_token_batches" not in table["gpt-4o-mini"]
        table_before = json.loads(kept.read_text())
        table[long_priced]["input_cost_per_token_above_200k_tokens"] *= 2  # the copy is what is read
        kept.write_text(json.dumps(table))
        prices.price_table.cache_clear()
        assert prices.cost_of(long_priced, usage) > cost
        kept.write_text("{damaged")
        prices.price_table.cache_clear()
        assert prices.cost_of(long_priced, usage) == cost and prices.provider_of("gpt-4o-mini") == "openai"
        assert json.loads(kept.read_text()) == table_before
    finally:
        prices.price_table.cache_clear()


@pytest.mark.parametrize(("model", "provider", "usage"), [
    ("gpt-4o-mini", "openai", {"prompt": 1000, "completion": 200, "cache_read": 400}),
    ("gpt-4o-mini", "openai", {"prompt": 10, "completion": 5}),
    ("claude-sonnet-4-5", "anthropic", {"prompt": 1500, "completion": 50, "cache_read": 300, "cache_write": 200}),
    ("claude-sonnet-4-5", "anthropic", {"prompt": 250_000, "completion": 1000}),
], ids=["openai-cached-prompt", "openai-plain", "anthropic-cache-read-and-write", "anthropic-long-prompt"])
def test_the_price_table_read_as_data_costs_what_litellm_costs(model, provider, usage):
    """:mod:`.prices` reads litellm's table without importing litellm; litellm (imported here) agrees."""
    from litellm.types.utils import PromptTokensDetailsWrapper
    from litellm.types.utils import Usage as LitellmUsage

    from pytest_ifbench.models.client import import_litellm
    from pytest_ifbench.models.prices import Usage, cost_of

    litellm = import_litellm()
    anthropic = {"cache_creation_input_tokens": usage.get("cache_write", 0),
                 "cache_read_input_tokens": usage.get("cache_read", 0)} if provider == "anthropic" else {}
    theirs = LitellmUsage(prompt_tokens=usage["prompt"], completion_tokens=usage["completion"],
                          total_tokens=usage["prompt"] + usage["completion"],
                          prompt_tokens_details=PromptTokensDetailsWrapper(cached_tokens=usage.get("cache_read", 0)),
                          **anthropic)
    prompt, completion = litellm.cost_per_token(model=model, custom_llm_provider=provider, usage_object=theirs)
    assert cost_of(model, Usage(**usage)) == pytest.approx(prompt + completion, rel=1e-12)
    assert cost_of("openai/not-a-priced-model", Usage(**usage)) is None


@pytest.mark.parametrize("prompt", [200_000, 272_001, 600_000])
def test_long_prompt_prices_are_litellms_whatever_length_the_table_names(prompt):
    """Models whose entries name several long-prompt lengths (``_above_128k``, ``_above_272k``...):
    the longest length passed sets the prices, as litellm computes them."""
    from litellm.types.utils import PromptTokensDetailsWrapper
    from litellm.types.utils import Usage as LitellmUsage

    from pytest_ifbench.models import prices
    from pytest_ifbench.models.client import import_litellm

    full = json.loads(prices._price_file().read_text())
    models = [name for name, entry in full.items() if isinstance(entry, dict) and entry.get("mode") == "chat"
              and entry.get("litellm_provider") == "openai" and "/" not in name
              and any(prices._LONG_PRICE.fullmatch(key) and "_200k_" not in key for key in entry)][:3]
    if not models:
        pytest.skip("this litellm's table names no long-prompt length but 200k for OpenAI's models")
    litellm = import_litellm()
    for model in models:
        theirs = LitellmUsage(prompt_tokens=prompt, completion_tokens=900, total_tokens=prompt + 900,
                              prompt_tokens_details=PromptTokensDetailsWrapper(cached_tokens=5000))
        expected = sum(litellm.cost_per_token(model=model, custom_llm_provider="openai", usage_object=theirs))
        ours = prices.cost_of(model, prices.Usage(prompt=prompt, completion=900, cache_read=5000))
        assert ours == pytest.approx(expected, rel=1e-12), model


def _cache_marks(body: dict) -> tuple[bool, list[tuple[int, int]]]:
    """Whether the system text is marked for caching, and the (turn, block) positions marked."""
    system = body.get("system")
    system_marked = isinstance(system, list) and any("cache_control" in block for block in system)
    return system_marked, [(turn, position) for turn, message in enumerate(body["messages"])
                           if isinstance(message.get("content"), list)
                           for position, block in enumerate(message["content"]) if "cache_control" in block]


@pytest.mark.parametrize("conversation", [CONVERSATION, CONVERSATION[:4], CONVERSATION[1:2]],
                         ids=["ends-with-user-text", "ends-with-tool-result", "no-system"])
def test_a_continuing_conversation_asks_anthropic_to_cache_it_as_litellm_asks(keys, monkeypatch, conversation):
    """``prompt_cache=True`` (an agent's step) marks the system text and the last message's last block
    for Anthropic's prompt cache on both routes, the same blocks; without it no block is marked; the
    marks change neither the rest of the request nor the response cache's key."""
    keys.add_rule("", Reply(content="42"))
    bodies = {}
    for route in ("sdk", "litellm"):
        for cached in (True, False):
            client = _client(keys, monkeypatch, ANTHROPIC_MODEL, route)
            params = GenerationParams(max_tokens=50, stop=("END",))  # stop: _comparable knows the body Anthropic's
            asyncio.run(_closing(client.complete(conversation, params, tools=TOOLS, prompt_cache=cached)))
            bodies[route, cached] = keys.requests[-1].body
    last_turn = len(bodies["sdk", True]["messages"]) - 1
    expected = ("system" in {m["role"] for m in conversation},
                [(last_turn, len(bodies["sdk", True]["messages"][-1]["content"]) - 1)])
    assert _cache_marks(bodies["sdk", True]) == _cache_marks(bodies["litellm", True]) == expected
    assert _cache_marks(bodies["sdk", False]) == _cache_marks(bodies["litellm", False]) == (False, [])
    unmarked = json.loads(json.dumps(bodies["sdk", True]).replace(', "cache_control": {"type": "ephemeral"}', ""))
    assert _comparable(unmarked) == _comparable(bodies["sdk", False]) == _comparable(bodies["litellm", False])


def test_marks_leave_the_cache_key_and_openai_requests_alone(keys, monkeypatch, tmp_path):
    """A reply cached by a marked call answers the unmarked one (one key), and an OpenAI model's
    request carries no marks (OpenAI caches prompts by itself)."""
    keys.add_rule("", Reply(content="42"))
    client = _client(keys, monkeypatch, ANTHROPIC_MODEL, "sdk")
    client.cache = ResponseCache(tmp_path / "cache")
    first = asyncio.run(_closing(client.complete(CONVERSATION, GenerationParams(max_tokens=50), prompt_cache=True)))
    again = asyncio.run(_closing(client.complete(CONVERSATION, GenerationParams(max_tokens=50))))
    assert not first.cached and again.cached and len(keys.requests) == 1
    for route in ("sdk", "litellm"):
        client = _client(keys, monkeypatch, OPENAI_MODEL, route)
        assert client.cache_breakpoints == ()
        asyncio.run(_closing(client.complete(CONVERSATION, GenerationParams(max_tokens=50), prompt_cache=True)))
        assert "cache_control" not in json.dumps(keys.requests[-1].body)
