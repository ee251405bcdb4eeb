"""Three classes of provider and process failure, each as a corpus of cases.

1. A provider that echoes the API key in its error messages: the key, in every form it is echoed
   in, reaches neither the terminal, JUnit XML, Allure results, the results file, the log file nor
   the summary file.
2. Malformed provider replies: each is a retried, named provider error, and an error of the
   instance once the retries are spent, through every route that reads replies without litellm (the
   direct path, the ``openai`` and ``anthropic`` SDKs); a tool-call reply with null content stays valid.
3. A killed xdist worker: its instance still gets a record (``error_kind: crashed``), counted
   as an error in the summary.
"""

from __future__ import annotations

import asyncio
import json
import re
from urllib.parse import quote

import pytest

from pytest_ifbench._redact import REDACTED, redact
from pytest_ifbench._types import GenerationParams
from pytest_ifbench.models.anthropic_sdk import AnthropicSDKTransport
from pytest_ifbench.models.client import ModelCallError, ModelClient, RetryPolicy
from pytest_ifbench.models.openai_compat import LITELLM_ONLY_ENV, DirectTransport
from pytest_ifbench.models.openai_sdk import OpenAISDKTransport
from pytest_ifbench.models.providers import make_client
from pytest_ifbench.testing import Fault, Reply
from tests._support import FAKE_KEY, bulk_suite, closing_sessions, demo_suite, stub_args, write_suite

FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, max_total_wait=5, timeout=5)


def _complete(server, text: str = "hello"):
    client = ModelClient(model="openai/stub", api_base=server.url, retry=FAST)
    return asyncio.run(closing_sessions(client.complete([{"role": "user", "content": text}],
                                                        GenerationParams(max_tokens=20))))


# --------------------------------------------------------------------------
# 1. keys in provider error messages
# --------------------------------------------------------------------------

def _split(key: str, every: int, sep: str) -> str:
    return sep.join(key[i:i + every] for i in range(0, len(key), every))


#: A second secret, with characters that JSON and URLs escape; the runs below set it.
OTHER_KEY = "tok+Zx/0123456789abcdefQ=="
OTHER_ENV = "IFBENCH_TEST_API_TOKEN"

#: (case, HTTP status, message): the key as is, reversed, split by whitespace, quoted, escaped.
KEY_ECHOES = [
    ("401-as-is", 401, f"Incorrect API key provided: {FAKE_KEY}. You can find your key at ..."),
    ("400-single-quoted", 400, f"invalid api_key '{FAKE_KEY}' for this organisation"),
    ("500-double-quoted-json", 500, json.dumps({"detail": "upstream rejected", "api_key": FAKE_KEY})),
    ("500-reversed", 500, f"checksum mismatch for key {FAKE_KEY[::-1]}"),
    ("401-split-by-spaces", 401, f"key {_split(FAKE_KEY, 4, ' ')} is revoked"),
    ("500-split-by-newlines", 500, f"key={_split(FAKE_KEY, 7, chr(10))} rejected"),  # first line: a part
    ("400-url-quoted", 400, f"GET /v1/check?key={quote(OTHER_KEY, safe='')} failed"),
    ("500-json-quoted", 500, f"token {json.dumps(OTHER_KEY)} expired"),
    ("403-reversed-split", 403, f"denied: {_split(OTHER_KEY[::-1], 5, ' ')}"),
]


def _leaks(text: str, key: str = FAKE_KEY) -> list[str]:
    """The forms of ``key`` found in ``text``: as is, reversed, broken up by whitespace, URL-quoted,
    or its first 7 characters (a key cut in two)."""
    squeezed = re.sub(r"\s+", "", text)
    forms = (("as is", key), ("reversed", key[::-1]), ("url-quoted", quote(key, safe="")))
    found = [name for name, form in forms if form in text]
    found += [f"{name}, split" for name, form in forms if form in squeezed and form not in text]
    return found + (["a part"] if key[:7] in text else [])


