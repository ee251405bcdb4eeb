"""HTML and SVG deliverables rendered to PNG with headless Chromium, so a vision judge sees the page.

Chromium (Debian package ``chromium``) loads the local file with a fresh profile, no first-run, sync,
component update or background networking, and no way out: it runs in an empty network namespace
(``bwrap --unshare-net``) when bubblewrap can make one, and in every case with a host-resolver rule that
resolves nothing and a proxy that does not exist, so a page cannot fetch from the outside. A render that
fails or times out gives a sentence instead of an image; a missing Chromium gives :data:`MISSING` (the judge
input and the start-up warning say it) -- never a silent skip.
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
        page.resolve().as_uri(),
    ]


def _offline(command: list[str]) -> list[str]:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return command
    return [bwrap, "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", "--", *command]


def render(page: Path, *, timeout: float = TIMEOUT) -> Shot:
    """Render ``page`` (HTML or SVG) at 1280x900 to PNG."""
    binary = chromium()
    if binary is None:
        return Shot(png=None, note=MISSING)
    with tempfile.TemporaryDirectory(prefix="ifbench-chromium-") as tmp:
        png = Path(tmp) / "shot.png"
        command = _command(binary, page, png, Path(tmp) / "profile")
        env = {"HOME": tmp, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        error = ""
        for attempt in (_offline(command), command):  # without bwrap only if the namespace could not be made
            try:
                done = subprocess.run(attempt, capture_output=True, timeout=timeout, env=env, check=False,
                                      stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                return Shot(png=None, note=f"no screenshot of {page.name}: Chromium took over {timeout:.0f}s")
            except OSError as exc:
                return Shot(png=None, note=f"no screenshot of {page.name}: cannot start Chromium ({exc})")
            if png.is_file() and png.stat().st_size:
                return Shot(png=png.read_bytes(), note=f"screenshot of {page.name} at {WINDOW[0]}x{WINDOW[1]}")
            error = (done.stderr.decode(errors="replace").strip().splitlines() or [f"exit {done.returncode}"])[-1]
            if attempt is command:
                break
        return Shot(png=None, note=f"no screenshot of {page.name}: Chromium failed ({error[:200]})")
