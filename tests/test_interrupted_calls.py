"""A run stopped while its model calls are on their way keeps their replies: the provider bills a request
it received whatever the run does next, so cancelling them paid for them now and again on the re-run."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from pytest_ifbench.testing import Reply
from tests._support import FAKE_KEY, bulk_suite, stop_a_run, stub_args, write_suite


def _run(stub, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "suites", *stub_args(stub), *extra, "-q", "-p", "no:cacheprovider"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_calls_sent_before_a_stop_are_kept_for_the_re_run_and_nothing_more_is_sent(tmp_path, stub_env, signum):
    """The audit's: Ctrl-C under load, 88 requests received, 84 kept; the re-run paid 36 for the missing 36."""
    stub_env.add_rule("", Reply(content="hello there", latency=3.0))
    write_suite(tmp_path, "suites/bulk.yaml", bulk_suite(8))
    argv = _run(stub_env, "--ifbench-concurrency=4")
    status, output = stop_a_run(argv, tmp_path, ready=lambda: stub_env.in_flight == 4, signum=signum)
    assert status == 2, output[-3000:]
    assert "waiting up to 20 s for 4 model call(s) already sent (paid for)" in output, output[-3000:]
    assert stub_env.calls == 4, "the four queued behind them were never sent"
    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY, PYTEST_ADDOPTS="")
    again = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout[-3000:]
    assert stub_env.calls == 8, "the re-run paid only for the four never sent"


def test_calls_held_back_by_the_spending_limit_are_not_sent_after_the_stop(tmp_path, stub_env):
    """Under --ifbench-max-cost a model's first call goes alone; the others wait for its price. Stopped
    then, they were let through once the price came and sent during the wait: 4 calls, where 1 was sent."""
    stub_env.add_rule("", Reply(content="hello there", latency=3.0))
    write_suite(tmp_path, "suites/bulk.yaml", bulk_suite(8))
    argv = [sys.executable, "-m", "pytest", "suites", "--model=openai/gpt-4o-mini", f"--api-base={stub_env.url}",
            "--ifbench-concurrency=4", "--ifbench-max-cost=5", "-q", "-p", "no:cacheprovider"]
    status, output = stop_a_run(argv, tmp_path, ready=lambda: stub_env.in_flight == 1, signum=signal.SIGINT)
    assert status == 2, output[-3000:]
    assert stub_env.calls == 1, output[-3000:]


def test_sigterm_to_an_xdist_controller_stops_its_workers_sending(tmp_path, stub_env):
    """``timeout``, ``docker stop`` and Kubernetes signal the controller alone: its workers went on sending the
    calls queued for their items until the controller's shutdown reached them (8 calls where 4 were sent)."""
    stub_env.add_rule("", Reply(content="hello there", latency=3.0))
    write_suite(tmp_path, "suites/bulk.yaml", bulk_suite(16))
    argv = _run(stub_env, "--ifbench-concurrency=2", "-n", "2")
    status, output = stop_a_run(argv, tmp_path, ready=lambda: stub_env.in_flight == 4, signum=signal.SIGTERM)
    assert status == 2, output[-3000:]
    assert stub_env.calls == 4, output[-3000:]


def test_what_the_calls_answered_after_a_stop_cost_is_said(tmp_path, stub_env):
    """They are in the cache and in no record: the tables came out short of what the provider billed, with
    nothing to say why (the money audit: 32 calls served, 24 in the table)."""
    stub_env.add_rule("", Reply(content="hello there", latency=3.0))
    write_suite(tmp_path, "suites/bulk.yaml", bulk_suite(8))
    argv = [sys.executable, "-m", "pytest", "suites", "--model=openai/gpt-4o-mini", f"--api-base={stub_env.url}",
            "--ifbench-concurrency=4", "-q", "-p", "no:cacheprovider"]
    status, output = stop_a_run(argv, tmp_path, ready=lambda: stub_env.in_flight == 4, signum=signal.SIGINT)
    assert status == 2, output[-3000:]
    said = re.search(r"4 model call\(s\) answered after the stop cost \$([0-9.]+): their replies are in the cache, "
                     r"in no record \(a re-run takes them free\)", output)
    assert said and float(said.group(1)) > 0, output[-3000:]