@pytest.mark.parametrize(("status", "message"), [(s, m) for _, s, m in KEY_ECHOES],
                         ids=[c for c, _, _ in KEY_ECHOES])
def test_client_error_carries_no_key(stub_env, monkeypatch, status, message):
    monkeypatch.setenv(OTHER_ENV, OTHER_KEY)
    stub_env.inject_faults(*[Fault(kind="status", status=status, message=message)] * FAST.max_attempts)
    with pytest.raises(ModelCallError) as excinfo:
        _complete(stub_env)
    text = str(excinfo.value)
    assert not _leaks(text) and not _leaks(text, OTHER_KEY), text
    assert REDACTED in text and excinfo.value.status == status


def test_key_cut_by_the_500_character_limit_is_still_redacted(stub_env):
    message = "x" * 480 + FAKE_KEY  # the one-line message is cut at 500 characters, mid-key
    stub_env.inject_faults(Fault(kind="status", status=400, message=message))
    with pytest.raises(ModelCallError) as excinfo:
        _complete(stub_env)
    assert FAKE_KEY[:12] not in str(excinfo.value)


@pytest.mark.parametrize(("name", "value", "echo"), [
    ("OPENAI_API_KEY", "sk-proj-Ab+cd/Ef==0123456789", "key={}"),
    ("MY_SERVICE_TOKEN", "tok_0123456789ABCDEFxyz", '"{}"'),
    ("INTERNAL_API_CREDENTIAL_VALUE", "Zk3jP9qLmN2xW8vB4tR7", "auth {} denied"),
    ("HF_SECRET", "hf_abcdefghij0123456789", "{}"),
], ids=["api-key", "token", "api-in-name", "secret"])
@pytest.mark.parametrize("form", ["as-is", "reversed", "spaces", "newlines", "json", "url"])
def test_redact_covers_every_form_of_every_secret(monkeypatch, name, value, echo, form):
    monkeypatch.setenv(name, value)
    shown = {"as-is": value, "reversed": value[::-1], "spaces": _split(value, 3, " "),
             "newlines": _split(value, 5, "\n"), "json": json.dumps(value)[1:-1],
             "url": quote(value, safe="")}[form]
    out = redact("before " + echo.format(shown) + " after")
    assert REDACTED in out and not _leaks(out, value) and quote(value, safe="") not in out, out
    assert out.startswith("before ") and out.endswith(" after")


