"""The adversarial corpus (``adversarial/*.py``, classes in ``adversarial/manifest.json``) through the
three ways model code reaches the sandbox: the Python API (``run_assert_tests``), a suite scored from
pre-recorded replies (``ifbench.unit_tests``), and the agents' bash tool.

Each program defines a wrong ``add`` and attacks: forging verdicts, signalling the parent, writing to
the host, switching off the audit hook, leaving its namespaces, reaching the network, reading secrets,
exhausting resources.  Contained means, for every program on every path: no test passes, the host's
sentinel directory and paths are unchanged, the decoy "parent" and the listener saw nothing, the fake
API key appears in no output, and no process of it survives.  Every path runs on both sandbox backends
(``sandbox_backend``: bubblewrap, and docker on a private engine) with the same expectations.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_ifbench.agents.options import AgentOptions
from pytest_ifbench.agents.tools import ToolContext, run_bash
from pytest_ifbench.agents.workspace import Workspace
from pytest_ifbench.sandbox import SandboxLimits, current_backend, run_assert_tests
from tests._support import write_suite
from tests.sandbox._support import shared_memory_to_myself
from tests.sandbox.backend_fixtures import docker_host, sandbox_backend  # noqa: F401 -- fixtures

#: Every test here runs on each backend (the fixture makes it the process's for the test).
pytestmark = pytest.mark.usefixtures("sandbox_backend")

CORPUS = Path(__file__).with_name("adversarial")
MANIFEST = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
TESTS: list[str] = MANIFEST["tests"]
LIMITS = SandboxLimits(timeout=3.0, cpu_seconds=3, memory_mb=256, disk_mb=8, file_size_mb=4,
                       max_output_bytes=100_000)
SECRET = "sk-ifbench-adversarial-" + os.urandom(8).hex()
#: Host paths a program might manage to create outside the sentinel directory.
OUTSIDE = ("/tmp/ifbench-pwned*", "/etc/ifbench-pwned*", "/root/ifbench-pwned*", "/work/ifbench-pwned*",
           "/ifbench-pwned*")
SURVIVOR = b"ifbench-adv-survivor"


@dataclass
class Arena:
    """The host side the programs attack: a sentinel directory, a decoy process holding the secret in
    its environment, a 127.0.0.1 listener counting connections."""

    sentinel: Path
    decoy: subprocess.Popen
    port: int
    connections: list[bytes] = field(default_factory=list)

    def program(self, name: str) -> str:
        text = (CORPUS / f"{name}.py").read_text(encoding="utf-8")
        for key, value in (("__SENTINEL__", str(self.sentinel)), ("__DECOY_PID__", str(self.decoy.pid)),
                           ("__PYTEST_PID__", str(os.getpid())), ("__PORT__", str(self.port))):
            text = text.replace(key, value)
        return text

    def state(self) -> dict[str, object]:
        tree = {}
        for path in sorted(self.sentinel.rglob("*")):
            st = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
            tree[str(path)] = (st.st_mode, st.st_size, digest)
        tree["<mode>"] = self.sentinel.stat().st_mode
        outside = sorted(p for pattern in OUTSIDE for p in _glob(pattern))
        return {"tree": tree, "outside": outside}

    def assert_intact(self, before: dict[str, object]) -> None:
        assert self.state() == before, "the host changed"
        assert self.decoy.poll() is None, "the decoy parent was killed"
        assert self.connections == [], "the host listener was reached"
        assert _survivors() == [], "a sandboxed process outlived its run"


def _glob(pattern: str) -> list[str]:
    import glob

    return glob.glob(pattern)


def _survivors() -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if SURVIVOR in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.fixture(autouse=True)
def _host_shared_memory_to_this_test() -> Iterator[None]:
    """Hostile programs fill their tmpfs-backed workspaces and make memfds (under bubblewrap nothing caps
    them): up to ~1.3 GB of the host's shared memory, which the tests that measure it must not see."""
    with shared_memory_to_myself():
        yield


@pytest.fixture(scope="module")
def arena() -> Iterator[Arena]:
    sentinel = Path(tempfile.mkdtemp(prefix="ifbench-sentinel-"))
    (sentinel / "keep.txt").write_text("keep me\n")
    (sentinel / "secret.txt").write_text(SECRET)
    (sentinel / "secret.txt").chmod(0o600)
    (sentinel / "subdir").mkdir()
    decoy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                             env={"PATH": "/usr/bin:/bin", "IFBENCH_FAKE_API_KEY": SECRET})
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    arena = Arena(sentinel=sentinel, decoy=decoy, port=listener.getsockname()[1])
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            conn.settimeout(0.5)
            try:
                arena.connections.append(conn.recv(100) or b"<connected>")
            except OSError:
                arena.connections.append(b"<connected>")
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    old = os.environ.get("IFBENCH_FAKE_API_KEY")
    os.environ["IFBENCH_FAKE_API_KEY"] = SECRET
    try:
        yield arena
    finally:
        if old is None:
            os.environ.pop("IFBENCH_FAKE_API_KEY", None)
        else:
            os.environ["IFBENCH_FAKE_API_KEY"] = old
        stop.set()
        thread.join()
        listener.close()
        decoy.kill()
        decoy.wait()
        import shutil

        shutil.rmtree(sentinel, ignore_errors=True)


