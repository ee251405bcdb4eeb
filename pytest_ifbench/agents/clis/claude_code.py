"""Claude Code (``@anthropic-ai/claude-code``): environment only, Messages wire format.

``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY``, ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``,
``DISABLE_AUTOUPDATER=1`` and the model names; ``claude -p --model M --permission-mode bypassPermissions
--output-format json --settings '{"disableAllHooks": true, "apiKeyHelper": "", "otelHeadersHelper": ""}'
[--append-system-prompt S | --system-prompt S] [-c]`` with the query on stdin (``--system-prompt`` replaces Claude
Code's own prompt, as some benchmarks' authors run it; ``-c`` continues the conversation for later queries). The
model name ``M`` is only
what the CLI is told (and what its requests carry); the proxy sends every call to the run's own model.

``--settings``: command-line settings outrank the user's (``~/.claude/settings.json``), the project's
(``.claude/settings.json``) and the local (``.claude/settings.local.json``) files, all of which the agent's tool
commands can write. A ``hooks`` entry there ran as the CLI's child at the CLI's own events -- at the
``PostToolUse`` of the very call that wrote it (2.1.330 re-reads its settings while it runs) and at every
event of the next turn's start -- writing files with no tool call and putting its ``additionalContext`` into
what the model and the judge read; an ``apiKeyHelper`` ran a command at each start though
``ANTHROPIC_API_KEY`` is set (an empty one is none; the proxy ignores keys anyway), and an ``otelHeadersHelper``
at 2.1.330's start once the settings' ``env`` turned telemetry on (an empty one is none too). (``awsAuthRefresh``
and the like run only for Bedrock or Vertex, which take the model away from the relay: the agent's fault.) The
rest of those files (a task's own ``permissions`` or ``env``) and ``CLAUDE.md`` still apply.

MCP servers: Claude Code starts the stdio MCP servers of its configuration as its own children when it starts -- the
user's (``mcpServers`` of ``~/.claude.json``) and the local ones (``projects.<dir>.mcpServers`` there), and the
project's (``/workspace/.mcp.json``), which ``-p`` approves by itself (2.1.330 and 2.0.69 alike, with no
``enableAllProjectMcpServers`` or ``enabledMcpjsonServers``). One the agent's tool call wrote there in turn 1 ran as
the CLI's child when it started for turn 2, with no tool call for it. They still start as in a bare Claude Code (no
``--strict-mcp-config``: a task's own ``.mcp.json`` works as it does there), and :meth:`ClaudeCode.startup_state`
tells the runner what decides them, compared before every later command (:mod:`..startup_files`): ``.mcp.json``
whole (:attr:`~.AgentCli.loads_at_start`); of ``~/.claude.json`` (and the other global configuration files it
may read: ``~/.claude-*-oauth.json``, the legacy ``~/.claude/.config.json``), only the keys naming MCP at the top
and in each ``projects`` entry -- the CLI writes the rest itself, creating the file in its first run; of the
settings files (the user's, the project's, the local one), the keys naming MCP (their approvals) and the plugins'
(``enabledPlugins``, ``extraKnownMarketplaces``: a plugin brings its own MCP servers); and the files in the workspace
or HOME that the stdio servers' command lines name (``sh /workspace/tool.sh``, ``python server.py``), so that the
agent rewriting a task's server program ends its run as well. An empty value counts as none. Not followed: what
those programs import or read, an enabled plugin's own files, and a sub-agent's ``mcpServers`` (started when the
model asks for that sub-agent, a tool call in the trajectory).

What its own children run: the settings files' ``env`` (the user's, the project's, the local one, and the legacy
``env`` of ``~/.claude.json``) goes into Claude Code's own environment, so a ``PATH`` or ``LD_PRELOAD`` there written
in turn 1 made the git, ``which`` and ``uname`` it runs by itself when it starts for turn 2 the agent's programs (or
loaded the agent's library into them) with no tool call (2.1.330 and 2.0.69, each of the four files).
:meth:`ClaudeCode.startup_state` therefore also compares, in each of those files, the ``env`` entries that decide
which program a child runs, what it loads or which configuration it reads (:data:`RISKY_ENV`,
:data:`RISKY_ENV_PREFIXES`, case aside): the agent changing one ends its run before Claude Code starts again. Other
``env`` entries (a model option, telemetry) and a task's own ``env`` left alone apply as before. Neither
``/workspace/.env`` nor a ``bunfig.toml`` changed Claude Code's process.

Versions before 2.1 (2.0.69 among them; :meth:`ClaudeCode.for_version`) run more when they start: their shell
snapshot -- a login ``bash -c -l`` (or zsh) sourcing ``~/.bashrc`` (``.zshrc``) -- so the rc files turn 1 wrote ran at
turn 2's start (2.1.330 takes it only before its first Bash call, a tool call); and their own ``git status``, ``git
log`` and ``git config``, without the overrides 2.1.330 gives its git (``-c core.fsmonitor=``...), so a
``core.fsmonitor`` turn 1 set ran too. For them the shell start-up files (:data:`SHELL_STARTUP`) and git's
configuration files (:data:`GIT_CONFIGS`) are also compared, whole: an agent editing one in a turn before the last
ends its run there (a difference from a bare 2.0.69, which would have run it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..startup_files import digest, programs, read_config, sandbox_path
from ._base import PLACEHOLDER_KEY, AgentCli, Invocation

if TYPE_CHECKING:
    from ..workspace import Workspace

__all__ = ["CLI", "ClaudeCode"]

#: Command-line settings, which outrank the user's, the project's and the local settings files: none of their
#: hooks, nor an ``apiKeyHelper`` or ``otelHeadersHelper`` command, runs (see the module doc).
NO_HOOKS = json.dumps({"disableAllHooks": True, "apiKeyHelper": "", "otelHeadersHelper": ""})
#: The global configuration files Claude Code may read its user and local MCP servers from (and writes its own state
#: into): ``~/.claude.json``, its OAuth variants and the legacy ``~/.claude/.config.json``.
GLOBAL_CONFIGS = ("~/.claude.json", "~/.claude-staging-oauth.json", "~/.claude-local-oauth.json",
                  "~/.claude-custom-oauth.json", "~/.claude/.config.json")
#: The settings files: the user's, the project's and the local one.
SETTINGS = ("~/.claude/settings.json", ".claude/settings.json", ".claude/settings.local.json")
#: The project's MCP servers (Claude Code looks in the working directory and every parent but ``/``).
PROJECT_MCP = ".mcp.json"
#: Environment variables that decide which program Claude Code's own children run (its git, ``which``, ``uname``, its
#: shell snapshot and ripgrep), what they load, or where it and they read their configuration: in a settings file's
#: ``env`` they reach those children (see the module doc). With every name starting with :data:`RISKY_ENV_PREFIXES`.
RISKY_ENV = ("PATH", "HOME", "SHELL", "ENV", "BASH_ENV", "ZDOTDIR", "XDG_CONFIG_HOME", "PAGER", "NODE_OPTIONS",
             "GCONV_PATH", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_SHELL", "CLAUDE_CODE_SHELL_PREFIX", "USE_BUILTIN_RIPGREP",
             "RIPGREP_CONFIG_PATH")
#: The dynamic loader's (``LD_PRELOAD``, ``LD_LIBRARY_PATH``, ``LD_AUDIT``), git's (``GIT_EXEC_PATH``,
#: ``GIT_CONFIG_*``, ``GIT_DIR``) and Bun's (``BUN_OPTIONS``) variables.
RISKY_ENV_PREFIXES = ("LD_", "GIT_", "BUN_")
#: The shell start-up files the shell snapshot of versions before 2.1 runs when they start (a login bash or zsh
#: sourcing its rc file).
SHELL_STARTUP = ("~/.bashrc", "~/.bash_profile", "~/.bash_login", "~/.profile", "~/.bash_logout", "~/.zshenv",
                 "~/.zprofile", "~/.zshrc", "~/.zlogin", "~/.zlogout")
#: Git's configuration files, which the start-up git of versions before 2.1 reads with no override.
GIT_CONFIGS = (".git/config", "~/.gitconfig", "~/.config/git/config")
#: The first version that takes its shell snapshot only before a Bash call and overrides its git's hooks.
_GUARDED_SINCE = (2, 1)
#: Settings keys that decide which plugins load (each brings its own MCP servers), besides those naming MCP.
PLUGIN_KEYS = ("enabledPlugins", "extraKnownMarketplaces")


class ClaudeCode(AgentCli):
    __slots__ = ()

    def configure(self, ws: Workspace, *, url: str, model: str, system: str | None) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": PLACEHOLDER_KEY,
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                "ANTHROPIC_MODEL": model, "ANTHROPIC_SMALL_FAST_MODEL": model,
                "ANTHROPIC_DEFAULT_HAIKU_MODEL": model, "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
                "ANTHROPIC_DEFAULT_OPUS_MODEL": model}

    def invocation(self, binary: str, query: str, *, turn: int, model: str, system: str | None,
                   replace_system: bool = False) -> Invocation:
        argv = [binary, "-p", "--model", model, "--permission-mode", "bypassPermissions", "--output-format", "json",
                "--settings", NO_HOOKS]
        if system:
            argv += ["--system-prompt" if replace_system else "--append-system-prompt", system]
        if turn:
            argv.append("-c")
        return Invocation(argv=tuple(argv), stdin=query)

    def for_version(self, version: str | None) -> AgentCli:
        """Before 2.1, the shell start-up files and git's configuration too (see the module doc)."""
        if version is None or _release(version) >= _GUARDED_SINCE:
            return self
        return replace(self, loads_at_start=(*self.loads_at_start, *SHELL_STARTUP, *GIT_CONFIGS))

    def startup_state(self, *, workspace: Path, home: Path) -> dict[str, str]:
        """The MCP part and the risky ``env`` entries of the global configuration and settings files, and the files
        the stdio MCP servers of those and of ``.mcp.json`` run (see the module doc)."""
        found: dict[str, str] = {}
        servers: list[Any] = []
        for path in (*GLOBAL_CONFIGS, *SETTINGS):
            data, odd = read_config(path, workspace=workspace, home=home)
            part = _mcp_part(data, plugins=path in SETTINGS)
            if (state := odd or digest(part)) is not None:
                found[f"{sandbox_path(path)} (its MCP servers and their approvals)"] = state
            if (state := digest(_risky_env(data))) is not None:
                found[f"{sandbox_path(path)} (the environment it gives the programs Claude Code starts)"] = state
            local = part.get("projects", {}).values()
            servers += [part.get("mcpServers"), *(entry.get("mcpServers") for entry in local)]
        data, _ = read_config(PROJECT_MCP, workspace=workspace, home=home)
        servers.append(data.get("mcpServers") if isinstance(data, dict) else None)
        return {**found, **programs(_stdio(servers), workspace=workspace, home=home)}


