"""The sandbox's value types: limits going in, results coming out.

Plain frozen dataclasses with no behaviour beyond validation and summaries, so
every other module of the package (supervision, the Python front ends) and
every caller can share them without importing any machinery.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxLimits:
    """Resource limits for one sandboxed child process.

    * ``timeout`` -- wall-clock seconds for the whole child (startup included).
      When exceeded the child's whole process group is SIGKILLed and the
      result's ``limit`` is ``"timeout"``.  In :func:`run_assert_tests` each
      test additionally gets a time slice of this budget (see there).
    * ``cpu_seconds`` -- ``RLIMIT_CPU`` soft limit (hard limit = soft + 2 s).
    * ``memory_mb`` -- ``RLIMIT_AS`` (address space); allocations beyond it raise
      ``MemoryError`` in the child.
    * ``file_size_mb`` -- ``RLIMIT_FSIZE``; larger writes fail with ``EFBIG``.
    * ``max_output_bytes`` -- cap applied to stdout and to stderr separately;
      when a stream exceeds it the child is killed, the stream is truncated to
      the cap and ``limit`` is ``"output"``.
    * ``disk_mb`` -- size of each of the two tmpfs mounts the child may write
      (its working directory and ``/tmp``): a kernel quota, writes beyond it
      fail with ``ENOSPC``.  Nothing else is writable.
    * ``processes`` -- ``RLIMIT_NPROC`` of the run's own host uid (processes
      *and* threads; when the caller is not root the sandbox runs as the
      caller's uid and all of its processes count).
    * ``allow_subprocess`` -- when False (default) the child may not fork,
      exec, spawn or use ``subprocess``/``os.system``/``pty`` (audit hook plus
      seccomp where available).  When True grand-children are contained by the
      OS layer only (namespaces, rlimits, the sandbox's PID namespace killed at
      the end) -- which is the layer that matters.
    * ``run_memory_mb`` -- on a backend with cgroups (``--ifbench-sandbox=docker``):
      the memory of the whole run, all its processes, shared memory and page
      cache included; over it the run is killed (``limit="memory"``).  None:
      ``memory_mb + 2 * disk_mb + 256``.  Bubblewrap has no cgroup and ignores it.
    """

    timeout: float = 10.0
    cpu_seconds: int = 10
    memory_mb: int = 1024
    file_size_mb: int = 16
    max_output_bytes: int = 200_000
    disk_mb: int = 64
    processes: int = 256
    allow_subprocess: bool = False
    run_memory_mb: int | None = None

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise ValueError("SandboxLimits.timeout must be > 0")
        if self.run_memory_mb is not None and self.run_memory_mb <= 0:
            raise ValueError("SandboxLimits.run_memory_mb must be > 0")
        for name in ("cpu_seconds", "memory_mb", "file_size_mb", "max_output_bytes", "disk_mb", "processes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"SandboxLimits.{name} must be > 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxResult:
    """Outcome of one child process.

    * ``returncode`` -- the child's exit status (negative signal number when it
      died from a signal, e.g. ``-24`` for SIGXCPU); ``None`` when the sandbox
      itself killed the child because of the wall-clock timeout or the output
      cap (there is no meaningful exit status then).
    * ``stdout`` / ``stderr`` -- decoded as UTF-8 (invalid bytes replaced),
      each truncated to ``max_output_bytes`` bytes.
    * ``duration`` -- wall-clock seconds from process start to reaping.
    * ``limit`` -- ``None``, or which limit ended/affected the run:
      ``"timeout"`` (wall clock, or a per-test time slice in
      :func:`run_assert_tests`), ``"cpu"``, ``"memory"`` (a ``MemoryError``
      escaped the candidate code, or a cgroup backend killed the run at
      ``run_memory_mb``), ``"output"`` or, on a backend other than bubblewrap
      started directly, ``"disk"`` (the run's directories outgrew their budget).
    """

    returncode: int | None
    stdout: str
    stderr: str
    duration: float
    limit: str | None

    @property
    def ok(self) -> bool:
        """True iff the process exited with status 0 and no limit was hit."""
        return self.returncode == 0 and self.limit is None


@dataclass(frozen=True, slots=True, kw_only=True)
class TestOutcome:
    """Result of one test.

    ``name`` is ``"test_<i>"`` for assert tests and ``"case_<i>"`` for stdio
    cases (``i`` = index in the given sequence).  ``message`` is ``""`` when the
    test passed, otherwise the assertion text (with left/right values for
    simple comparisons), a traceback tail, an expected-vs-got diff, or why the
    test did not run.  ``trusted`` is True when the verdict rests on a check the
    parent decided itself on a plain value (an assert comparing with an
    expected value the sandboxed process never saw, see
    ``pytest_ifbench.sandbox._checks``), False when it is the sandboxed
    process's own word (stdio cases are always compared by the parent).
    """

    __test__ = False  # not a pytest test class

    name: str
    passed: bool
    message: str
    trusted: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class TestRun:
    """Outcomes of a test run plus the underlying process result.

    ``load_error`` is set when the candidate code itself failed to run
    (SyntaxError, exception or ``SystemExit`` while loading, process death
    during loading); the tests are then all reported as failed/not run.
    """

    __test__ = False  # not a pytest test class

    outcomes: tuple[TestOutcome, ...]
    load_error: str | None
    result: SandboxResult

    @property
    def passed(self) -> bool:
        """True iff the code loaded, no limit was hit, there is at least one
        outcome and every outcome passed."""
        return (
            self.load_error is None
            and self.result.limit is None
            and bool(self.outcomes)
            and all(o.passed for o in self.outcomes)
        )

    def summary(self) -> str:
        """Short one-line human description, e.g.
        ``"3/4 tests passed; test_2: AssertionError: ..."``."""
        if self.load_error is not None:
            text = f"load error: {_last_line(self.load_error)}"
            if self.result.limit:
                text += f" (limit: {self.result.limit})"
            return text
        total = len(self.outcomes)
        if total == 0:
            return "no tests were run"
        good = sum(o.passed for o in self.outcomes)
        text = f"{good}/{total} tests passed"
        if self.result.limit:
            text += f" (limit: {self.result.limit})"
        failing = [o for o in self.outcomes if not o.passed]
        if failing:
            first = failing[0]
            msg = _first_line(first.message)
            if len(msg) > 200:
                msg = msg[:197] + "..."
            text += f"; {first.name}: {msg}"
            if len(failing) > 1:
                text += f" (+{len(failing) - 1} more failing)"
        return text


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return text.strip()


def _last_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return text.strip()

