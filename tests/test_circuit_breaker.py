"""The circuit breaker: consecutive connection failures to one endpoint make the rest of the run's
calls to it fail at once with one named error; an endpoint that answers (even with errors) never
trips it.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from pytest_ifbench._types import GenerationParams
from pytest_ifbench.models.breaker import THRESHOLD, Breakers, is_connection_failure
from pytest_ifbench.models.client import EndpointDown, ModelCallError, ModelClient, RetryPolicy
from pytest_ifbench.models.openai_compat import LITELLM_ONLY_ENV
from pytest_ifbench.testing import Fault, Reply, StubServer
from tests._support import bulk_suite, closing_sessions, free_port, stub_args, write_suite

QUICK = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.002, max_total_wait=5, timeout=5)
NAMED = "circuit breaker open"


def _route(monkeypatch, route: str) -> None:
    if route == "litellm":
        monkeypatch.setenv(LITELLM_ONLY_ENV, "1")
    else:
        monkeypatch.delenv(LITELLM_ONLY_ENV, raising=False)


def _call(client: ModelClient):
    return asyncio.run(closing_sessions(client.complete([{"role": "user", "content": "hi"}],
                                                        GenerationParams(max_tokens=9))))


def _outcome(client: ModelClient) -> BaseException | object:
    try:
        return _call(client)
    except ModelCallError as exc:
        return exc


@pytest.mark.parametrize("route", ["direct", "litellm"])
def test_a_dead_endpoint_opens_the_breaker_then_calls_fail_without_a_request(monkeypatch, route):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    _route(monkeypatch, route)
    client = ModelClient(model="openai/stub", api_base=f"http://127.0.0.1:{free_port()}/v1", retry=QUICK,
                         breakers=Breakers(threshold=5))
    first, second = _outcome(client), _outcome(client)
    # 3 attempts, all refused: not yet 5 in a row, so the first call ends with its own error
    assert isinstance(first, ModelCallError) and not isinstance(first, EndpointDown), first
    assert NAMED not in str(first) and first.attempts == 3
    # the 5th consecutive failure opens the breaker during the second call: it ends there, named
    assert isinstance(second, EndpointDown) and NAMED in str(second) and second.attempts == 2, second
    assert "5 consecutive connection failures" in str(second)
    third = _outcome(client)
    assert isinstance(third, EndpointDown) and third.attempts == 0 and "not called" in str(third), third
    assert client.stats.calls == 5, "no request once the breaker is open"


@pytest.mark.parametrize("route", ["direct", "litellm"])
def test_an_answer_resets_the_count(monkeypatch, route):
    """Refusals, an answer, refusals: never THRESHOLD in a row, so the endpoint keeps being called."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    _route(monkeypatch, route)
    port = free_port()
    client = ModelClient(model="openai/stub", api_base=f"http://127.0.0.1:{port}/v1",
                         retry=RetryPolicy(max_attempts=1, timeout=5), breakers=Breakers(threshold=3))
    for _ in range(3):
        for _ in range(2):  # two refusals
            assert not isinstance(_outcome(client), EndpointDown)
        with StubServer(port=port) as server:  # then the endpoint is back and answers
            server.add_rule("", Reply(content="back"))
            assert _call(client).text == "back"
    assert client.breakers.for_endpoint(client.endpoint).opened is None


@pytest.mark.parametrize("fault", [Fault(kind="status", status=503), Fault(kind="disconnect"),
                                   Fault(kind="malformed"), Fault(kind="status", status=429)],
                         ids=["503", "disconnect", "malformed", "429"])
def test_answers_that_are_errors_never_trip_it(stub_env, fault):
    """An endpoint that answers (any status), drops a connection or sends junk is alive."""
    stub_env.inject_faults(*[fault] * (THRESHOLD + 2))
    stub_env.add_rule("", Reply(content="made it"))
    client = ModelClient(model="openai/stub", api_base=stub_env.url,
                         retry=RetryPolicy(max_attempts=THRESHOLD + 3, base_delay=0.001, max_delay=0.002,
                                           max_total_wait=5, timeout=5))
    result = _call(client)
    assert result.text == "made it" and result.attempts == THRESHOLD + 3


def test_connection_failures_are_told_from_other_errors(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    errors = []
    for base in (f"http://127.0.0.1:{free_port()}/v1", "http://no-such-host.invalid/v1"):
        for route in ("direct", "litellm"):
            _route(monkeypatch, route)
            client = ModelClient(model="openai/stub", api_base=base, retry=RetryPolicy(max_attempts=1, timeout=5))
            kwargs = {"timeout": 5, "messages": [{"role": "user", "content": "hi"}]}
            if client.direct is not None:
                call = client.direct.acompletion(model="openai/stub", **kwargs)
            else:
                from pytest_ifbench.models.client import import_litellm

                call = import_litellm().acompletion(model="openai/stub", api_base=base, num_retries=0,
                                                    max_retries=0, **kwargs)
            try:
                asyncio.run(closing_sessions(call))
            except Exception as exc:  # noqa: BLE001 - whatever each route raises
                errors.append((base, route, exc))
    assert len(errors) == 4 and all(is_connection_failure(exc) for _, _, exc in errors), errors
    assert not is_connection_failure(RuntimeError("boom")) and not is_connection_failure(TimeoutError())


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "n2"])
def test_a_run_against_a_dead_port_ends_at_once_every_instance_naming_the_breaker(pytester, monkeypatch, xdist):
    """200 instances whose calls would each retry 20 times with backoff: the breaker ends them all."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(200))
    result = pytester.runpytest_subprocess(
        "suites", "--model=openai/stub", f"--api-base=http://127.0.0.1:{free_port()}/v1", "-p",
        "no:cacheprovider", "--ifbench-no-cache", "--ifbench-max-attempts=20", "--ifbench-max-wait=600",
        "--ifbench-summary=", *xdist, timeout=240)
    result.assert_outcomes(errors=200)
    records = json.loads((pytester.path / "ifbench-results.json").read_text())["instances"]
    assert len(records) == 200
    assert all(r["status"] == "error" and r["error_kind"] == "model" and NAMED in r["error"] for r in records), \
        [r["error"] for r in records if NAMED not in r["error"]][:3]


def test_a_live_endpoint_with_sporadic_faults_never_trips_it(pytester, stub_env):
    """Every 5th call faulted (HTTP errors, drops, junk): all instances pass, none names the breaker."""
    kinds = [Fault(kind="status", status=500), Fault(kind="disconnect"), Fault(kind="malformed"),
             Fault(kind="status", status=503), Fault(kind="status", status=429)]
    for i in range(0, 60, 5):
        stub_env.inject_faults(kinds[i // 5 % len(kinds)], match=f"question {i}$")
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(60))
    result = pytester.runpytest("suites", *stub_args(stub_env, "--ifbench-max-attempts=3"))
    result.assert_outcomes(passed=60)
    assert NAMED not in result.stdout.str()
