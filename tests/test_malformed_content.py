"""A reply whose message content is not text (a number, a boolean, an object, a list with a part that
is not text) is a malformed reply on both routes: retried, then one named error -- never a raw
``TypeError`` from reasoning stripping (``error_kind: crashed``).
"""

from __future__ import annotations

import asyncio
import json

import pytest

from pytest_ifbench._types import GenerationParams
from pytest_ifbench.models.client import ModelCallError, ModelClient, RetryPolicy
from pytest_ifbench.models.openai_compat import LITELLM_ONLY_ENV
from pytest_ifbench.models.replies import NOT_TEXT
from pytest_ifbench.testing import Reply
from tests._support import closing_sessions, demo_suite, stub_args, write_suite

QUICK = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, max_total_wait=5, timeout=5)

#: (case, the message's "content"): none of them is text.
NOT_TEXT_CONTENT = [
    ("int", 12345),
    ("zero", 0),
    ("float", 1.5),
    ("true", True),
    ("false", False),
    ("object", {"text": "hello"}),
    ("image-part", [{"type": "image_url", "image_url": {"url": "https://example.com/x.png"}}]),
    ("number-parts", [1, 2]),
    ("text-part-not-a-string", [{"type": "text", "text": 5}]),
    ("text-then-audio", [{"type": "text", "text": "hi"}, {"type": "input_audio", "input_audio": {}}]),
]


def _body(content) -> str:
    return json.dumps({"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "stub",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content}}],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})


def _complete(server, monkeypatch, route: str):
    if route == "litellm":
        monkeypatch.setenv(LITELLM_ONLY_ENV, "1")
    else:
        monkeypatch.delenv(LITELLM_ONLY_ENV, raising=False)
    client = ModelClient(model="openai/stub", api_base=server.url, retry=QUICK)
    assert client.uses_litellm == (route == "litellm")

    return asyncio.run(closing_sessions(client.complete([{"role": "user", "content": "hi"}],
                                                        GenerationParams(max_tokens=9))))


@pytest.mark.parametrize("route", ["direct", "litellm"])
@pytest.mark.parametrize("content", [c for _, c in NOT_TEXT_CONTENT], ids=[c for c, _ in NOT_TEXT_CONTENT])
def test_content_that_is_not_text_is_retried_then_a_named_error(stub_env, monkeypatch, route, content):
    stub_env.add_rule("", Reply(raw_body=_body(content)))
    with pytest.raises(ModelCallError) as excinfo:
        _complete(stub_env, monkeypatch, route)
    assert NOT_TEXT in str(excinfo.value), str(excinfo.value)
    assert excinfo.value.attempts == QUICK.max_attempts and stub_env.calls == QUICK.max_attempts


@pytest.mark.parametrize("route", ["direct", "litellm"])
def test_content_not_text_once_then_a_good_reply(stub_env, monkeypatch, route):
    stub_env.add_rule("", Reply(raw_body=_body(12345)), times=1)
    stub_env.add_rule("", Reply(content="fine now"))
    result = _complete(stub_env, monkeypatch, route)
    assert result.text == "fine now" and result.attempts == 2


def test_a_list_of_text_parts_is_text(stub_env, monkeypatch):
    """OpenAI-style content parts that are all text are the reply (the direct path reads them)."""
    stub_env.add_rule("", Reply(raw_body=_body([{"type": "text", "text": "two "}, {"type": "text", "text": "parts"}])))
    result = _complete(stub_env, monkeypatch, "direct")
    assert result.text == "two parts" and result.attempts == 1


SUITE = demo_suite({"id": "numeric", "category": "replies", "prompt": "reply with a number",
                    "checks": [{"id": "any", "verifier": "ifbench.word_count", "params": {"min": 0}}]},
                   benchmark="replies")


def test_an_instance_whose_reply_is_a_number_is_a_model_error_not_a_crash(pytester, stub_env):
    stub_env.add_rule("", Reply(raw_body=_body(12345)))
    write_suite(pytester.path, "suites/replies.yaml", SUITE)
    result = pytester.runpytest("suites", *stub_args(stub_env, "--ifbench-max-attempts=2"))
    result.assert_outcomes(errors=1)
    assert stub_env.calls == 2
    (record,) = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
    assert record["status"] == "error" and record["error_kind"] == "model", record
    assert "failed after 2 attempt(s)" in record["error"] and f"{NOT_TEXT} (int)" in record["error"]
    assert "TypeError" not in result.stdout.str()
