"""The docker backend's default image, built locally without a registry, and the start-up reaper.

The image is a skeleton: the mount points of a read-only root (the host's system directories are
bound over them at run time, its ``/bin``-style symbolic links copied as links) and nothing else,
imported from a tar built here (``docker import``), tagged by a digest of its contents and reused
while that tag exists.
"""

from __future__ import annotations

import hashlib
import io
import os
import socket
import tarfile
from typing import Any

from ..backend import HOME, MOUNT, SYSTEM_DIRS

__all__ = ["LABEL", "REPOSITORY", "ensure_image", "reap_leftovers"]

#: The label of every container the backend starts: ``<host>:<pid>`` of the process that owns it.
LABEL = "pytest-ifbench.sandbox"
REPOSITORY = "pytest-ifbench-sandbox"


def _skeleton() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add(name: str, *, mode: int = 0o755, link: str | None = None) -> None:
            info = tarfile.TarInfo(name.strip("/"))
            info.mtime = 0
            info.mode = mode
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
            else:
                info.type = tarfile.DIRTYPE
            tar.addfile(info)

        for name in SYSTEM_DIRS:
            host = f"/{name}"
            if os.path.islink(host):
                add(name, link=os.readlink(host))
            elif os.path.isdir(host):
                add(name)
        for name in (MOUNT, "/home", HOME, "/proc", "/dev", "/sys", "/run", "/run/ifbench", "/run/ifbench/ctl"):
            add(name)
        add("/tmp", mode=0o1777)
    return buf.getvalue()


def ensure_image(client: Any) -> str:
    """The default image's tag, importing it first when the engine does not have it."""
    data = _skeleton()
    tag = f"{REPOSITORY}:{hashlib.sha256(data).hexdigest()[:16]}"
    try:
        client.images.get(tag)
    except Exception:  # noqa: BLE001 -- docker.errors.ImageNotFound; the import below says what is wrong
        # The tag inside ``repo``: Podman's Docker-compatible API ignores a separate ``tag``.
        client.api.import_image_from_data(data, repository=tag)
        client.images.get(tag)
    return tag


def reap_leftovers(client: Any) -> list[str]:
    """Remove the containers of processes of this host that are gone (a pytest killed with ``-9``)."""
    host = socket.gethostname()
    removed = []
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        owner_host, _, pid = str(container.labels.get(LABEL, "")).rpartition(":")
        if owner_host != host or not pid.isdigit() or _alive(int(pid)):
            continue
        container.remove(force=True)
        removed.append(container.id)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
