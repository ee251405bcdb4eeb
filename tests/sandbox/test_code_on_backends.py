"""Model-written code on the chosen backend (``--ifbench-sandbox``): the same verdicts on docker as on
bubblewrap, the pooled runs leave nothing behind for the next job, the report channel stays write-only,
no fallback, and what only a cgroup caps (shared memory held by many processes, page cache)."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_ifbench.sandbox import (
    SandboxLimits,
    SandboxUnavailable,
    _code_runs,
    make_backend,
    run_assert_tests,
    run_python,
    run_stdio_tests,
    use_backend,
)
from pytest_ifbench.sandbox._code_runs import close_all, pool_for
from pytest_ifbench.sandbox.backend import RunDirs, SandboxRun
from tests._support import write_suite
from tests.sandbox._support import (
    Sampler,
    container_pid,
    host_shared_memory,
    memfd_holders,
    memory_files,
    shared_memory_to_myself,
)
from tests.sandbox.backend_fixtures import backend_in_use, docker_host  # noqa: F401 -- fixture

DOUBLES = [{"input": "2", "output": "4"}, {"input": "5", "output": "10"}]
LIMITS = SandboxLimits(timeout=6.0, cpu_seconds=1, memory_mb=256, disk_mb=8, file_size_mb=4, max_output_bytes=20_000)

#: (name, how it runs, code, tests or cases): behaviours whose verdicts must not depend on the backend.
CORPUS: list[tuple[str, str, str, list]] = [
    ("passes", "asserts", "def add(a, b):\n    return a + b\n", ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]),
    ("wrong", "asserts", "def add(a, b):\n    return a - b\n", ["assert add(1, 2) == 3", "assert add(2, 0) == 2"]),
    ("raises", "asserts", "def add(a, b):\n    raise ValueError('no')\n", ["assert add(1, 2) == 3"]),
    ("does not load", "asserts", "def add(a, b) return a\n", ["assert add(1, 2) == 3"]),
    ("exits while loading", "asserts", "raise SystemExit(4)\n", ["assert True"]),
    ("loops in one test", "asserts", "def spin():\n    while True:\n        pass\n",
     ["assert spin() is None", "assert 1 + 1 == 2"]),
    ("sleeps in one test", "asserts", "import time\n", ["time.sleep(60)", "assert True"]),
    ("allocates too much", "asserts", "def big():\n    return bytearray(1 << 30)\n", ["assert len(big()) > 0"]),
    ("os._exit in a test", "asserts", "import os\n", ["os._exit(0)", "assert True"]),
    ("unittest-style", "asserts", "def f(x):\n    return x * 2\n",
     ["import io, unittest\nclass T(unittest.TestCase):\n    def test(self):\n        self.assertEqual(f(2), 4)\n"
      "r = unittest.TextTestRunner(stream=io.StringIO()).run(unittest.defaultTestLoader.loadTestsFromTestCase(T))\n"
      "assert r.wasSuccessful()\n"]),
    ("writes files", "asserts",
     "import os\ndef keep():\n    open('a.txt', 'w').write('x')\n    open('/tmp/b.txt', 'w').write('y')\n"
     "    return sorted(os.listdir('.'))\n", ["assert keep() == ['a.txt']"]),
    ("writes outside", "asserts", "def w():\n    open('/etc/ifbench-x', 'w')\n", ["w()"]),
    ("forks", "asserts", "import os\ndef f():\n    return os.fork()\n", ["f()"]),
    ("network", "asserts", "import socket\ndef f():\n    socket.create_connection(('1.1.1.1', 53), 1)\n", ["f()"]),
    ("sees its interpreter's packages, not the rest of its environment", "asserts",
     "import os, sys\nimport yaml\ndef seen():\n    return [p for p in ('bin/activate', 'bin/pip', '.env') "
     "if os.path.exists(os.path.join(sys.prefix, p))]\n",
     ["assert seen() == []", "assert yaml.safe_load('a: 1') == {'a': 1}"]),
    ("stdio right", "stdio", "print(int(input()) * 2)\n", DOUBLES),
    ("stdio wrong", "stdio", "print(int(input()) + 2)\n", DOUBLES),
    ("stdio crashes", "stdio", "print(1 / 0)\n", [{"input": "", "output": "1"}]),
    ("stdio floods", "stdio", "while True:\n    print('spam' * 100)\n", [{"input": "", "output": "x"}]),
    ("stdio cpu", "stdio", "while True:\n    pass\n", [{"input": "", "output": "x"}]),
]


def _same_run(message: str) -> str:
    """A message without what varies from one run to the next (a time slice's length)."""
    return re.sub(r"\d+\.\d+ s\b", "N s", message)


def _verdicts() -> dict[str, tuple]:
    out = {}
    for name, how, code, tests in CORPUS:
        run = (run_assert_tests(code, tests, limits=LIMITS) if how == "asserts"
               else run_stdio_tests(code, tests, limits=LIMITS))
        out[name] = (run.passed, run.load_error is None, run.result.limit,
                     tuple((o.name, o.passed, o.trusted, _same_run(o.message)) for o in run.outcomes))
    return out


class ThroughTheSeam:
    """bubblewrap reached only through the backend interface (what any backend but the built-in gets)."""

    name = "bubblewrap-through-the-seam"

    def __init__(self) -> None:
        self.inner = make_backend("bubblewrap")

    def problem(self) -> str | None:
        return self.inner.problem()

    def open(self, dirs: RunDirs) -> SandboxRun:
        return self.inner.open(dirs)


@pytest.fixture
def docker(docker_host, monkeypatch) -> Iterator[object]:  # noqa: F811 -- the fixture above
    monkeypatch.setenv("DOCKER_HOST", docker_host)
    with backend_in_use("docker") as backend:
        yield backend


@pytest.fixture(scope="module")
def on_bubblewrap() -> dict[str, tuple]:
    previous = use_backend(make_backend("bubblewrap"))
    try:
        return _verdicts()
    finally:
        use_backend(previous)


def _differences(left: dict[str, tuple], right: dict[str, tuple]) -> dict[str, tuple]:
    return {name: (left[name], right[name]) for name in left if left[name] != right[name]}


def test_the_corpus_has_passes_and_failures_of_every_kind(on_bubblewrap):
    """The yardstick: the corpus is not trivially all-fail (so equal verdicts below mean something)."""
    assert on_bubblewrap["passes"][0] and on_bubblewrap["stdio right"][0]
    # a virtual environment's bin/activate (where keys are exported) is not shown; its packages import
    assert on_bubblewrap["sees its interpreter's packages, not the rest of its environment"][0]
    assert {v[2] for v in on_bubblewrap.values()} >= {None, "timeout", "output", "cpu", "memory"}
    assert not on_bubblewrap["does not load"][1]
    assert on_bubblewrap["wrong"][3][0][1] is False and on_bubblewrap["wrong"][3][1][1] is True


def test_docker_gives_the_verdicts_bubblewrap_gives(on_bubblewrap, docker):
    assert _differences(on_bubblewrap, _verdicts()) == {}


def test_any_backend_through_the_seam_gives_the_same_verdicts(on_bubblewrap):
    previous = use_backend(ThroughTheSeam())
    try:
        assert _differences(on_bubblewrap, _verdicts()) == {}
    finally:
        close_all()
        use_backend(previous)


def test_a_pooled_run_leaves_nothing_to_the_next_job(docker):
    """Files anywhere writable, System V IPC objects, POSIX message queues: the next job of the same
    container sees none of them (under bubblewrap every job has its own namespaces anyway)."""
    shared = SandboxLimits(timeout=10.0, cpu_seconds=5, allow_subprocess=True)
    leave = ("import os\nfor d in ('.', '/tmp', '/dev/shm', '/dev/mqueue'):\n"
             "    open(os.path.join(d, 'left'), 'w').close() if d != '/dev/mqueue' else None\n"
             "os.system('ipcmk -M 4096 && ipcmk -Q && ipcmk -S 1')\nprint(os.getuid())\n")
    look = ("import os\nrows = [len(open(f'/proc/sysvipc/{k}').read().splitlines()) for k in ('shm', 'msg', 'sem')]\n"
            "print(sorted(os.listdir('.')), os.listdir('/tmp'), os.listdir('/dev/shm'), rows, os.getuid())\n")
    first = run_python(leave, limits=shared)
    assert first.ok and first.stdout.count("id:") == 3, first
    second = run_python(look, limits=shared)
    assert second.ok, second
    uid = first.stdout.split()[-1]
    # /tmp holds nothing but the mount points of an interpreter or package installed below /tmp
    mounts = sorted({parts[0] for parts in _code_runs._mount_points_below_tmp()})
    assert second.stdout.startswith(f"['main.py'] {mounts} [] [1, 1, 1] "), second.stdout
    assert second.stdout.split()[-1] != uid  # what the first job left took its run away: a new one, a new uid
    assert len(pool_for(docker)) == 1
    third = run_python(look, limits=shared)
    assert third.stdout == second.stdout  # a job that left nothing leaves its run to the next one


def test_a_job_cannot_leave_the_next_one_a_full_or_read_only_dev_shm(docker):
    """The audit's attack: fill /dev/shm, or leave 100,000 empty files there (no bytes: no size cap), in
    directories made read-only. Removing them from the next job failed (read-only) and would have spent
    its time; now the next job runs in a new run, on its whole time limit, and sees an empty /dev/shm."""
    limits = SandboxLimits(timeout=20.0, cpu_seconds=15)
    attack = ("import os\nos.mkdir('/dev/shm/keep')\nopen('/dev/shm/keep/note', 'w').write('LEFT')\n"
              "for i in range(100_000):\n    open(f'/dev/shm/keep/{i}', 'w').close()\n"
              "os.chmod('/dev/shm/keep', 0o555)\nprint(len(os.listdir('/dev/shm/keep')))\n")
    assert run_python(attack, limits=limits).stdout == "100001\n"
    victim = run_python("import os, shutil\nprint(os.listdir('/dev/shm'), shutil.disk_usage('/dev/shm').used)",
                        limits=SandboxLimits(timeout=2.0))
    assert victim.ok and victim.stdout == "[] 0\n", victim
    assert victim.duration < 2.0


@pytest.mark.parametrize("how", ["killed", "removed"])
def test_a_pooled_runs_container_that_is_gone_is_replaced_for_the_next_job(docker, how):
    """Between two jobs the pooled run's container died (its first process killed, an engine restart) or was
    removed: the next job runs in a new container, never fails for it."""
    import docker as client

    assert run_python("pass", limits=LIMITS).ok
    engine = client.from_env()
    gone = engine.containers.list(filters={"label": "pytest-ifbench.sandbox"})
    assert len(gone) == 1
    if how == "killed":
        gone[0].kill()
        gone[0].wait(timeout=30)
    else:
        gone[0].remove(force=True)
    res = run_python("print(6 * 7)", limits=LIMITS)
    assert res.ok and res.stdout == "42\n", res
    now = engine.containers.list(filters={"label": "pytest-ifbench.sandbox"})
    assert [c.id for c in now] != [gone[0].id] and len(now) == 1
    assert len(pool_for(docker)) == 1  # the same pooled run, in a new container
    if how == "killed":
        assert engine.containers.list(all=True, filters={"id": gone[0].id}) == []  # the dead one was removed


def test_emptying_keeps_the_mount_points_of_an_install_below_tmp(tmp_path):
    """A checkout or venv below /tmp is bound inside the run's /tmp: deleting its mount point's
    directory on the host would unmount it in the container, so only what else is there goes."""
    (tmp_path / "head" / "pkg").mkdir(parents=True)
    (tmp_path / "head" / "junk").mkdir()
    (tmp_path / "head" / "left").write_text("x")
    (tmp_path / "other").mkdir()
    (tmp_path / "file").write_text("x")
    kept = _code_runs._empty(str(tmp_path), [("head", "pkg"), ("venv",)])
    assert kept == {"head"}
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["head", "head/pkg"]


def test_concurrent_jobs_get_runs_of_their_own(docker):
    cases = [{"input": str(i), "output": str(i)} for i in range(4)]
    code = ("import os, time\nn = input()\nopen(n, 'w').write(n)\ntime.sleep(0.3)\n"
            "print(n if os.listdir('.') == sorted(['main.py', n]) else 'shared')\n")
    run = run_stdio_tests(code, cases, limits=LIMITS)
    assert run.passed, run.summary()
    assert 1 <= len(pool_for(docker)) <= 4


def test_the_report_file_is_write_only_and_losing_it_fails(docker):
    peek = "def f():\n    return open('/home/agent/.ifbench-report').read()\n"
    run = run_assert_tests(peek, ["assert f() == ''"], limits=LIMITS)
    assert not run.passed and "Permission denied" in run.outcomes[0].message, run.summary()
    unlink = "import os\nos.unlink('/home/agent/.ifbench-report')\nopen('/home/agent/.ifbench-report', 'w')\n"
    run = run_assert_tests(unlink, ["assert 1 == 1"], limits=LIMITS)
    assert not run.passed, run.summary()  # the harness's records went to the unlinked file: nothing to pass on


def test_the_chosen_backend_unavailable_is_an_error_never_a_fallback(monkeypatch, tmp_path):
    pytest.importorskip("docker")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    previous = use_backend(make_backend("docker"))
    try:
        with pytest.raises(SandboxUnavailable, match="docker"):
            run_assert_tests("def add(a, b):\n    return a + b\n", ["assert add(1, 2) == 3"], limits=LIMITS)
        with pytest.raises(SandboxUnavailable, match="docker"):
            run_python("print(1)", limits=LIMITS)
    finally:
        use_backend(previous)


def test_a_code_suite_with_the_chosen_engine_unreachable_stops_at_start_up(pytester, monkeypatch, tmp_path):
    """No fallback under pytest either: a unit-test suite with --ifbench-sandbox=docker and no engine runs nothing."""
    pytest.importorskip("docker")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    write_suite(pytester.path, "suites/code.yaml", """
        ifbench: 1
        benchmark: code
        instances:
          - id: add
            prompt: write add
            checks:
              - {id: functional, verifier: ifbench.unit_tests, params: {tests: ["assert add(1, 2) == 3"]}}
        """)
    (pytester.path / "replies.jsonl").write_text(
        json.dumps({"id": "add", "response": "def add(a, b):\n    return a + b\n"}) + "\n")
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--ifbench-responses=replies.jsonl",
                                "--ifbench-summary=", "--ifbench-sandbox=docker")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    # stdout and stderr together: the outer session's progress line may take the terminal meanwhile
    output = result.stdout.str() + result.stderr.str()
    assert "ERROR: pytest-ifbench: --ifbench-sandbox=docker: no Docker Engine reachable at" in output, output
    assert "passed" not in output


