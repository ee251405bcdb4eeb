"""Response cache keys and files, secret redaction, and judge verdict parsing."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_ifbench._redact import REDACTED, redact
from pytest_ifbench._types import GenerationParams
from pytest_ifbench.judges.checklist import parse_verdicts
from pytest_ifbench.models.cache import ResponseCache, cache_key
from pytest_ifbench.models.client import ModelClient, RetryPolicy

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi."}]
PARAMS = {"temperature": 0.0, "max_tokens": 100, "top_p": 0.9, "seed": 1, "stop": ["END"]}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
FORMAT = {"type": "json_object"}


def key(**overrides: Any) -> str:
    args: dict[str, Any] = {"model": "openai/gpt-x", "messages": MESSAGES, "params": PARAMS, "sample": 0,
                            "tools": TOOLS, "response_format": FORMAT}
    args.update(overrides)
    return cache_key(**args)


# --------------------------------------------------------------------------
# cache_key
# --------------------------------------------------------------------------


def test_key_is_a_stable_sha256():
    assert key() == key()
    assert len(key()) == 64 and int(key(), 16) >= 0


@pytest.mark.parametrize(
    "change",
    [
        {"model": "openai/gpt-y"},
        {"messages": MESSAGES[:1]},
        {"messages": [MESSAGES[0], {"role": "user", "content": "Say bye."}]},
        {"messages": [MESSAGES[0], {"role": "assistant", "content": "Say hi."}]},
        {"messages": [*MESSAGES, {"role": "assistant", "content": "hi"}]},
        {"messages": list(reversed(MESSAGES))},
        {"sample": 1},
        {"tools": []},
        {"tools": [{"type": "function", "function": {"name": "g", "parameters": {"type": "object"}}}]},
        {"response_format": None},
        {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}},
    ],
    ids=["model", "fewer-messages", "message-content", "message-role", "more-messages", "message-order", "sample",
         "no-tools", "other-tool", "no-format", "other-format"],
)
def test_key_changes_with_what_changes_the_output(change):
    assert key(**change) != key()


@pytest.mark.parametrize(
    ("name", "value"),
    [("temperature", 0.7), ("max_tokens", 101), ("top_p", 1.0), ("seed", 2), ("stop", ["STOP"]),
     ("frequency_penalty", 0.5)],
)
def test_key_changes_with_each_generation_param(name, value):
    assert key(params=PARAMS | {name: value}) != key()


@pytest.mark.parametrize("name", ["temperature", "max_tokens", "top_p", "seed", "stop"])
def test_key_changes_when_a_generation_param_is_dropped(name):
    assert key(params={k: v for k, v in PARAMS.items() if k != name}) != key()


def test_key_ignores_ordering_of_mappings():
    reordered_params = dict(reversed(list(PARAMS.items())))
    reordered_messages = [{"content": m["content"], "role": m["role"]} for m in MESSAGES]
    reordered_tools = [{"function": {"parameters": {"type": "object"}, "name": "f"}, "type": "function"}]
    assert key(params=reordered_params, messages=reordered_messages, tools=reordered_tools) == key()


def test_key_accepts_tuples_and_lists_alike():
    assert key(messages=tuple(MESSAGES), tools=tuple(TOOLS)) == key()


def _client(**overrides: Any) -> ModelClient:
    return ModelClient(**({"model": "openai/gpt-x"} | overrides))


DEFAULT_PARAMS = GenerationParams()


def _client_key(client: ModelClient, params: GenerationParams = DEFAULT_PARAMS, **kw: Any) -> str:
    args: dict[str, Any] = {"sample": 0, "tools": (), "response_format": None}
    args.update(kw)
    return client.key(MESSAGES, params, **args)


@pytest.mark.parametrize(
    "params",
    [GenerationParams(temperature=0.3), GenerationParams(max_tokens=50), GenerationParams(top_p=0.5),
     GenerationParams(seed=3), GenerationParams(stop=("END",)), GenerationParams(temperature=None)],
    ids=["temperature", "max_tokens", "top_p", "seed", "stop", "no-temperature"],
)
def test_client_key_changes_with_each_generation_param(params):
    assert _client_key(_client(), params) != _client_key(_client())


def test_client_key_changes_with_model_sample_tools_format():
    base = _client_key(_client())
    assert _client_key(_client(model="openai/other")) != base
    assert _client_key(_client(), sample=1) != base
    assert _client_key(_client(), tools=TOOLS) != base
    assert _client_key(_client(), response_format=FORMAT) != base


def test_client_key_ignores_transport_and_everything_else(tmp_path):
    base = _client_key(_client())
    others = [
        _client(api_base="http://localhost:1234/v1"),
        _client(extra={"api_key": "sk-ignored-0123456789"}),
        _client(retry=RetryPolicy(max_attempts=1, timeout=5.0)),
        _client(cache=ResponseCache(tmp_path)),
        _client(strip_think=False),
        _client(limiter=object()),
    ]
    for client in others:
        assert _client_key(client) == base
    # the number of samples requested does not change the key of sample 0
    assert _client_key(_client(), GenerationParams(samples=5)) == base


def test_cache_key_takes_nothing_else():
    with pytest.raises(TypeError):
        cache_key(model="m", messages=[], params={}, api_base="http://x")  # type: ignore[call-arg]


# --------------------------------------------------------------------------
# ResponseCache
# --------------------------------------------------------------------------


ENTRY = {"model": "m", "response": {"raw_text": "héllo ✓", "prompt_tokens": 3, "completion_tokens": 1}}


def test_round_trip(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    k = key()
    assert cache.get(k) is None
    assert len(cache) == 0
    cache.put(k, ENTRY)
    assert cache.get(k) == ENTRY
    assert len(cache) == 1
    path = tmp_path / "cache" / k[:2] / f"{k}.json"
    assert path.is_file() and json.loads(path.read_text(encoding="utf-8")) == ENTRY


def test_put_overwrites(tmp_path):
    cache = ResponseCache(tmp_path)
    cache.put("ab" * 32, {"v": 1})
    cache.put("ab" * 32, {"v": 2})
    assert cache.get("ab" * 32) == {"v": 2} and len(cache) == 1


def test_atomic_writes_leave_no_temp_files(tmp_path):
    cache = ResponseCache(tmp_path)
    for i in range(20):
        cache.put(key(sample=i), {"i": i})
    assert len(cache) == 20
    leftovers = [p for p in tmp_path.rglob("*") if p.is_file() and p.name.startswith(".")]
    assert leftovers == []
    assert all(p.suffix == ".json" and p.parent.name == p.name[:2] for p in tmp_path.rglob("*.json"))


def test_failed_write_leaves_no_temp_file(tmp_path):
    cache = ResponseCache(tmp_path)
    with pytest.raises(TypeError):
        cache.put("cd" * 32, {"bad": object()})
    assert not list(tmp_path.rglob(".*"))
    assert cache.get("cd" * 32) is None


def test_corrupt_entry_reads_as_miss(tmp_path):
    cache = ResponseCache(tmp_path)
    k = "ef" * 32
    (tmp_path / k[:2]).mkdir()
    (tmp_path / k[:2] / f"{k}.json").write_text('{"truncated": ', encoding="utf-8")
    assert cache.get(k) is None


def test_concurrent_writers_to_the_same_key(tmp_path):
    cache = ResponseCache(tmp_path)
    k = key()
    writers = 16
    payloads = [{"writer": i, "text": f"reply {i} " * 2000} for i in range(writers)]
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []
    seen: list[Any] = []

    def write(payload: dict[str, Any]) -> None:
        try:
            barrier.wait()
            for _ in range(10):
                cache.put(k, payload)
                got = cache.get(k)  # readers never see a partial file
                seen.append(got)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    assert all(got in payloads for got in seen) and len(seen) == writers * 10
    assert cache.get(k) in payloads
    assert len(cache) == 1
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == [f"{k}.json"]


def _mark(cache: ResponseCache, key: str, text: str, age: float = 0.0) -> Path:
    path = cache._path(key).with_suffix(".inflight")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if age:
        os.utime(path, (time.time() - age, time.time() - age))
    return path


def test_a_key_is_claimed_by_one_live_process_at_a_time(tmp_path):
    """The mark beside an entry that lets another process wait for a reply instead of paying for it:
    held while its process lives; taken over when that process is gone, when its pid now names
    another process, when it comes from another host and is over an hour old, or is damaged and old."""
    from pytest_ifbench._owner import started as _started

    cache, key, host = ResponseCache(tmp_path / "c"), "ab" * 32, socket.gethostname()
    assert cache.claim(key) and not cache.claim(key)  # this process holds it
    cache.release(key)
    assert cache.claim(key)
    cache.release(key)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        live = f"{host} {sleeper.pid} {_started(sleeper.pid)}"
        _mark(cache, key, live)
        assert not cache.claim(key)
        _mark(cache, key, f"{host} {sleeper.pid} 1")  # the pid is another process's now
        assert cache.claim(key)
        _mark(cache, key, live)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert cache.claim(key)  # its process died without a reply
    for text, age, taken in (("elsewhere 1 1", 60, False), ("elsewhere 1 1", 7200, True),
                             ("half-writ", 1, False), ("half-writ", 60, True)):
        _mark(cache, key, text, age)
        assert cache.claim(key) is taken, (text, age)
    assert len(cache) == 0  # marks are not entries


def test_cache_entries_are_redacted(tmp_path, monkeypatch):
    monkeypatch.setenv("IFBENCH_TEST_API_KEY", "s3cr3t-value-123456")
    cache = ResponseCache(tmp_path)
    cache.put("aa" * 32, {"messages": [{"role": "user", "content": "key is s3cr3t-value-123456"}],
                          "headers": "Authorization: Bearer abcdefgh12345678", "other": "sk-abcdefghijkl"})
    text = (tmp_path / "aa" / f"{'aa' * 32}.json").read_text(encoding="utf-8")
    assert "s3cr3t-value-123456" not in text and "abcdefgh12345678" not in text and "sk-abcdefghijkl" not in text
    assert cache.get("aa" * 32)["messages"][0]["content"] == f"key is {REDACTED}"


# --------------------------------------------------------------------------
# redact
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "MY_TOKEN", "DB_PASSWORD", "CLIENT_SECRET", "GCP_CREDENTIALS",
                                  "AWS_CREDENTIAL", "hf_token", "ANTHROPIC_API_KEY"])
def test_secret_env_values_are_removed(monkeypatch, name):
    monkeypatch.setenv(name, "v4lue-of-the-secret-9876")
    out = redact("before v4lue-of-the-secret-9876 after, again:v4lue-of-the-secret-9876")
    assert out == f"before {REDACTED} after, again:{REDACTED}"


def test_non_secret_env_values_are_kept(monkeypatch):
    monkeypatch.setenv("IFBENCH_MODEL_NAME", "some-model-name-123")
    monkeypatch.setenv("KEYBOARD_LAYOUT", "dvorak-programmer")
    assert redact("some-model-name-123 dvorak-programmer") == "some-model-name-123 dvorak-programmer"


def test_short_secret_values_are_not_redacted(monkeypatch):
    monkeypatch.setenv("SHORT_TOKEN", "abc")  # too short: would redact every "abc"
    assert redact("abcdef abc") == "abcdef abc"


def test_longer_secret_redacted_before_its_prefix(monkeypatch):
    monkeypatch.setenv("A_TOKEN", "prefix-secret")
    monkeypatch.setenv("B_TOKEN", "prefix-secret-longer-one")
    assert redact("x prefix-secret-longer-one y prefix-secret z") == f"x {REDACTED} y {REDACTED} z"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.DEF-123_xyz", f"Authorization: Bearer {REDACTED}"),
        ("Bearer    eyJhbGciOi.eyJzdWIi.SflKxwRJ", f"Bearer    {REDACTED}"),
        ('{"Authorization": "Bearer 0123456789"}', f'{{"Authorization": "Bearer {REDACTED}"}}'),
        ("Bearer short", "Bearer short"),
    ],
)
def test_bearer_tokens(text, expected):
    assert redact(text) == expected


def test_base64_bearer_token_is_fully_redacted():
    assert redact("Authorization: Bearer abcd1234+efgh5678/ijkl==") == f"Authorization: Bearer {REDACTED}"


def test_lowercase_bearer_is_redacted():
    assert redact("authorization: bearer abcd1234efgh5678") == f"authorization: bearer {REDACTED}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key=sk-abcdefgh12345678", f"key={REDACTED}"),
        ("sk-proj-AbC_dEf-1234567890 and sk-ant-api03-xyzXYZ123456", f"{REDACTED} and {REDACTED}"),
        ('"api_key": "sk-0123456789abcdef"', f'"api_key": "{REDACTED}"'),
        ("task-sk-abcdefghij", f"task-{REDACTED}"),
        ("sk-short", "sk-short"),
        ("risk-free asks", "risk-free asks"),
    ],
)
def test_sk_keys(text, expected):
    assert redact(text) == expected


def test_redact_leaves_ordinary_text_alone():
    text = "The quick brown fox: Bearer of news. {\"a\": 1}"
    assert redact(text) == text


# --------------------------------------------------------------------------
# parse_verdicts
# --------------------------------------------------------------------------


IDS = ["polite", "offers-credit", "short"]


def test_parse_good_verdicts():
    text = json.dumps({"checks": [
        {"id": "polite", "verdict": "pass", "reasoning": "Thanks the customer."},
        {"id": "offers-credit", "verdict": "fail", "reasoning": "No credit offered."},
        {"id": "short", "verdict": " PASS ", "reasoning": "Two sentences."},
    ]})
    assert parse_verdicts(text, IDS) == {
        "polite": (True, "Thanks the customer."),
        "offers-credit": (False, "No credit offered."),
        "short": (True, "Two sentences."),
    }


@pytest.mark.parametrize("score", ["99", "11", "0", "-5", "NaN", "Infinity", "1e308", "10.5"])
def test_a_score_outside_the_scale_is_a_malformed_answer_not_a_verdict(score):
    """99 on a 1-10 scale passed and NaN failed: a schema binds only a constrained decoder."""
    with pytest.raises(ValueError, match=r"needs a score from 1 to 10, got"):
        parse_verdicts(f'{{"checks": [{{"id": "tone", "score": {score}, "verdict": "fail"}}]}}', ["tone"],
                       {"tone": (6.0, 10)})


def test_a_score_within_the_scale_passes_above_its_threshold():
    verdicts = [parse_verdicts(f'{{"checks": [{{"id": "tone", "score": {s}}}]}}', ["tone"], {"tone": (6.0, 10)})
                for s in (1, 6, 6.5, 10)]
    assert [v["tone"][0] for v in verdicts] == [False, False, True, True]


def test_parse_verdicts_wrapped_in_prose_and_fences():
    text = ('Here is my evaluation:\n```json\n{"checks": [{"id": "polite", "verdict": "pass", '
            '"reasoning": "uses {please}"}]}\n```\nHope that helps!')
    assert parse_verdicts(text, IDS) == {"polite": (True, "uses {please}")}


def test_parse_verdicts_with_raw_control_characters_in_strings():
    """The embedded judge writes a literal newline or tab inside its reasoning: still its answer."""
    text = '{"checks": [{"id": "polite", "verdict": "pass", "reasoning": "line one\nline\ttwo"}]}'
    assert "\n" in text and parse_verdicts(text, IDS) == {"polite": (True, "line one\nline\ttwo")}
    with pytest.raises(ValueError):
        parse_verdicts('{"checks": [{"id": "polite", "verdict": "pass",}]}', IDS)  # not JSON: still an error


def test_parse_partial_verdicts_omitted_ids_are_absent():
    text = '{"checks": [{"id": "short", "verdict": "fail"}]}'
    result = parse_verdicts(text, IDS)
    assert result == {"short": (False, "")}
    assert "polite" not in result and "offers-credit" not in result


def test_parse_ignores_unknown_ids_and_junk_entries_and_refuses_an_id_answered_twice():
    """An id answered twice was read as its first entry: a judge quoting a verdict the judged reply wrote had
    the reply's verdict read for its own. It is malformed now (the repair turn says so)."""
    entries = ["not an entry", {"verdict": "pass"}, {"id": "invented", "verdict": "pass"},
               {"id": "polite", "verdict": "fail", "reasoning": "first"}]
    assert parse_verdicts(json.dumps({"checks": entries}), IDS) == {"polite": (False, "first")}
    twice = [*entries, {"id": "polite", "verdict": "pass", "reasoning": "second"}]
    with pytest.raises(ValueError, match="id 'polite' is answered more than once, differently"):
        parse_verdicts(json.dumps({"checks": twice}), IDS)
    again = [*entries, {"id": "polite", "verdict": "fail", "reasoning": "said again"}]  # a small judge repeating
    assert parse_verdicts(json.dumps({"checks": again}), IDS) == {"polite": (False, "first")}


