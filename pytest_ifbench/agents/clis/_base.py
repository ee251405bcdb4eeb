"""What an agent CLI declaration is: :class:`AgentCli`, the command it runs (:class:`Invocation`), and a
helper for the configuration files it keeps in the run's private ``HOME``.

Every CLI is pointed at the recording proxy (``url``, inside the sandbox), gets a placeholder API key
(:data:`PLACEHOLDER_KEY`: the proxy ignores it; no real key ever enters the sandbox), runs
non-interactively with every permission granted -- the sandbox is the boundary -- and keeps its
configuration in the run's private ``HOME`` (``/home/agent`` inside), so the workspace holds only the
environment's files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ...sandbox.backend import HOME

if TYPE_CHECKING:
    from ..workspace import Workspace

__all__ = ["HOME", "PLACEHOLDER_KEY", "AgentCli", "Invocation", "write_home"]

#: The API key every CLI is given: not a secret, never accepted anywhere but by the proxy.
PLACEHOLDER_KEY = "ifbench-proxy-placeholder"


@dataclass(frozen=True, slots=True, kw_only=True)
class Invocation:
    """One sandboxed command: ``argv``, text on stdin and environment on top of the run's."""

    argv: tuple[str, ...]
    stdin: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)


#: Where the sandbox looks for the programs an agent CLI runs by name: the host's, seen read-only.
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentCli:
    """One real agent CLI as a runner (``runner: <name>`` in a suite, ``--ifbench-agent-runner``).

    A CLI module subclasses this (``__slots__ = ()``), implements :meth:`configure` and
    :meth:`invocation`, and declares one instance; the registry (:class:`~._registry.AgentClis`) holds
    it under :attr:`name`.
    """

    #: The runner name (also the slug of the scaffold it is: ``scaffold: claude_code``, the ``scaffold_claude_code``
    #: marker, the loop's tool profile of the same name).
    name: str
    #: Other spellings of the scaffold that mean this CLI (``"Claude Code"``, ``"Factory Droid"``...), compared
    #: case-, space- and punctuation-insensitively (:func:`..options.scaffold_slug`); the name itself always counts.
    aliases: tuple[str, ...] = ()
    #: The npm package ``ifbench agents install`` installs, at :attr:`version`.
    package: str
    #: The pinned version (what is installed, and what the results record as ``runner_version``).
    version: str
    #: The executable in ``node_modules/.bin``.
    binary: str
    #: Other installed versions accepted as they are (``ifbench agents status`` reports them as fine).
    supported: tuple[str, ...] = ()
    #: The wire format its model requests use (a name in the registry, see :mod:`..wire`).
    wire: str = "anthropic_messages"
    #: Whether later queries can continue the first one's conversation offline.
    multi_turn: bool = True
    #: Whether :meth:`invocation` can replace the CLI's own system prompt (``replace_system=True``), as
    #: some benchmarks' authors run Claude Code; other CLIs get the text appended.
    replaces_system: bool = False
    #: Tokens the CLI's first request takes before the user's query (its system prompt and tool schemas),
    #: measured on the pinned version: a model whose context window is smaller cannot drive it at all,
    #: and the run stops at start-up saying so (0: unknown, not checked).
    prompt_tokens: int = 0
    #: Whether :attr:`binary` only starts the CLI's real program as its child (Kilo: a node script
    #: starting a native executable): that child's model requests are the CLI's too. Nothing below it
    #: ever is -- the relay refuses the agent's tool commands whatever program they run.
    launcher: bool = False
    #: Files the CLI loads into its own process, or its prompt, when it starts, in places the agent's tool
    #: commands can write: patterns (``~/...`` below the run's HOME, others below the workspace; the last
    #: part may be a glob). One added, changed or removed between two commands of a multi-turn run ends the
    #: run as the agent's failure before the CLI starts again (:mod:`..startup_files`).
    loads_at_start: tuple[str, ...] = ()
    #: Programs the CLI runs that must be on the sandbox's ``PATH`` (:data:`SANDBOX_PATH`, the host's directories the
    #: sandbox sees read-only), each with what it is for and how to install it: where one is missing the CLI would
    #: fetch it from the network, which the sandbox does not have, and a tool of its fails where a bare CLI's would
    #: not. The run is refused at start-up naming it (an error of the machine, not of the agent).
    needs: tuple[tuple[str, str], ...] = ()

    def startup_state(self, *, workspace: Path, home: Path) -> dict[str, str]:
        """What else the CLI loads or starts when it starts, read from its configuration as it is now (``workspace``
        and ``home``: the host paths of the workspace and the run's HOME), by what the runner names when it changed
        (a sandbox path, with what part of the file it is): the part of a file that decides what starts, where the
        CLI keeps its own state in the rest (:func:`~..startup_files.digest`), and the programs its local MCP servers
        run (:func:`~..startup_files.programs`). Compared with :attr:`loads_at_start`'s files before every later
        command, the same way (:mod:`..startup_files`). Nothing by default."""
        return {}

    def for_version(self, version: str | None) -> AgentCli:
        """The CLI as ``version`` (the installed version the run starts; None when unknown) behaves, where it
        differs from the pinned one in what it loads or starts when it starts: an older version that runs more
        of the agent's files at start-up declares them (:attr:`loads_at_start`, :meth:`startup_state`). The
        runner asks once per run, before it configures the CLI. Itself by default."""
        return self

    def configure(self, ws: Workspace, *, url: str, model: str, system: str | None) -> dict[str, str]:
        """Write the CLI's configuration for this run into ``ws.home`` (:func:`write_home`) and return the
        environment of its commands. ``url`` is the proxy's base URL inside the sandbox, ``model`` the
        model name the CLI is told, ``system`` text to append to its system prompt (or None)."""
        raise NotImplementedError

    def invocation(self, binary: str, query: str, *, turn: int, model: str, system: str | None,
                   replace_system: bool = False) -> Invocation:
        """The command asking ``query`` (``turn`` 0 starts the conversation, later ones continue it);
        ``binary`` is the absolute path of :attr:`binary`; ``replace_system`` (only passed when
        :attr:`replaces_system`): ``system`` replaces the CLI's own system prompt."""
        raise NotImplementedError


def write_home(ws: Workspace, relative: str, text: str) -> Path:
    """Write ``text`` to ``relative`` below the run's HOME, owned (with new parents) by the sandbox user."""
    path = ws.home / relative
    created = [p for p in reversed(path.relative_to(ws.home).parents) if not (ws.home / p).exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if os.geteuid() == 0:
        for part in created:
            os.chown(ws.home / part, ws.uid, ws.gid)
        os.chown(path, ws.uid, ws.gid)
    return path