# --- what only cgroups can cap --------------------------------------------------------------------

MEMFD = memfd_holders(20)

PAGE_CACHE = """
import sys
seen = 0
for path in sys.stdin.read().split("\\n"):
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            seen += len(chunk)
print("read", seen)
"""


def uncached_system_files(total: int) -> list[str]:
    """Large files below /usr (which every backend shows read-only) adding up to more than ``total`` bytes,
    dropped from the host's page cache first (``POSIX_FADV_DONTNEED``), so that reading them charges the
    reader's cgroup; files some process has mapped are left out (their pages would stay).  Skips the test
    when /usr holds too little."""
    mapped = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            mapped.update(line.split(None, 5)[5] for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
                          if line.count(" ") >= 5)
        except (OSError, IndexError):
            continue
    chosen, size = [], 0
    for top in ("/usr/lib", "/usr/share"):
        for folder, dirs, names in os.walk(top):
            dirs.sort()
            for name in sorted(names):
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode) or st.st_size < 4 << 20 or path in mapped:
                    continue
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)
                chosen.append(path)
                size += st.st_size
                if size > total:
                    return chosen
    pytest.skip(f"/usr holds less than {total >> 20} MiB in large files")


def test_two_gigabytes_of_memfds_in_eight_processes_stay_within_the_run_memory_cap(docker):
    """Each process stays far below RLIMIT_AS; only the run's cgroup sees the 2 GB (bubblewrap does not cap it)."""
    limits = SandboxLimits(timeout=30.0, cpu_seconds=30, memory_mb=512, file_size_mb=512, allow_subprocess=True,
                           run_memory_mb=512)
    assert run_python("pass", limits=limits).ok  # the pooled container exists, with the cap
    usage, _ = memory_files(container_pid())
    with shared_memory_to_myself():
        baseline = host_shared_memory()
        with Sampler(host_shared_memory) as host, Sampler(lambda: int(usage.read_text())) as cgroup:
            res = run_python(MEMFD, limits=limits)
    assert res.limit == "memory" and not res.ok, res
    assert res.stdout.count("held") < 8, res.stdout
    assert 0 < cgroup.peak <= 512 << 20, cgroup.peak
    assert host.peak - baseline < 768 << 20, (host.peak - baseline) >> 20  # not the 2 GB it tried
    assert run_python("print('next')", limits=limits).stdout == "next\n"  # the next job runs


