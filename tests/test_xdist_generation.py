"""Generation under xdist: each worker keeps ``--ifbench-concurrency`` calls in flight for its
instances, and a slow call does not stop the worker from generating the rest of its share.

Each request the stub received is attributed to the worker that ran its instance (``-v`` prints
``[gwN] ... PASSED suites/bulk.yaml::qNNN``); in-flight counts come from the stub's own timestamps.
"""

from __future__ import annotations

import re

from pytest_ifbench.testing import Reply
from tests._support import bulk_suite, stub_args, write_suite

_RAN = re.compile(r"\[(gw\d+)\].*?(?:PASSED|FAILED|ERROR) \S+::(q\d+)")


def _workers(output: str) -> dict[str, str]:
    """instance id -> the xdist worker that ran it."""
    return {instance: worker for worker, instance in _RAN.findall(output)}


def _instance(request) -> str:
    return f"q{int(request.last_user_text.split()[-1]):03d}"


def _peak_in_flight(requests) -> int:
    events = sorted([(r.received_at, 1) for r in requests] + [(r.answered_at, -1) for r in requests],
                    key=lambda e: (e[0], e[1]))
    peak = current = 0
    for _, step in events:
        current += step
        peak = max(peak, current)
    return peak


def test_each_worker_keeps_its_concurrency_in_flight(pytester, stub_env):
    stub_env.latency = 0.3
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(40))
    result = pytester.runpytest("suites", *stub_args(stub_env, "--ifbench-concurrency=4"), "-n", "2", "-v")
    result.assert_outcomes(passed=40)
    ran_on = _workers(result.stdout.str())
    assert len(ran_on) == 40 and set(ran_on.values()) == {"gw0", "gw1"}
    for worker in ("gw0", "gw1"):
        mine = [r for r in stub_env.requests if ran_on[_instance(r)] == worker]
        peak = _peak_in_flight(mine)
        assert 2 < peak <= 4, f"{worker}: {peak} call(s) in flight at most, with --ifbench-concurrency=4"


def test_a_slow_call_does_not_stop_its_worker_generating_the_rest(pytester, stub_env):
    """q001 takes 4 s; meanwhile its worker sends the calls of the rest of its instances."""
    stub_env.latency = 0.1
    stub_env.add_rule(r"^question 1$", Reply(content="slow but fine", latency=4.0))
    write_suite(pytester.path, "suites/bulk.yaml", bulk_suite(60))
    result = pytester.runpytest("suites", *stub_args(stub_env, "--ifbench-concurrency=4"), "-n", "2", "-v")
    result.assert_outcomes(passed=60)
    ran_on = _workers(result.stdout.str())
    (slow,) = [r for r in stub_env.requests if _instance(r) == "q001"]
    worker = ran_on["q001"]
    others = [r for r in stub_env.requests if ran_on[_instance(r)] == worker and r is not slow]
    during = [r for r in others if slow.received_at <= r.received_at < slow.answered_at]
    assert len(others) >= 20 and len(during) >= len(others) - 4, \
        f"{worker} sent {len(during)} of its {len(others)} other calls while q001's was in flight"
