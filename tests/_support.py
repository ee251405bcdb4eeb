"""Helpers shared by the plugin's tests (``from tests._support import ...``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_ifbench.models.openai_compat import close_sessions
from pytest_ifbench.testing import FAKE_API_KEY, StubServer

#: A fake key: tests assert it never reaches a file on disk.
FAKE_KEY = FAKE_API_KEY

#: The checkout's root.
ROOT = Path(__file__).resolve().parents[1]
#: The papers, samples and notes beside the checkout (CI has them; ``IFBENCH_SHARED`` points elsewhere).
SHARED = Path(os.environ.get("IFBENCH_SHARED") or ROOT.parent / "shared")


def shared_sample(name: str) -> Path:
    """``../shared/samples/<name>``; the test is skipped only when ``../shared`` itself is absent."""
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} (the authors' samples) is not available")
    path = SHARED / "samples" / name
    assert path.is_file(), f"{path} is missing from ../shared"
    return path


#: The two instances of the demo suite the end-to-end tests share: the stub's "hello there" passes
#: the first, fails the second. Copy and extend them (``{**SHOUT, "tier": 12}``) rather than
#: writing the suite again.
HELLO_LOWER: dict[str, Any] = {
    "id": "hello-lower", "category": "format", "prompt": "say hello in lowercase",
    "checks": [{"id": "lower", "verifier": "ifbench.case", "params": {"mode": "lower"}},
               {"id": "short", "verifier": "ifbench.word_count", "params": {"max": 5}}],
}
SHOUT: dict[str, Any] = {
    "id": "shout", "category": "style", "prompt": "say hello in uppercase",
    "checks": [{"id": "upper", "verifier": "ifbench.case", "params": {"mode": "upper"}}],
}


def demo_suite(*instances: dict[str, Any], benchmark: str = "demo", **top: Any) -> str:
    """Suite YAML text for ``instances`` (default: HELLO_LOWER and SHOUT); ``top`` adds top-level keys."""
    data = {"ifbench": 1, "benchmark": benchmark, **top, "instances": list(instances or (HELLO_LOWER, SHOUT))}
    return yaml.safe_dump(data, sort_keys=False)


def bulk_suite(n: int) -> str:
    """``n`` instances ``q000``... of benchmark ``bulk``, each passing on any non-empty reply."""
    lines = ["ifbench: 1", "benchmark: bulk", "instances:"]
    for i in range(n):
        lines += [f"  - id: q{i:03d}", f"    prompt: question {i}",
                  "    checks: [{id: any, verifier: ifbench.word_count, params: {min: 1}}]"]
    return "\n".join(lines) + "\n"


#: The one warning only an in-process ``pytester.runpytest`` produces: our package is already imported
#: (by the editable install's finder) when the run registers its entry point again, so pytest cannot
#: rewrite its asserts. tests/conftest.py ignores it in every run; a run with ``-W error::...`` repeats it.
IN_PROCESS_WARNING = ("ignore:Module already imported so cannot be rewritten; pytest_ifbench"
                      ":pytest.PytestAssertRewriteWarning")


def set_field(row: dict, path: tuple, value: Any) -> None:
    """Set (or, for ``...``, remove) the field of ``row`` at ``path`` (keys and list indexes): one mutation of
    an official data file's row, for the importers' malformed-input tests."""
    *parents, last = path
    for key in parents:
        row = row[key]
    if value is ...:
        del row[last]
    else:
        row[last] = value


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (nothing listens there: a closed port too)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def small_disk(directory: Path, size: str = "256k") -> Iterator[Path]:
    """``directory`` as a real filesystem of ``size`` (a tmpfs mount, unmounted after): a full disk for the
    test. Skips where mounting is not allowed (not root)."""
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    directory.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield directory
    finally:
        subprocess.run(["umount", str(directory)])


def deep_directory(root: Path, depth: int) -> Path:
    """``root/d/d/...``, ``depth`` directories deep, made one level at a time (``os.makedirs`` recurses: it
    cannot make one 1,100 deep)."""
    path = root
    for _ in range(depth):
        path = path / "d"
        path.mkdir()
    return path


def stub_args(server: StubServer, *extra: str) -> list[str]:
    """Command-line arguments that run suites against ``server`` quickly."""
    return ["--model=openai/stub", f"--api-base={server.url}", "-p", "no:cacheprovider",
            "--ifbench-max-wait=5", "--ifbench-timeout=5", "--ifbench-summary=", *extra]


def write_suite(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def write_agent_suite(directory: Path, name: str, text: str) -> Path:
    """``write_suite``, beside the one-file environment ``suites/env`` (``README.md``) agent suites name."""
    (directory / "suites" / "env").mkdir(parents=True, exist_ok=True)
    (directory / "suites" / "env" / "README.md").write_text("a workspace\n")
    return write_suite(directory, name, text)


async def closing_sessions(call: Any) -> Any:
    """Await ``call``, then close the pooled aiohttp sessions of the direct path and the SDK providers,
    which belong to the event loop ``asyncio.run`` is about to close."""
    try:
        return await call
    finally:
        await close_sessions()


def run_closing(call: Any) -> Any:
    """``asyncio.run(call)``, closing the pooled sessions ``call`` opened before the loop closes
    (:func:`closing_sessions`): an unclosed one makes aiohttp warn when it is collected.

    Hold the clients ``call`` uses in a variable of the caller, not only in ``call``'s arguments:
    ``close_sessions`` finds a session through its client's transport, which it holds by a weak
    reference, and a client only ``call`` held is gone (its session still open) when ``call`` returns."""
    return asyncio.run(closing_sessions(call))


def stop_a_run(argv: list[str], cwd: Path, *, ready: Callable[[], bool], signum: int) -> tuple[int, str]:
    """Start the pytest run ``argv`` in ``cwd`` (a fake key, no PYTEST_ADDOPTS), send it ``signum`` once
    ``ready()`` (asked for up to 60 s; a test fails when it never is), and return its exit status and output."""
    import time

    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY, PYTEST_ADDOPTS="")
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not ready():
            if time.monotonic() > deadline:
                pytest.fail("the run never got ready to be stopped")
            time.sleep(0.05)
        proc.send_signal(signum)
        output, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, output
