"""A run stopped with calls on their way waits for them before the shared cache closes: their replies reach
the store, for a re-run on another machine (a new pod: the local disk went with the old one)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

from pytest_ifbench.testing import Reply
from tests._support import FAKE_KEY, bulk_suite, stop_a_run, write_suite


def test_the_replies_of_calls_sent_before_a_stop_reach_the_shared_store(tmp_path, stub_env, redis_url):
    """They reached only the local cache: the store was closed at the session's end, before the wait, so the
    new machine paid for them again (12 calls for 8 requests) and their leases were left behind."""
    stub_env.add_rule("question 0$", Reply(content="hello there"))
    stub_env.add_rule("", Reply(content="hello there", latency=3.0))
    write_suite(tmp_path, "suites/bulk.yaml", bulk_suite(8))
    argv = [sys.executable, "-m", "pytest", "suites", "--model=openai/stub", f"--api-base={stub_env.url}",
            "--ifbench-concurrency=4", f"--ifbench-shared-cache={redis_url}", "-q", "-p", "no:cacheprovider"]
    # the first answered at once, four more on their way
    status, output = stop_a_run(argv, tmp_path, ready=lambda: stub_env.calls == 5 and stub_env.in_flight == 4,
                                signum=signal.SIGINT)
    assert status == 2, output[-3000:]
    assert stub_env.calls == 5, output[-3000:]
    shutil.rmtree(tmp_path / ".ifbench-cache")  # another machine: the same store, no local cache
    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY, PYTEST_ADDOPTS="")
    again = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout[-3000:]
    assert stub_env.calls == 8, "the new machine paid only for the three never sent"
    assert "5 entries fetched" in again.stdout, again.stdout[-2000:]