def _mcp_part(data: Any, *, plugins: bool) -> dict[str, Any]:
    """The keys of a configuration file that name MCP (``mcpServers``, ``enabledMcpjsonServers``...), also in each
    ``projects`` entry, and with ``plugins`` the plugins' keys: those that decide what starts; empty ones left out."""
    if not isinstance(data, dict):
        return {}
    part = {key: value for key, value in data.items()
            if ("mcp" in key.lower() or (plugins and key in PLUGIN_KEYS)) and digest(value) is not None}
    projects = data.get("projects")
    if isinstance(projects, dict):
        entries = {where: mcp for where, entry in projects.items() if (mcp := _mcp_part(entry, plugins=False))}
        if entries:
            part["projects"] = entries
    return part


def _release(version: str) -> tuple[int, ...]:
    """``2.0.69`` -> (2, 0, 69); what is not a number ends it."""
    parts = []
    for part in version.split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def _risky_env(data: Any) -> dict[str, Any]:
    """The entries of a configuration file's ``env`` that :data:`RISKY_ENV` or :data:`RISKY_ENV_PREFIXES` name."""
    env = data.get("env") if isinstance(data, dict) else None
    if not isinstance(env, dict):
        return {} if env is None else {"env": env}
    return {key: value for key, value in env.items()
            if key.upper() in RISKY_ENV or key.upper().startswith(RISKY_ENV_PREFIXES)}


def _stdio(servers: list[Any]) -> Iterator[list[Any]]:
    """The command lines of the stdio servers of ``mcpServers`` objects (those with no ``type`` are stdio too)."""
    for named in servers:
        for server in named.values() if isinstance(named, dict) else ():
            if isinstance(server, dict) and server.get("type") in (None, "stdio"):
                args = server.get("args")
                yield [server.get("command"), *(args if isinstance(args, list) else ())]


CLI = ClaudeCode(name="claude_code", package="@anthropic-ai/claude-code", version="2.1.330", binary="claude",
                 aliases=("Claude Code", "claude"),
                 wire="anthropic_messages", replaces_system=True, prompt_tokens=21000,
                 loads_at_start=(PROJECT_MCP,))
