"""Where the real agent CLIs live, which versions are installed, and installing them with npm.

One directory holds them all (:func:`agents_dir`): ``$IFBENCH_AGENTS_DIR``, else ``agents/`` in the
per-user cache (``~/.cache/pytest-ifbench/agents``), shared by every checkout and every run, as a
browser-testing tool keeps its browsers. Inside it, each CLI's pinned version is installed at the top
(``node_modules/``), and any other version side by side in ``versions/<name>@<version>/node_modules/``
(``ifbench agents install claude_code@2.0.69``), so an instance that names the version its authors ran
(a benchmark row's scaffold version) runs that one where it is installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .._user_cache import agents_dir
from .clis import SANDBOX_PATH, AgentClis

__all__ = ["agents_dir", "cli_problem", "install", "installed_version", "installed_versions", "parse_spec",
           "resolve_version", "version_root"]

_VERSION = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+_-]*$")


def _registry(clis: AgentClis | None) -> AgentClis:
    return AgentClis() if clis is None else clis


def version_root(name: str, version: str | None, directory: Path, clis: AgentClis | None = None) -> Path:
    """The npm prefix holding ``name`` at ``version``: the top for the pinned version (or None), else
    ``versions/<name>@<version>``."""
    cli = _registry(clis).get(name)
    if version is None or version == cli.version:
        return directory
    return directory / "versions" / f"{name}@{version}"


def installed_version(name: str, directory: Path | None = None, clis: AgentClis | None = None,
                      version: str | None = None) -> str | None:
    """The version of ``name`` installed in ``directory`` (default :func:`agents_dir`) at the top, or in
    ``version``'s own folder when ``version`` is given; None when there is none."""
    cli = _registry(clis).get(name)
    root = version_root(name, version, directory or agents_dir(), clis) / "node_modules"
    if not (root / ".bin" / cli.binary).exists():
        return None
    try:
        return str(json.loads((root / cli.package / "package.json").read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def installed_versions(name: str, directory: Path | None = None, clis: AgentClis | None = None) -> list[str]:
    """Every version of ``name`` installed in ``directory``: the top one first, then the side-by-side ones."""
    directory = directory or agents_dir()
    found = [v for v in [installed_version(name, directory, clis)] if v]
    side = directory / "versions"
    for folder in sorted(side.glob(f"{name}@*")) if side.is_dir() else ():
        version = installed_version(name, directory, clis, folder.name.split("@", 1)[1])
        if version and version not in found:
            found.append(version)
    return found


def resolve_version(name: str, wanted: str | None, directory: Path | None = None,
                    clis: AgentClis | None = None) -> tuple[Path, str | None]:
    """The npm prefix to run ``name`` from and the version found there: ``wanted`` where it is installed
    (at the top or side by side), else the top installation (pinned; None when nothing is installed)."""
    directory = directory or agents_dir()
    if wanted is not None:
        for root in (directory, version_root(name, wanted, directory, clis)):
            if installed_version(name, directory, clis, None if root == directory else wanted) == wanted:
                return root, wanted
    return directory, installed_version(name, directory, clis)


def cli_problem(name: str, directory: Path | None = None, clis: AgentClis | None = None) -> str | None:
    """None when ``name`` is installed at its pinned version (or one it declares supported), else one
    line saying how to install it."""
    clis = _registry(clis)
    if name not in clis:
        return f"unknown agent CLI {name!r} (known: {', '.join(clis.names())})"
    directory = directory or agents_dir()
    cli = clis.get(name)
    found = installed_version(name, directory, clis)
    if found != cli.version and (found is None or found not in cli.supported):
        state = "is not installed" if found is None else f"{found} is installed, {cli.version} is pinned"
        return f"agent CLI {name} {state} in {directory}: run `ifbench agents install {name}`"
    missing = [(program, why) for program, why in cli.needs if shutil.which(program, path=SANDBOX_PATH) is None]
    if missing:
        named = "; ".join(f"`{program}` ({why})" for program, why in missing)
        return f"agent CLI {name} needs on the sandbox's PATH ({SANDBOX_PATH}): {named}"
    return None


def parse_spec(spec: str, clis: AgentClis) -> tuple[str, str | None]:
    """``name`` or ``name@version`` -> (name, version or None); ValueError names what is wrong."""
    name, _, version = spec.partition("@")
    if name not in clis:
        raise ValueError(f"unknown agent CLI {name!r} (known: {', '.join(clis.names())})")
    if _ and not _VERSION.match(version):
        raise ValueError(f"{spec!r}: expected NAME@VERSION, with a version such as 2.0.69")
    return name, (version or None)


def install(names: Sequence[str], directory: Path, clis: AgentClis | None = None) -> int:
    """``npm install`` ``names`` (``NAME`` for the pinned version, ``NAME@VERSION`` for another one, kept
    side by side; all pinned versions when empty) into ``directory``; npm's exit status (127 without
    npm, 2 for an unknown name), its output going to ours."""
    clis = _registry(clis)
    try:
        specs = [parse_spec(n, clis) for n in names] if names else [(cli.name, None) for cli in clis]
    except ValueError as exc:
        print(f"unknown agent CLI(s): {exc}", file=sys.stderr)
        return 2
    npm = shutil.which("npm")
    if npm is None:
        print("npm is not on PATH: install Node.js (which ships npm) first", file=sys.stderr)
        return 127
    prefixes: dict[Path, list[str]] = {}
    for name, version in specs:
        cli = clis.get(name)
        prefixes.setdefault(version_root(name, version, directory, clis), []).append(
            f"{cli.package}@{version or cli.version}")
    status = 0
    for prefix, packages in prefixes.items():
        prefix.mkdir(parents=True, exist_ok=True)
        status = status or subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                                           *packages], check=False).returncode
    return status
