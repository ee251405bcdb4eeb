"""Whose a cache key's in-flight mark is, and when it is taken over.

A process killed with -9 whose parent does not reap it (an xdist worker: the controller never waits for
it) stays a zombie: it keeps its pid and its start time in ``/proc``, and still answers signal 0, but
will never keep a reply -- its marks are taken over. A process whose patience ran out on another's mark
asks the model without holding that mark, and leaves it to its owner.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_ifbench._owner import gone, started, this_process
from pytest_ifbench._types import GenerationParams
from pytest_ifbench.models.cache import ResponseCache
from pytest_ifbench.models.client import ModelClient, RetryPolicy
from pytest_ifbench.models.in_flight import reply_or_turn
from tests._support import closing_sessions

HOST = socket.gethostname()
MESSAGES = [{"role": "user", "content": "hello"}]
#: Names of processes (``/proc/<pid>/comm``, at most 15 bytes: a name cut there may end inside a UTF-8
#: character) that a reader splitting ``/proc/<pid>/stat`` at its first ")" misreads (state "R" or "Z"),
#: or that a reader decoding it as UTF-8 cannot read.
NAMES = {"plain": b"", "parentheses": b"a) {} 1 (b", "not UTF-8": b"h\xc3\xa9ll\xff"}


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return handle.read().rsplit(b")", 1)[1].split()[0].decode()


def _owner(pid: int) -> str:
    return f"{HOST} {pid} {started(pid)}"


def _python(code: str) -> subprocess.Popen:
    """A Python child running ``code``, once it printed that it is ready."""
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert child.stdout.readline().strip() == b"ready"
    return child


def _renamed(name: bytes, then: str) -> str:
    return f"open('/proc/self/comm', 'wb').write({name!r}); print('ready', flush=True); {then}"


def _sleeping(name: bytes) -> subprocess.Popen:
    return _python(_renamed(name, "import time; time.sleep(60)") if name else
                   "import time; print('ready', flush=True); time.sleep(60)")


@pytest.fixture
def sleeper():
    child = _sleeping(b"")
    yield child
    child.kill()
    child.wait()


@pytest.mark.parametrize("name", NAMES.values(), ids=NAMES.keys())
def test_a_zombie_is_gone(tmp_path, name):
    """A child that exited and was not waited for: its pid and start time are still in /proc."""
    child = _python(_renamed(name.replace(b"{}", b"R"), "") if name else "print('ready', flush=True)")
    try:
        deadline = time.monotonic() + 10
        while _state(child.pid) != "Z":
            assert time.monotonic() < deadline, "the child never became a zombie"
            time.sleep(0.01)
        owner = _owner(child.pid)
        assert owner.split()[2] != "-"  # a zombie still shows its start time: that alone does not tell
        assert gone(owner) is True
        cache = ResponseCache(tmp_path / "cache")
        mark = cache._path("ab" * 32).with_suffix(".inflight")
        mark.parent.mkdir(parents=True)
        mark.write_text(owner)
        assert cache.claim("ab" * 32)  # the zombie's mark is taken over: nobody waits on it
        assert mark.read_text() == this_process()
    finally:
        child.wait()


@pytest.mark.parametrize("name", NAMES.values(), ids=NAMES.keys())
def test_a_live_process_is_not_gone(name):
    assert gone(this_process()) is False
    child = _sleeping(name.replace(b"{}", b"Z"))
    try:
        assert started(child.pid) != "-"
        assert gone(_owner(child.pid)) is False
        assert gone(f"{HOST} {child.pid} {started(child.pid)} a-lease-token") is False
    finally:
        child.kill()
        child.wait()


def test_a_pid_given_to_another_process_is_gone(sleeper):
    assert gone(f"{HOST} {sleeper.pid} {int(started(sleeper.pid)) + 1}") is True


def test_an_ended_process_is_gone_and_another_hosts_cannot_be_told(sleeper):
    child = subprocess.Popen(["true"])
    child.wait()
    assert gone(f"{HOST} {child.pid} 12345") is True
    assert gone(f"{HOST}-elsewhere {sleeper.pid} {started(sleeper.pid)}") is None
    assert gone("not an owner") is None


def _marked_by(cache: ResponseCache, key: str, holder: subprocess.Popen) -> Path:
    mark = cache._path(key).with_suffix(".inflight")
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text(_owner(holder.pid))
    return mark


def test_a_wait_that_ran_out_claims_nothing(tmp_path, sleeper):
    """Another live process marked the key: patience run out, this one asks without the claim."""
    cache = ResponseCache(tmp_path / "cache")
    mark = _marked_by(cache, "cd" * 32, sleeper)
    assert asyncio.run(reply_or_turn(cache, "cd" * 32, 0.2))[:2] == (None, False)
    assert mark.read_text() == _owner(sleeper.pid)
    mark.unlink()
    assert asyncio.run(reply_or_turn(cache, "cd" * 32, 0.2))[:2] == (None, True)
    assert mark.read_text() == this_process()


def test_a_request_that_stopped_waiting_leaves_the_other_process_its_mark(stub_env, tmp_path, sleeper):
    """The process holding the mark is slow (its requests queue behind its concurrency limit): this one
    stops waiting and pays for its own reply, but the mark stays the other's, so a third process
    sharing the directory still waits instead of paying a third time."""
    cache = ResponseCache(tmp_path / "cache")
    quick = RetryPolicy(max_attempts=1, base_delay=0.01, max_delay=0.01, max_total_wait=0.1, timeout=0.2)
    c = ModelClient(model="openai/stub", api_base=stub_env.url, retry=quick, cache=cache)
    params = GenerationParams(max_tokens=20)
    key = c.key(MESSAGES, params, sample=0, tools=(), response_format=None)
    mark = _marked_by(cache, key, sleeper)
    reply = asyncio.run(closing_sessions(c.complete(MESSAGES, params)))
    assert not reply.cached and reply.text and stub_env.calls == 1
    assert mark.read_text() == _owner(sleeper.pid)
    assert not ResponseCache(tmp_path / "cache").claim(key)  # a third process: the key is still taken


def test_the_sandboxs_own_copy_also_takes_a_zombie_for_ended():
    """``sandbox/backends/_process_identity.py`` (the sandbox imports nothing from the package): a quota or
    container whose owner is a killed, unreaped xdist worker is released by the next start-up."""
    from pytest_ifbench.sandbox.backends._process_identity import ended, identity

    child = _python("print('ready', flush=True)")
    try:
        record = identity(child.pid)  # written while it ran
        deadline = time.monotonic() + 10
        while _state(child.pid) != "Z":
            assert time.monotonic() < deadline, "the child never became a zombie"
            time.sleep(0.01)
        assert ended(HOST, child.pid, record["start"]) is True
        assert ended(HOST, child.pid, None) is True
    finally:
        child.wait()
    assert ended(HOST, os.getpid(), identity(os.getpid())["start"]) is False


def test_a_claim_whose_read_fails_is_not_left_held(tmp_path, monkeypatch):
    """Claimed, then the read of the entry fails (or the waiting request is cancelled there): the mark stayed
    held by this live process, and every other one waited on it for its whole patience."""
    cache = ResponseCache(tmp_path / "cache")

    def broken(key, *args):
        raise OSError("the disk went away")

    monkeypatch.setattr(cache, "get", broken)
    with pytest.raises(OSError, match="the disk went away"):
        asyncio.run(reply_or_turn(cache, "ef" * 32, 1.0))
    assert ResponseCache(tmp_path / "cache").claim("ef" * 32)  # another process takes it at once
