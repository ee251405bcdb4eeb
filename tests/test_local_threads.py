"""The embedded model's thread count: fastest under load, explicit override respected."""

from __future__ import annotations

import pytest

from pytest_ifbench.models.local import MAX_THREADS, default_threads


@pytest.fixture(autouse=True)
def _no_overrides(monkeypatch):
    monkeypatch.delenv("IFBENCH_LOCAL_THREADS", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


@pytest.mark.parametrize(("cpus", "load", "threads"), [
    (2, 0.05, 2),   # idle 2-core machine: both cores
    (2, 1.0, 1),    # the other core busy: one thread is twice as fast
    (2, 3.5, 1),    # overloaded: never fewer than one
    (8, 0.2, MAX_THREADS),  # many idle cores: capped
    (8, 5.0, 3),
    (1, 0.0, 1),
])
def test_threads_follow_idle_cores(cpus, load, threads):
    assert default_threads(load=load, cpus=cpus) == threads


def test_xdist_workers_get_one_thread(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    assert default_threads(load=0.0, cpus=8) == 1


def test_explicit_override_wins(monkeypatch):
    monkeypatch.setenv("IFBENCH_LOCAL_THREADS", "3")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    assert default_threads(load=7.0, cpus=2) == 3


def test_reads_the_machine_when_not_told():
    assert 1 <= default_threads() <= MAX_THREADS


def test_busy_fraction_counts_working_ticks_not_io_wait(monkeypatch):
    from pytest_ifbench.models import local as _local_model

    # user nice system idle iowait irq softirq steal: 50 busy, 150 idle or waiting on I/O of 200 ticks
    samples = iter([(0, 0), (50, 200)])
    monkeypatch.setattr(_local_model, "_cpu_times", lambda: next(samples))
    assert _local_model.busy_fraction(window=0) == 0.25


def test_an_idle_machine_with_io_wait_gets_every_core(monkeypatch):
    from pytest_ifbench.models import local as _local_model

    monkeypatch.setattr(_local_model, "busy_fraction", lambda: 0.02)
    monkeypatch.setattr(_local_model.os, "getloadavg", lambda: (1.0, 1.0, 1.0))  # what misled the old rule
    assert default_threads(cpus=2) == 2
    monkeypatch.setattr(_local_model, "busy_fraction", lambda: 0.5)
    assert default_threads(cpus=2) == 1


def test_cpu_times_reads_proc_stat():
    from pytest_ifbench.models import local as _local_model

    times = _local_model._cpu_times()
    if times is None:
        pytest.skip("no /proc/stat here")
    busy, total = times
    assert 0 <= busy <= total