def test_a_job_the_run_cgroup_kills_while_its_supervisor_lives_is_told_the_memory_limit(docker):
    """Below RLIMIT_AS but over the run's cgroup cap, the job's process is the OOM killer's choice (the
    largest), and the supervisor reports its SIGKILL: the kill is the memory limit's, as bubblewrap's
    harness would say, not an unexplained signal (CI once saw ``returncode=-9, limit=None``)."""
    limits = SandboxLimits(timeout=30.0, cpu_seconds=30, memory_mb=1024, file_size_mb=64, run_memory_mb=128)
    assert run_python("pass", limits=limits).ok  # the pooled container exists, with the cap
    for _ in range(3):  # the victim is the kernel's choice: each time the job, whose supervisor lives on
        res = run_python("b = bytearray(512 << 20)\nprint('allocated')", limits=limits)
        assert res.limit == "memory" and res.returncode is None and "allocated" not in res.stdout, res
    assert run_python("print('next')", limits=limits).stdout == "next\n"


def test_the_engine_tells_an_oom_kill_when_the_containers_cgroup_is_gone(docker_host):  # noqa: F811
    """When the OOM killer takes a container's first process, the container and its cgroup go with it and the
    command's OOM-kill count cannot be read after it ran: the engine's record of the container says why."""
    import time

    import docker as client
    from docker.types import Mount

    from pytest_ifbench.sandbox.backends._docker import SYSTEM_DIRS
    from pytest_ifbench.sandbox.backends._docker_image import ensure_image
    from pytest_ifbench.sandbox.backends._docker_supervise import engine_saw_oom

    engine = client.DockerClient(base_url=docker_host)
    mounts = [Mount(f"/{name}", f"/{name}", type="bind", read_only=True) for name in SYSTEM_DIRS
              if os.path.exists(f"/{name}")]
    seen = {}
    for name, argv in (("over the cap", ["-c", "b = bytearray(256 << 20)"]), ("exits", ["-c", "pass"]),
                       ("still running", ["-c", "import time; time.sleep(30)"])):
        container = engine.containers.create(ensure_image(engine), ["/usr/bin/python3", "-I", "-S", *argv],
                                             mounts=mounts, read_only=True, network_mode="none", mem_limit="64m",
                                             memswap_limit="64m")
        try:
            container.start()
            if name != "still running":
                container.wait(timeout=30)
            began = time.monotonic()
            seen[name] = engine_saw_oom(container, wait=0.3)
            assert time.monotonic() - began < 2, name
        finally:
            container.remove(force=True)
    assert seen == {"over the cap": True, "exits": False, "still running": False}
    assert engine_saw_oom(container) is False  # removed: the engine no longer knows it