@pytest.mark.parametrize(("name", "value"), [
    ("OPENAI_API_BASE", "http://127.0.0.1:8080/v1"),
    ("AZURE_API_VERSION", "2024-02-01-preview"),
    ("API_TIMEOUT", "600"),
    ("IFBENCH_API_DOCS", "/usr/share/doc/ifbench-api-0123456789ab"),
    ("KEYBOARD_LAYOUT", "dvorak-programmer"),
])
def test_redact_keeps_ordinary_values(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    text = f"calling {value} with the quick brown fox, version 2024-02-01-preview, 600 s"
    assert redact(text) == text


KEY_SUITE = demo_suite(*[{"id": f"echo-{case}", "category": "keys", "prompt": f"case {case}",
                          "checks": [{"id": "any", "verifier": "ifbench.word_count", "params": {"min": 1}}]}
                         for case, _, _ in KEY_ECHOES], benchmark="keys")


def test_no_key_leaves_the_process_in_any_output(pytester, stub_env, monkeypatch):
    """Every echo fault errors its instance; grep the terminal and every file written for the keys."""
    monkeypatch.setenv(OTHER_ENV, OTHER_KEY)
    for case, status, message in KEY_ECHOES:
        stub_env.inject_faults(*[Fault(kind="status", status=status, message=message)] * 2, match=f"case {case}$")
    write_suite(pytester.path, "suites/keys.yaml", KEY_SUITE)
    # A subprocess: "any output" includes what reaches the process's file descriptors, not only sys.stdout.
    result = pytester.runpytest_subprocess(
        "suites", *stub_args(stub_env, "--ifbench-max-attempts=2", "--ifbench-summary=out/summary.md"),
        "--junitxml=out/junit.xml", "--alluredir=out/allure", "--ifbench-results=out/results.json",
        "--log-file=out/log.txt", "--log-file-level=DEBUG", "--log-level=DEBUG", "-o", "junit_logging=all",
        "-rA", "-vv")
    result.assert_outcomes(errors=len(KEY_ECHOES))
    result.stdout.fnmatch_lines([f"*{REDACTED}*"])
    terminal = result.stdout.str() + result.stderr.str()
    assert not _leaks(terminal) and not _leaks(terminal, OTHER_KEY), terminal
    written = [p for p in (pytester.path / "out").rglob("*") if p.is_file()]
    assert {"junit.xml", "results.json", "summary.md", "log.txt"} <= {p.name for p in written}
    assert any(p.parent.name == "allure" and p.name.endswith("-result.json") for p in written)
    for path in written:
        text = path.read_text(encoding="utf-8", errors="replace")
        leaks = _leaks(text) + _leaks(text, OTHER_KEY)
        assert not leaks, f"{path.name}: {leaks}"
    errors = [r["error"] for r in json.loads((pytester.path / "out/results.json").read_text())["instances"]]
    assert len(errors) == len(KEY_ECHOES) and all(REDACTED in e for e in errors)


# --------------------------------------------------------------------------
# 2. malformed provider replies
# --------------------------------------------------------------------------

_USAGE = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
_MESSAGE = {"role": "assistant", "content": "hi there"}


def _body(**fields) -> str:
    base = {"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "message": _MESSAGE, "finish_reason": "stop"}], "usage": _USAGE}
    return json.dumps({k: v for k, v in (base | fields).items() if v is not ...})


#: (case, the reply, the named error it must end in).
MALFORMED = [
    ("empty-choices", Reply(raw_body=_body(choices=[])), "the provider returned no choices"),
    ("null-choices", Reply(raw_body=_body(choices=None)), "the provider returned no choices"),
    ("no-choices-key", Reply(raw_body=_body(choices=...)), "the provider returned no choices"),
    ("null-message", Reply(raw_body=_body(choices=[{"index": 0, "message": None, "finish_reason": "stop"}])),
     "the provider returned a choice without a message"),
    ("null-content", Reply(content=None), "the provider returned null content and no tool calls"),
    ("not-json", Reply(raw_body='{"choices": ['), "the provider returned a body that is not JSON"),
    ("html", Reply(raw_body="<html><body>502 Bad Gateway</body></html>"),
     "the provider returned a body that is not JSON"),
    ("empty-body", Reply(raw_body=""), "the provider returned a body that is not JSON"),
]


def _anthropic_body(**fields) -> str:
    base = {"id": "msg_x", "type": "message", "role": "assistant", "model": "stub",
            "content": [{"type": "text", "text": "hi there"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 1}}
    return json.dumps({k: v for k, v in (base | fields).items() if v is not ...})


#: The same corpus for the Anthropic Messages route: a reply without usable content ends in the same names.
ANTHROPIC_MALFORMED = [
    ("empty-content", Reply(raw_body=_anthropic_body(content=[])),
     "the provider returned null content and no tool calls"),
    ("null-content", Reply(raw_body=_anthropic_body(content=None)), "the provider returned no choices"),
    ("no-content-key", Reply(raw_body=_anthropic_body(content=...)), "the provider returned no choices"),
    ("scripted-null-content", Reply(content=None), "the provider returned null content and no tool calls"),
    ("number-text", Reply(raw_body=_anthropic_body(content=[{"type": "text", "text": 12345}])),
     "the provider returned content that is not text"),
    ("not-json", Reply(raw_body='{"type": "message", "content": ['), "the provider returned a body that is not JSON"),
    ("html", Reply(raw_body="<html><body>502 Bad Gateway</body></html>"),
     "the provider returned a body that is not JSON"),
    ("empty-body", Reply(raw_body=""), "the provider returned a body that is not JSON"),
]
#: (route, case, reply, named error): the OpenAI corpus through the direct path and the ``openai`` SDK,
#: the Anthropic corpus through the ``anthropic`` SDK.
ROUTED_MALFORMED = [(route, case, reply, named) for route in ("direct", "openai-sdk")
                    for case, reply, named in MALFORMED]
ROUTED_MALFORMED += [("anthropic-sdk", case, reply, named) for case, reply, named in ANTHROPIC_MALFORMED]
_ROUTED_IDS = [f"{route}-{case}" for route, case, _, _ in ROUTED_MALFORMED]


def _complete_on(route: str, server, monkeypatch: pytest.MonkeyPatch):
    """One call through ``route`` (the client type asserted, so a route cannot silently fall back)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-ifbench-test-0123456789abcdef")
    monkeypatch.delenv(LITELLM_ONLY_ENV, raising=False)
    if route == "direct":
        client, kind = ModelClient(model="openai/stub", api_base=server.url, retry=FAST), DirectTransport
    elif route == "openai-sdk":
        client, kind = make_client("openai/gpt-4o-mini", api_base=server.url, retry=FAST), OpenAISDKTransport
    else:
        client = make_client("anthropic/claude-sonnet-4-5", api_base=server.url.removesuffix("/v1"), retry=FAST)
        kind = AnthropicSDKTransport
    assert type(client.direct) is kind

    return asyncio.run(closing_sessions(client.complete([{"role": "user", "content": "hello"}],
                                                        GenerationParams(max_tokens=20))))


@pytest.mark.parametrize(("route", "case", "reply", "named"), ROUTED_MALFORMED, ids=_ROUTED_IDS)
def test_malformed_reply_is_retried_then_a_named_error(stub_env, monkeypatch, route, case, reply, named):
    stub_env.add_rule("", reply)
    with pytest.raises(ModelCallError) as excinfo:
        _complete_on(route, stub_env, monkeypatch)
    assert named in str(excinfo.value)
    assert excinfo.value.attempts == FAST.max_attempts and stub_env.calls == FAST.max_attempts
    assert "IndexError" not in str(excinfo.value) and "Traceback" not in str(excinfo.value)


@pytest.mark.parametrize(("route", "case", "reply", "named"), ROUTED_MALFORMED, ids=_ROUTED_IDS)
def test_malformed_reply_once_then_a_good_one(stub_env, monkeypatch, route, case, reply, named):
    stub_env.add_rule("", reply, times=1)
    stub_env.add_rule("", Reply(content="fine now"))
    result = _complete_on(route, stub_env, monkeypatch)
    assert result.text == "fine now" and result.attempts == 2


@pytest.mark.parametrize("usage", [..., None], ids=["no-usage", "null-usage"])
def test_a_reply_without_token_usage_stays_valid(stub_env, usage):
    """Some self-hosted servers never report usage: the answer counts, with 0 tokens recorded."""
    stub_env.add_rule("", Reply(raw_body=_body(usage=usage)))
    result = _complete(stub_env)
    assert result.text == "hi there" and result.attempts == 1 and result.prompt_tokens == 0


def test_tool_call_with_null_content_stays_valid(stub_env):
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
    stub_env.add_rule("", Reply(content=None, tool_calls=[call]))
    result = _complete(stub_env)
    assert result.tool_calls == (call,) and result.text == "" and result.attempts == 1


def test_reasoning_with_null_content_stays_valid(stub_env):
    """A model that thought until max_tokens sends reasoning and null content: an (empty) answer."""
    body = _body(choices=[{"index": 0, "finish_reason": "length",
                           "message": {"role": "assistant", "content": None, "reasoning_content": "hmm, let me"}}])
    stub_env.add_rule("", Reply(raw_body=body))
    result = _complete(stub_env)
    assert result.text == "" and result.reasoning == "hmm, let me" and result.attempts == 1


MALFORMED_SUITE = demo_suite(*[{"id": f"bad-{case}", "category": "replies", "prompt": f"case {case}",
                                "checks": [{"id": "any", "verifier": "ifbench.word_count", "params": {"min": 0}}]}
                               for case, _, _ in MALFORMED], benchmark="replies")


def test_malformed_replies_error_their_instances(pytester, stub_env):
    for case, reply, _ in MALFORMED:
        stub_env.add_rule(f"case {case}$", reply)
    write_suite(pytester.path, "suites/replies.yaml", MALFORMED_SUITE)
    result = pytester.runpytest("suites", *stub_args(stub_env, "--ifbench-max-attempts=2"))
    result.assert_outcomes(errors=len(MALFORMED))
    assert stub_env.calls == 2 * len(MALFORMED)
    records = {r["instance"]: r for r in json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]}
    for case, _, named in MALFORMED:
        record = records[f"bad-{case}"]
        assert record["status"] == "error" and record["error_kind"] == "model", case
        assert "failed after 2 attempt(s)" in record["error"] and named in record["error"], record["error"]
    result.stdout.fnmatch_lines(["*ERROR*bad-empty-choices*", "*the provider returned no choices*"])
    assert "IndexError" not in result.stdout.str()


# --------------------------------------------------------------------------
# 3. a killed xdist worker
# --------------------------------------------------------------------------

#: conftest.py of the run: the worker dies while it runs the doomed instance.
KILLER = """
import os
import signal

def pytest_ifbench_instance_verified(item, record):
    if item.spec.id == "{doomed}":
        {kill}
"""


@pytest.mark.parametrize("kill", ["os._exit(1)", "os.kill(os.getpid(), signal.SIGKILL)"], ids=["exit", "sigkill"])
def test_killed_worker_instance_gets_a_crashed_record(pytester, stub_env, kill):
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(12))
    pytester.makeconftest(KILLER.format(doomed="q005", kill=kill))
    result = pytester.runpytest("suites", *stub_args(stub_env, "--ifbench-summary=summary.md"),
                                "-n", "2")
    result.assert_outcomes(passed=11, failed=1)
    doc = json.loads((pytester.path / "ifbench-results.json").read_text())
    by_id = {r["instance"]: r for r in doc["instances"]}
    assert sorted(by_id) == [f"q{i:03d}" for i in range(12)], "every selected instance has a record"
    crashed = by_id["q005"]
    assert crashed["status"] == "error" and crashed["error_kind"] == "crashed"
    assert "crashed while running" in crashed["error"] and crashed["benchmark"] == "bulk"
    result.stdout.fnmatch_lines(["*ifbench summary*", "*all*12*1*",
                                 "*1 instance(s) errored*suites/bulk.yaml::q005*crashed*"])
    summary = (pytester.path / "summary.md").read_text()
    assert "12 instances (1 errored)" in summary and "| crashed |" in summary


def test_failure_without_a_record_gets_one_without_xdist(pytester, stub_env):
    """The same guarantee in one process: the plugin failing before the record is made."""
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(3))
    pytester.makeconftest("""
        def pytest_ifbench_instance_verified(item, record):
            if item.spec.id == "q001":
                raise RuntimeError("a plugin blew up")
    """)
    result = pytester.runpytest("suites", *stub_args(stub_env))
    result.assert_outcomes(passed=2, failed=1)
    by_id = {r["instance"]: r for r in json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]}
    assert sorted(by_id) == ["q000", "q001", "q002"]
    assert by_id["q001"]["error_kind"] == "crashed" and "a plugin blew up" in by_id["q001"]["error"]


def test_plain_python_test_failures_get_no_record(pytester, stub_env):
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(1))
    pytester.makepyfile(test_plain="def test_x():\n    assert False\n")
    result = pytester.runpytest("suites", "test_plain.py", *stub_args(stub_env))
    result.assert_outcomes(passed=1, failed=1)
    doc = json.loads((pytester.path / "ifbench-results.json").read_text())
    assert [r["instance"] for r in doc["instances"]] == ["q000"]
