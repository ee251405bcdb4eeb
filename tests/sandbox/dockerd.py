"""A private Docker Engine for tests: ``dockerd --bridge=none --iptables=false`` with its own data root,
exec root, pid file and socket under a temporary directory, stopped at the end.  Needs root and
Debian's ``docker.io``; :func:`dockerd_problem` says why not otherwise (tests skip with it)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager


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
def private_dockerd() -> Iterator[str]:
    """Start the engine; yields its ``DOCKER_HOST`` (``unix://...``)."""
    root = tempfile.mkdtemp(prefix="ifb-dockerd-")
    sock = os.path.join(root, "docker.sock")
    log = open(os.path.join(root, "log"), "wb")  # noqa: SIM115 -- lives as long as the daemon
    proc = subprocess.Popen(
        ["dockerd", "--bridge=none", "--iptables=false", "--ip6tables=false", "--data-root", f"{root}/data",
         "--exec-root", f"{root}/exec", "--pidfile", f"{root}/pid", "-H", f"unix://{sock}"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(sock):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dockerd did not start: {open(os.path.join(root, 'log')).read()[-2000:]}")
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
        subprocess.run(["umount", "-R", "-l", f"{root}/data", f"{root}/exec"], capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)