def test_a_page_cache_heavy_job_stays_within_the_run_memory_cap(docker):
    """Reading three times the cap in files that are not in the page cache completes (the cache is charged
    to the run and reclaimed, nothing is killed) and the run's memory never exceeds the cap."""
    cap = 192
    limits = SandboxLimits(timeout=120.0, cpu_seconds=120, memory_mb=512, run_memory_mb=cap)
    assert run_python("pass", limits=limits).ok
    usage, peak_file = memory_files(container_pid())
    files = uncached_system_files(3 * cap << 20)
    with Sampler(lambda: int(usage.read_text())) as cgroup:
        res = run_python(PAGE_CACHE, stdin="\n".join(files), limits=limits)
    assert res.ok, res
    assert int(res.stdout.split()[1]) > 3 * cap << 20, res.stdout
    assert cap << 19 < cgroup.peak <= cap << 20, cgroup.peak >> 20  # charged (over half the cap), never over
    if peak_file is not None and peak_file.exists():
        assert int(peak_file.read_text()) <= cap << 20


def test_the_pools_are_closed_with_their_containers(docker):
    assert run_python("pass", limits=LIMITS).ok
    assert container_pid() > 0
    close_all()
    import docker as client

    assert client.from_env().containers.list(all=True, filters={"label": "pytest-ifbench.sandbox"}) == []