@pytest.mark.parametrize("verdict", ["yes", "passed", "", None, True, 1, "pass/fail"])
def test_parse_bad_verdict_values(verdict):
    text = json.dumps({"checks": [{"id": "polite", "verdict": verdict, "reasoning": "r"}]})
    with pytest.raises(ValueError, match=r"check 'polite' has verdict .* not pass/fail"):
        parse_verdicts(text, IDS)


def test_parse_missing_verdict_is_bad():
    with pytest.raises(ValueError, match="not pass/fail"):
        parse_verdicts('{"checks": [{"id": "polite"}]}', IDS)


@pytest.mark.parametrize("text", ["", "I think it passes.", "PASS", "[1, 2]", "```json\n```"])
def test_parse_non_json(text):
    with pytest.raises(ValueError, match="no JSON object in the reply"):
        parse_verdicts(text, IDS)


@pytest.mark.parametrize("text", ["{'checks': []}", '{"checks": [,]}', "{checks: pass}"])
def test_parse_malformed_json_is_a_value_error(text):
    with pytest.raises(ValueError):
        parse_verdicts(text, IDS)


@pytest.mark.parametrize("text", ['{"verdicts": []}', '{"checks": {"polite": "pass"}}', '{"checks": null}'])
def test_parse_json_without_checks_list(text):
    with pytest.raises(ValueError, match='the JSON has no "checks" list'):
        parse_verdicts(text, IDS)


