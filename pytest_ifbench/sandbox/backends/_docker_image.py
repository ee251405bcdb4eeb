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
from ._process_identity import ended, start_time

__all__ = ["LABEL", "REPOSITORY", "ensure_image", "owner_label", "reap_leftovers"]

#: The label of every container the backend starts: ``<host>:<pid>:<start time>`` of the process that
#: owns it (:func:`owner_label`; ``<host>:<pid>`` before the start time was added).
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


def owner_label() -> str:
    """The :data:`LABEL` value of this process's containers."""
    return f"{socket.gethostname()}:{os.getpid()}:{start_time(os.getpid())}"


def reap_leftovers(client: Any) -> list[str]:
    """Remove the containers of processes of this host that are gone (a pytest killed with ``-9``),
    among them those whose pid now belongs to a later process; the removed containers' ids."""
    removed = []
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        if _owner_ended(str(container.labels.get(LABEL, ""))):
            container.remove(force=True)
            removed.append(container.id)
    return removed


def _owner_ended(label: str) -> bool:
    host, _, rest = label.partition(":")
    pid, _, start = rest.partition(":")
    if not pid.isdigit() or not (start.isdigit() or start in ("", "None")):
        return False  # not a label this backend wrote: leave it alone
    return ended(host, int(pid), int(start) if start.isdigit() else None)
