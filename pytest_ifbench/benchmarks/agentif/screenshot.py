"""HTML and SVG deliverables rendered to PNG with headless Chromium, so a vision judge sees the page.

The page is the agent's, and its scripts run: Chromium is model-driven code here, so it runs only
confined by bubblewrap, never on the host as it is. The confinement (:func:`_confined`):

* new user, mount, PID, network, IPC, UTS and cgroup namespaces, as uid 65534 with no capabilities and
  no further user namespaces (Chromium's own sandbox is off, ``--no-sandbox``: this one replaces it);
* a root holding only ``/usr`` (and the ``/lib``, ``/bin`` links), the directory of the Chromium binary,
  and of ``/etc`` only what Chromium reads (:data:`ETC`: fonts, the loader's cache, its own settings) --
  never the rest of ``/etc`` (``shadow``), ``/root``, ``/home``, the checkout, the run's files or other
  workspaces, so ``<iframe src="file:///etc/shadow">`` shows an error page, not the file;
* the page's own directory read-only, a private output directory, an empty ``/tmp``, a fresh profile;
  no network (and, belt and braces, a host-resolver rule that resolves nothing and a proxy that does
  not exist), no first-run, sync, component update or background networking.

A render that fails or times out gives a sentence instead of an image; a missing Chromium
(:data:`MISSING`) or bubblewrap (:data:`NO_BWRAP`) gives a sentence too -- :func:`problem` says it for the
judge input and the start-up warning. There is no unconfined fallback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
MISSING = "no screenshot: Chromium is not installed (apt-get install chromium)"
NO_BWRAP = ("no screenshot: bubblewrap is not installed, and pages are rendered only inside it "
            "(apt-get install bubblewrap)")
#: The entries of ``/etc`` Chromium is shown (each when it exists): fonts, the dynamic loader's cache and
#: configuration, the Debian launcher's settings and the alternatives its links go through, the time zone.
ETC = ("fonts", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "chromium", "chromium.d", "alternatives", "localtime")
#: The top-level directories of the system image: on merged-/usr systems links into ``/usr``.
_TOP = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: The unprivileged uid and gid Chromium runs as inside (``nobody``).
_NOBODY = "65534"
WINDOW = (1280, 900)
TIMEOUT = 60.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Shot:
    """A rendered page: ``png`` bytes, or None with ``note`` saying why."""

    png: bytes | None
    note: str


def chromium() -> str | None:
    """The Chromium executable, or None."""
    override = os.environ.get("IFBENCH_CHROMIUM")
    if override:
        return override if Path(override).exists() else None
    return next((found for name in CANDIDATES if (found := shutil.which(name))), None)


def _command(binary: str, page: Path, png: Path, profile: Path) -> list[str]:
    width, height = WINDOW
    return [
        binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-extensions", "--hide-scrollbars", "--mute-audio",
        "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
        f"--user-data-dir={profile}", f"--screenshot={png}", f"--window-size={width},{height}",
        page.as_uri(),
    ]


def problem() -> str | None:
    """None when pages can be rendered here, else the one-line reason (:data:`MISSING`, :data:`NO_BWRAP`)."""
    if chromium() is None:
        return MISSING
    if shutil.which("bwrap") is None:
        return NO_BWRAP
    return None


def _confined(bwrap: str, command: list[str], page_dir: Path, out: Path) -> list[str]:
    """``command`` inside a bubblewrap jail that shows only what Chromium needs (the module doc)."""
    args = [bwrap, "--unshare-all", "--unshare-user", "--uid", _NOBODY, "--gid", _NOBODY, "--disable-userns",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "render", "--clearenv",
            "--setenv", "HOME", str(out), "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
            "--ro-bind", "/usr", "/usr"]
    for top in _TOP:
        path = f"/{top}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for entry in ETC:
        if os.path.lexists(f"/etc/{entry}"):
            args += ["--ro-bind", f"/etc/{entry}", f"/etc/{entry}"]
    installed = os.path.dirname(os.path.realpath(command[0]))
    if not installed.startswith("/usr/"):  # e.g. /opt/google/chrome
        args += ["--ro-bind", installed, installed]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
             "--ro-bind", str(page_dir), str(page_dir), "--bind", str(out), str(out), "--chdir", str(out)]
    return [*args, "--", *command]


def render(page: Path, *, timeout: float = TIMEOUT) -> Shot:
    """Render ``page`` (HTML or SVG) at 1280x900 to PNG."""
    binary, bwrap = chromium(), shutil.which("bwrap")
    if binary is None or bwrap is None:
        return Shot(png=None, note=MISSING if binary is None else NO_BWRAP)
    page = page.resolve()
    with tempfile.TemporaryDirectory(prefix="ifbench-chromium-") as tmp:
        out = Path(tmp)
        png = out / "shot.png"
        command = _confined(bwrap, _command(binary, page, png, out / "profile"), page.parent, out)
        try:
            done = subprocess.run(command, capture_output=True, timeout=timeout, env={}, check=False,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return Shot(png=None, note=f"no screenshot of {page.name}: Chromium took over {timeout:.0f}s")
        except OSError as exc:
            return Shot(png=None, note=f"no screenshot of {page.name}: cannot start Chromium ({exc})")
        if png.is_file() and not png.is_symlink() and png.stat().st_size:
            return Shot(png=png.read_bytes(), note=f"screenshot of {page.name} at {WINDOW[0]}x{WINDOW[1]}")
        error = (done.stderr.decode(errors="replace").strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return Shot(png=None, note=f"no screenshot of {page.name}: Chromium failed ({error[:200]})")
