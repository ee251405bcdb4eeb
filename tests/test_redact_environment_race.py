"""Redaction reads the environment from background threads while pytest's main thread sets and deletes
``PYTEST_CURRENT_TEST``: a torn read must never turn into an instance error."""

from __future__ import annotations

import os
import sys
import threading
import time

from pytest_ifbench._redact import redact, secret_values


def _race(reader, seconds: float = 2.0) -> tuple[int, list[BaseException]]:
    stop = threading.Event()

    def toggle() -> None:
        while not stop.is_set():
            os.environ["PYTEST_IFBENCH_RACE"] = "x"
            del os.environ["PYTEST_IFBENCH_RACE"]

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often: the torn read shows up within a second
    thread = threading.Thread(target=toggle, daemon=True)
    thread.start()
    errors: list[BaseException] = []
    reads = 0
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            reads += 1
            try:
                reader()
            except (KeyError, RuntimeError) as exc:
                errors.append(exc)
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(old)
    return reads, errors


def test_the_race_is_real_for_a_plain_read_of_the_environment():
    _, errors = _race(lambda: {v for _, v in os.environ.items()})
    assert errors, "os.environ.items() was never torn: this test cannot tell the guard works"


def test_secret_values_and_redact_survive_the_environment_changing_under_them(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-race-0123456789abcdef")
    reads, errors = _race(lambda: (secret_values(), redact("key sk-race-0123456789abcdef")))
    assert reads > 100 and errors == []
    assert redact("key sk-race-0123456789abcdef") != "key sk-race-0123456789abcdef"
