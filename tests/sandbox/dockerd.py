"""A private Docker Engine for tests: ``dockerd --bridge=none --iptables=false`` with its own data root,
exec root, pid file and socket under a temporary directory, stopped at the end.  Needs root and
Debian's ``docker.io``; :func:`dockerd_problem` says why not otherwise (tests skip with it).  The same
for Podman's Docker-compatible API service (:func:`private_podman`, Debian's ``podman`` with ``runc``),
and a small local image with python3 (:func:`python_image`)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager


def dockerd_problem() -> str | None:
    if shutil.which("dockerd") is None:
        return "dockerd is not installed (apt-get install docker.io)"
    if os.geteuid() != 0:
        return "starting dockerd needs root"
    try:
        import docker  # noqa: F401
    except ImportError:
        return "the docker client is not installed (pip install 'pytest-ifbench[docker]')"
    return None


@contextmanager
def _engine_service(name: str, argv: Callable[[str, str], list[str]],
                    leftovers: Callable[[str], None] = lambda root: None) -> Iterator[str]:
    """Start an engine's API service with its own state under a temporary directory (``argv(root, sock)``),
    wait for its socket, yield its ``DOCKER_HOST``; at the end stop it, clean ``leftovers(root)``, unmount
    whatever it left mounted below the root and remove the root."""
    root = tempfile.mkdtemp(prefix=f"ifb-{name}-")
    sock = os.path.join(root, f"{name}.sock")
    log = open(os.path.join(root, "log"), "wb")  # noqa: SIM115 -- lives as long as the service
    # cwd: podman's conmon writes an empty ``oom`` file into its working directory when a container's
    # cgroup runs out of memory (it appeared in the checkout after the memory tests)
    proc = subprocess.Popen(argv(root, sock), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            cwd=root)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(sock):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start: {open(os.path.join(root, 'log')).read()[-2000:]}")
            time.sleep(0.1)
        yield f"unix://{sock}"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        leftovers(root)
        _unmount_below(root)
        shutil.rmtree(root, ignore_errors=True)


def _unmount_below(root: str) -> None:
    """Lazily unmount every mount point below ``root``, deepest first (dockerd mounts its data and exec
    roots, podman its ``storage/overlay``): a leftover mount keeps the directory from being removed."""
    with open("/proc/self/mounts") as fh:
        points = [line.split()[1] for line in fh if line.split()[1].startswith(root + "/")]
    for point in sorted(points, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def private_dockerd() -> AbstractContextManager[str]:
    """Start the engine; yields its ``DOCKER_HOST`` (``unix://...``)."""
    return _engine_service("dockerd", lambda root, sock: [
        "dockerd", "--bridge=none", "--iptables=false", "--ip6tables=false", "--data-root", f"{root}/data",
        "--exec-root", f"{root}/exec", "--pidfile", f"{root}/pid", "-H", f"unix://{sock}"])


def podman_problem() -> str | None:
    if shutil.which("podman") is None:
        return "podman is not installed (apt-get install podman)"
    if shutil.which("runc") is None:
        return "runc is not installed (apt-get install runc)"
    if os.geteuid() != 0:
        return "these tests start podman's API service as root"
    try:
        import docker  # noqa: F401
    except ImportError:
        return "the docker client is not installed (pip install 'pytest-ifbench[docker]')"
    return None


def private_podman() -> AbstractContextManager[str]:
    """Podman's Docker-compatible API service (``podman system service``, runtime runc, its own storage
    and socket under a temporary directory), stopped at the end; yields its ``DOCKER_HOST``."""
    return _engine_service("podman", lambda root, sock: [
        "podman", "--runtime", "runc", "--root", f"{root}/storage", "--runroot", f"{root}/run",
        "--tmpdir", f"{root}/tmp",  # its own event log: the shared /run/libpod one rotates at 1 MB mid-run
        "--cgroup-manager", "cgroupfs", "--events-backend", "file", "system", "service", "--time=0",
        f"unix://{sock}"],
        leftovers=_kill_mentioning)  # conmon monitors outlive the service (they wait to report exits)


def _kill_mentioning(root: str) -> None:
    """SIGKILL, by pid, the processes the service started for this root (their command lines name it)."""
    needle = root.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if needle in fh.read():
                    os.kill(int(entry), signal.SIGKILL)
        except OSError:
            continue


@contextmanager
def private_engine(kind: str) -> Iterator[str]:
    """``private_dockerd`` or ``private_podman`` by name; skips the test with the reason when unavailable."""
    import pytest

    problem = dockerd_problem() if kind == "dockerd" else podman_problem()
    if problem is not None:
        pytest.skip(problem)
    with (private_dockerd() if kind == "dockerd" else private_podman()) as host:
        yield host

#: The marker file only the test image holds (the host has none): a command that reads it ran on the image.
IMAGE_MARKER = "/etc/ifbench-test-image"


def python_image(client, tag: str = "ifbench-test-python:1") -> str:
    """A small local image (``docker import``, no registry) with the host's ``python3`` and ``bash`` and
    nothing else of the host but the libraries they load, plus :data:`IMAGE_MARKER`; imported once per
    engine.  Stands for a user's toolchain image: the docker backend must use it as it is."""
    import io
    import sys
    import tarfile

    try:
        client.images.get(tag)
        return tag
    except Exception:  # noqa: BLE001 -- not there yet
        pass
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    files = ["/usr/bin/bash", f"/usr/bin/{version}", "/usr/lib64/ld-linux-x86-64.so.2"]
    files += [os.path.join("/usr/lib/x86_64-linux-gnu", name) for name in os.listdir("/usr/lib/x86_64-linux-gnu")
              if name.split(".so")[0] in ("libc", "libm", "libz", "libexpat", "libffi", "libtinfo")]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        def link(name: str, target: str) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)

        for name, target in (("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64"),
                             ("usr/bin/python3", version), ("usr/bin/sh", "bash")):
            link(name, target)
        for path in files:
            tar.add(os.path.realpath(path), arcname=path.lstrip("/"))
        stdlib = f"/usr/lib/{version}"
        tar.add(stdlib, arcname=stdlib.lstrip("/"),
                filter=lambda info: None if "/test/" in info.name + "/" or "-packages" in info.name else info)
        marker = b"from the named image\n"
        info = tarfile.TarInfo(IMAGE_MARKER.lstrip("/"))
        info.size = len(marker)
        tar.addfile(info, io.BytesIO(marker))
        for name in ("tmp", "etc/ssl"):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if name == "tmp" else 0o755
            tar.addfile(info)
    client.api.import_image_from_data(buf.getvalue(), repository=tag)  # the tag in repo: Podman ignores ``tag``
    return tag