def test_the_corpus_covers_every_class():
    programs = MANIFEST["programs"]
    assert len(programs) >= 40
    assert sorted(p.stem for p in CORPUS.glob("*.py")) == sorted(programs)
    assert {p["class"] for p in programs.values()} == {
        "forged-result", "signal-parent", "write-outside", "audit-hook", "namespace-escape", "network",
        "secrets", "resources"}


def test_the_tests_pass_for_an_honest_program():
    """The yardstick: the same tests do pass for a correct ``add`` (so failures below are containment)."""
    run = run_assert_tests("def add(a, b):\n    return a + b\n", TESTS, limits=LIMITS)
    assert run.passed, run.summary()
    assert all(o.trusted for o in run.outcomes)


@pytest.mark.slow
def test_the_python_api_contains_every_program(arena):
    before = arena.state()
    names = sorted(MANIFEST["programs"])
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = dict(zip(names, pool.map(lambda n: run_assert_tests(arena.program(n), TESTS, limits=LIMITS), names)))
    for name, run in runs.items():
        assert not any(o.passed for o in run.outcomes), (name, run.summary())
        text = json.dumps([run.result.stdout, run.result.stderr, run.load_error, [o.message for o in run.outcomes]])
        assert SECRET not in text, name
        assert "ESCAPED" not in run.result.stdout, (name, run.result.stdout)
        assert run.result.duration < LIMITS.timeout + 3, name
    arena.assert_intact(before)


@pytest.mark.slow
def test_a_suite_contains_every_program(arena, pytester):
    before = arena.state()
    names = sorted(MANIFEST["programs"])
    instances = "".join(
        f"  - id: {name}\n    prompt: write add\n    checks:\n"
        f"      - {{id: functional, verifier: ifbench.unit_tests, params: {{tests: {json.dumps(TESTS)}}}}}\n"
        for name in names)
    header = "ifbench: 1\nbenchmark: adversarial\ninstances:\n"
    write_suite(pytester.path, "suites/adversarial.yaml", header + instances)
    replies = [json.dumps({"id": n, "response": f"```python\n{arena.program(n)}```\n"}) for n in names]
    (pytester.path / "replies.jsonl").write_text("\n".join(replies) + "\n")
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--ifbench-responses=replies.jsonl",
                                "--ifbench-summary=", "--ifbench-sandbox-timeout=3", "-n", "2", "-rA",
                                f"--ifbench-sandbox={current_backend().name}")
    output = result.stdout.str() + result.stderr.str()
    outcomes = result.parseoutcomes()
    assert "passed" not in outcomes and "error" not in outcomes, outcomes
    failed = {line.split("::")[1].split()[0] for line in output.splitlines() if line.startswith("FAILED suites/")}
    assert failed == set(names), output[-3000:]
    assert SECRET not in output
    arena.assert_intact(before)
    if current_backend().name == "docker":  # the workers ran the code in containers and removed them at exit
        import docker

        assert docker.from_env().containers.list(all=True, filters={"label": "pytest-ifbench.sandbox"}) == []


@pytest.mark.slow
def test_the_agents_bash_tool_contains_every_program(arena, tmp_path):
    before = arena.state()
    names = sorted(MANIFEST["programs"])
    options = AgentOptions(command_timeout=3.0, memory_mb=256, max_processes=64, max_output_chars=20_000)

    async def one(name: str) -> str:
        env = tmp_path / name
        env.mkdir()
        (env / "main.py").write_text(arena.program(name) + "\nprint(add(2, 3))\n")
        with Workspace.create(env, parent=tmp_path) as ws:
            result = await run_bash({"command": "python3 main.py; echo exit=$?"}, ToolContext(workspace=ws,
                                                                                            options=options))
            return result.content

    async def all_of_them() -> list[str]:
        gate = asyncio.Semaphore(4)

        async def gated(name: str) -> str:
            async with gate:
                return await one(name)

        return await asyncio.gather(*(gated(n) for n in names))

    for name, content in zip(names, asyncio.run(all_of_them())):
        assert SECRET not in content, name
        assert "ESCAPED" not in content, (name, content[-500:])
        assert "exit=127" not in content and "can't open file" not in content, (name, content[-500:])  # it ran
    arena.assert_intact(before)
