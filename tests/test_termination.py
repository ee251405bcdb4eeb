"""The signal handlers of ``_termination``: a second signal may arrive at any point of the first one's handler."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from pytest_ifbench import _termination

#: In a child process: for k = 1, 2, ..., send a second SIGINT at the k-th profiler event inside the first
#: SIGINT's handler (so the second handler runs on the same thread, inside the first, wherever it then is),
#: until k passes every event the handler has. Each k prints one line; a handler that waits on itself hangs.
_EVERY_POINT = textwrap.dedent("""
    import os, signal, sys
    from pytest_ifbench import _termination

    handler = _termination._interrupted
    signal.signal(signal.SIGINT, handler)
    state = {"inside": False, "events": 0, "fire_at": 0, "fired": False}

    def profile(frame, event, arg):
        if frame.f_code is handler.__code__ and event in ("call", "return"):
            state["inside"] = event == "call" and not state["fired"]  # the first handler's extent only
            return
        if state["inside"] and not state["fired"]:
            state["events"] += 1
            if state["events"] == state["fire_at"]:
                state["fired"] = True
                os.kill(os.getpid(), signal.SIGINT)

    for k in range(1, 200):
        state.update(inside=False, events=0, fire_at=k, fired=False)
        sys.setprofile(profile)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # the handler runs here at the latest
                pass
        except KeyboardInterrupt:
            pass
        finally:
            sys.setprofile(None)
        print(k, state["fired"], flush=True)
        if not state["fired"]:  # k is past the handler's last event: every point was tried
            break
""")


def test_a_second_ctrl_c_at_any_point_of_the_first_one_s_handler_never_hangs_the_run():
    """The first handler noted the stop in a ``threading.Event``, whose ``set`` holds a lock: a second Ctrl-C
    arriving then ran the handler again, inside the first, which waited for that lock for ever (a clean-clone
    CI run hung 60 s after a double Ctrl-C; the stacks showed the handler inside itself, in ``Event.set``)."""
    try:
        done = subprocess.run([sys.executable, "-c", _EVERY_POINT], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired as hung:
        lines = (hung.stdout or b"").decode().split()
        pytest.fail(f"the handler hung with the second signal at event {len(lines) // 2 + 1}")
    lines = [line.split() for line in done.stdout.splitlines()]
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(lines) >= 2 and lines[-1][1] == "False" and all(fired == "True" for _, fired in lines[:-1]), lines


def test_the_stop_is_noted_without_a_lock():
    """What the handlers set is a plain flag: nothing in them may wait (see the test above)."""
    flag = _termination._Flag()
    assert not flag.is_set()
    flag.set()
    assert flag.is_set()
    flag.clear()
    assert not flag.is_set()
    assert not hasattr(flag, "__dict__") and not any("lock" in name or "cond" in name for name in dir(flag))
