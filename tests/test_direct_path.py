"""The direct path for OpenAI-compatible endpoints ends every call exactly as litellm does.

The same stub cases go through both routes: good replies (text, reasoning, tool calls, tokens,
finish reason, cost), malformed replies (the named error, the attempts) and HTTP errors (status,
retryability, the provider's message, the context-window name the judges look for).
"""

from __future__ import annotations

import asyncio

import pytest

from pytest_ifbench._types import GenerationParams
from pytest_ifbench.models.client import ModelCallError, ModelClient, RetryPolicy
from pytest_ifbench.models.openai_compat import LITELLM_ONLY_ENV
from pytest_ifbench.testing import Fault, Reply
from tests._support import closing_sessions as _closing
from tests.test_reliability_faults import MALFORMED, _body

QUICK = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, max_total_wait=5, timeout=5)
CALL = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
GOOD = [
    ("plain", Reply(content="hello there")),
    ("think", Reply(content="<think>plan</think>Hi")),
    ("tool-call", Reply(content=None, tool_calls=[CALL])),
    ("reasoning-field", Reply(raw_body=_body(choices=[{"index": 0, "finish_reason": "length", "message": {
        "role": "assistant", "content": None, "reasoning_content": "hmm"}}]))),
    ("eos-finish", Reply(raw_body=_body(choices=[{"index": 0, "finish_reason": "eos", "message": {
        "role": "assistant", "content": "done"}}]))),
]
ERRORS = [
    ("401", Fault(kind="status", status=401, message="bad key")),
    ("404", Fault(kind="status", status=404, message="no such model")),
    ("context", Fault(kind="status", status=400, message="This model's maximum context length is 8192 tokens")),
    ("500", Fault(kind="status", status=500, message="backend down")),
]


def _outcome(server, monkeypatch, route: str, **call) -> object:
    if route == "litellm":
        monkeypatch.setenv(LITELLM_ONLY_ENV, "1")
    else:
        monkeypatch.delenv(LITELLM_ONLY_ENV, raising=False)
    client = ModelClient(model="openai/stub", api_base=server.url, retry=QUICK)
    assert client.uses_litellm == (route == "litellm")
    try:
        done = asyncio.run(_closing(client.complete([{"role": "user", "content": "hi"}],
                                                    GenerationParams(max_tokens=9), **call)))
    except ModelCallError as exc:
        return ("error", exc.status, exc.attempts)
    return done.to_json() | {"latency": None}


@pytest.mark.parametrize("reply", [r for _, r in GOOD], ids=[c for c, _ in GOOD])
def test_good_replies_are_read_the_same(stub_env, monkeypatch, reply):
    stub_env.add_rule("", reply)
    assert _outcome(stub_env, monkeypatch, "direct") == _outcome(stub_env, monkeypatch, "litellm")


@pytest.mark.parametrize(("reply", "named"), [(r, n) for _, r, n in MALFORMED], ids=[c for c, _, _ in MALFORMED])
def test_malformed_replies_end_the_same(stub_env, monkeypatch, reply, named):
    stub_env.add_rule("", reply)
    messages = []
    for route in ("direct", "litellm"):
        with pytest.raises(ModelCallError) as excinfo:
            _complete_raw(stub_env, monkeypatch, route)
        assert excinfo.value.attempts == QUICK.max_attempts and named in str(excinfo.value), route
        messages.append(str(excinfo.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("fault", [f for _, f in ERRORS], ids=[c for c, _ in ERRORS])
def test_http_errors_end_the_same(stub_env, monkeypatch, fault):
    ends = []
    for route in ("direct", "litellm"):
        stub_env.reset()  # drops what the other route left queued (a 4xx is not retried)
        stub_env.inject_faults(fault, fault)
        with pytest.raises(ModelCallError) as excinfo:
            _complete_raw(stub_env, monkeypatch, route)
        error = excinfo.value
        assert fault.message in str(error), (route, str(error))
        ends.append((error.status, error.attempts, "ContextWindowExceeded" in str(error)))
    assert ends[0] == ends[1]


def _complete_raw(server, monkeypatch, route: str):
    if route == "litellm":
        monkeypatch.setenv(LITELLM_ONLY_ENV, "1")
    else:
        monkeypatch.delenv(LITELLM_ONLY_ENV, raising=False)
    client = ModelClient(model="openai/stub", api_base=server.url, retry=QUICK)
    return asyncio.run(_closing(client.complete([{"role": "user", "content": "hi"}], GenerationParams(max_tokens=9))))