def test_parse_empty_checks_list():
    assert parse_verdicts('{"checks": []}', IDS) == {}


def test_redaction_module_reads_environment_at_call_time(monkeypatch):
    assert redact("late-secret-abcdef") == "late-secret-abcdef"
    monkeypatch.setenv("LATE_SECRET", "late-secret-abcdef")
    assert redact("late-secret-abcdef") == REDACTED


KEY = "sk-AUDITopenai0123456789"


@pytest.mark.parametrize("before", ["", "a", "ab", "api:", "user:x:"], ids=["0", "1", "2", "basic-user", "longer"])
def test_a_key_in_base64_is_redacted_whatever_precedes_it(monkeypatch, before):
    """A provider's error echoing ``Authorization: Basic base64(user:key)``, or the key base64-encoded after
    anything: the part only the key decides is gone, in either alphabet, as a header's value or not."""
    import base64

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        encoded = encode((before + KEY + "??>").encode()).decode()
        cleaned = redact(f"400: bad request, body {encoded} rejected")
        head, redacted, tail = cleaned.removeprefix("400: bad request, body ").removesuffix(" rejected").partition(
            REDACTED)
        assert redacted, cleaned
        # only the 4-character groups holding a byte of something else are left
        assert len(head) <= -(-len(before) // 3) * 4
        assert len(tail) <= len(encoded) - (len(before) + len(KEY)) // 3 * 4
    header = base64.b64encode(f"{before}{KEY}".encode()).decode()
    assert redact(f"Authorization: Basic {header}") == f"Authorization: Basic {REDACTED}"


def test_basic_credentials_are_redacted_only_as_a_headers_value():
    assert redact('{"authorization": "Basic dXNlcjpwYXNzd29yZA=="}') == '{"authorization": "Basic [REDACTED]"}'
    prose = "Basic understanding comes first; Basic structures later."
    assert redact(prose) == prose


@pytest.mark.parametrize("encoded", ["sk%2DAUDITopenai0123456789", "sk%2dAUDITopenai0123456789",
                                     "".join(f"%{b:02x}" for b in KEY.encode()),
                                     "".join(f"%{b:02X}" for b in KEY[::-1].encode())],
                         ids=["dash", "dash-lower", "every-byte", "reversed"])
def test_a_key_percent_encoded_in_any_part_is_redacted(monkeypatch, encoded):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert redact(f"GET /v1/x?key={encoded}&y=1 failed") == f"GET /v1/x?key={REDACTED}&y=1 failed"
