"""Agent-run settings: what ``protocol_options`` of an ``agent`` instance may say, and their defaults.

Precedence, highest first: the command line (``--ifbench-agent-*``), the
instance's ``protocol_options``, the suite's ``defaults.protocol_options``,
the defaults below. Every limit is a stop condition of the run; the reason
for stopping is recorded on the trajectory (``meta.stop_reason``) and shown
in the report.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

#: ``runner`` values that are not a real agent program: our own tool-calling loop.
BUILT_IN_RUNNER = "loop"
#: ``--ifbench-agent-runner auto``: each instance's scaffold CLI where installed, else the loop with its profile.
AUTO_RUNNER = "auto"
#: How a real CLI gets the instance's ``system`` text (``system_prompt`` option).
SYSTEM_PROMPT_MODES = ("append", "replace")


class OptionError(ValueError):
    """An invalid agent option; ``field`` is its path below ``protocol_options``."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentOptions:
    #: ``loop`` (the built-in tool-calling loop) or the name of a real agent CLI runner.
    runner: str = BUILT_IN_RUNNER
    #: The tool profile the built-in loop presents (``generic`` or a scaffold's, e.g. ``claude_code``).
    tools: str = "generic"
    #: The version of the real CLI to run where it is installed (e.g. a benchmark row's scaffold version);
    #: None, or a version not installed: the pinned one. Results record both.
    runner_version: str | None = None
    #: ``append`` the instance's ``system`` text to a real CLI's own system prompt, or ``replace`` it
    #: (where the CLI can: Claude Code), as some benchmarks' authors do.
    system_prompt: str = "append"
    #: Model calls (steps) before the run is stopped.
    max_steps: int = 30
    #: Completion tokens over the whole run.
    max_tokens: int = 60_000
    #: Wall-clock seconds for the whole run (model calls and tools).
    max_seconds: float = 600.0
    #: Cost in USD over the whole run, where the provider reports cost (0 = no limit).
    max_cost: float = 0.0
    #: Wall-clock seconds for one tool command.
    command_timeout: float = 60.0
    #: The same tool call (name and arguments) this many times in a row stops the run.
    max_repeats: int = 3
    #: Characters of one tool result the model sees; longer ones keep head and tail.
    max_output_chars: int = 16_000
    #: Memory (MiB) for each sandboxed command.
    memory_mb: int = 2048
    #: Processes at once inside the sandbox.
    max_processes: int = 256
    #: The sandbox backend the instance's commands run on (a suite's ``sandbox: {backend: ...}``; None:
    #: the run's, ``--ifbench-sandbox``) and the local image it starts from (``image``; docker).
    sandbox_backend: str | None = None
    sandbox_image: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


_TYPES: dict[str, tuple[type, ...]] = {
    "runner": (str,), "tools": (str,), "runner_version": (str,), "system_prompt": (str,),
    "max_steps": (int,), "max_tokens": (int,), "max_seconds": (int, float),
    "max_cost": (int, float), "command_timeout": (int, float), "max_repeats": (int,),
    "max_output_chars": (int,), "memory_mb": (int,), "max_processes": (int,),
}
#: Keys of ``protocol_options`` that belong to the core, not to agent runs.
_CORE_KEYS = {"subtests"}
#: The suite's ``sandbox`` key (validated by the suite reader, carried here as ``protocol_options.sandbox``):
#: its fields, and the option each one sets.
SANDBOX_KEY = "sandbox"
_SANDBOX_FIELDS = {"backend": "sandbox_backend", "image": "sandbox_image"}


def _sandbox(value: Any) -> dict[str, str]:
    """``sandbox: {backend: NAME, image: NAME}`` as option values (raises :class:`OptionError`)."""
    if not isinstance(value, Mapping):
        raise OptionError(SANDBOX_KEY, f"expected a mapping with backend (and image), got {value!r}")
    unknown = sorted(str(key) for key in value if key not in _SANDBOX_FIELDS)
    if unknown:
        raise OptionError(f"{SANDBOX_KEY}.{unknown[0]}", f"unknown field (allowed: {', '.join(_SANDBOX_FIELDS)})")
    if "backend" not in value:
        raise OptionError(f"{SANDBOX_KEY}.backend", "a sandbox names its backend (e.g. backend: docker)")
    for key in _SANDBOX_FIELDS:
        if key in value and (not isinstance(value[key], str) or not value[key]
                             or any(c.isspace() or not c.isprintable() for c in value[key]) or len(value[key]) > 256):
            raise OptionError(f"{SANDBOX_KEY}.{key}", f"expected a name, got {value[key]!r}")
    return {option: value[key] for key, option in _SANDBOX_FIELDS.items() if key in value}


def agent_options(options: Mapping[str, Any], overrides: Mapping[str, Any] | None = None) -> AgentOptions:
    """Validate ``options`` (an instance's ``protocol_options``) and apply ``overrides`` (the command line).

    Unknown keys and wrong types raise :class:`OptionError`; numbers must be positive
    (``max_cost`` may be 0: no limit).
    """
    known = {f.name for f in fields(AgentOptions)} - set(_SANDBOX_FIELDS.values())
    values: dict[str, Any] = {}
    for key, value in {**options, **{k: v for k, v in (overrides or {}).items() if v is not None}}.items():
        if key in _CORE_KEYS:
            continue
        if key == SANDBOX_KEY:
            values.update(_sandbox(value))
            continue
        if key not in known:
            raise OptionError(key, f"unknown agent option (known: {', '.join(sorted(known | {SANDBOX_KEY}))})")
        kinds = _TYPES[key]
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise OptionError(key, f"expected {' or '.join(k.__name__ for k in kinds)}, got {value!r}")
        if key == "system_prompt" and value not in SYSTEM_PROMPT_MODES:
            raise OptionError(key, f"expected {' or '.join(SYSTEM_PROMPT_MODES)}, got {value!r}")
        if kinds != (str,) and (value < 0 or (value == 0 and key != "max_cost")):
            raise OptionError(key, f"must be positive, got {value!r}")
        values[key] = value
    return replace(AgentOptions(), **values)


def spelling_key(name: str) -> str:
    """A scaffold spelling compared case-, space- and punctuation-insensitively: lower case, every
    non-alphanumeric dropped (``"Claude Code"``, ``"claude-code"``, ``"claude_code"`` -> ``"claudecode"``).
    The ``scaffold_<slug>`` marker (:func:`~..suite.format.marker_name`) folds the same characters, so a
    marker's slug and the scaffold it was made from have the same key."""
    return re.sub(r"[^a-z0-9]+", "", name.lower())


def scaffold_slug(scaffold: str | None, *, clis: Iterable[Any] = (), profiles: Iterable[str] = ()) -> str | None:
    """The slug of a scaffold spelling as the CLI registry ``clis`` and the loop's tool ``profiles`` name it:
    ``"Claude Code"``, ``"claude-code"`` -> ``"claude_code"``, ``"Factory Droid"`` -> ``"droid"``.

    A CLI's or profile's own name, spelt exactly, is itself; else the spelling's :func:`spelling_key` is matched
    against the CLIs' and profiles' names, then against the CLIs' :attr:`~.clis.AgentCli.aliases`. Anything
    else (an unknown scaffold, None) is returned unchanged."""
    if scaffold is None:
        return None
    clis = tuple(clis)
    profiles = tuple(profiles)
    names = [getattr(cli, "name", cli) for cli in clis]
    if scaffold in names or scaffold in profiles:
        return scaffold
    key = spelling_key(scaffold)
    if not key:
        return scaffold
    for name in (*names, *profiles):
        if spelling_key(name) == key:
            return name
    for cli in clis:
        if any(spelling_key(alias) == key for alias in getattr(cli, "aliases", ())):
            return getattr(cli, "name", cli)
    return scaffold


def choose_runner(options: AgentOptions, *, scaffold: str | None, flag: str | None, clis: Any,
                  installed: Callable[[str], bool], profiles: Collection[str] = ()) -> AgentOptions:
    """``options`` with the runner (and the loop's profile) that runs an instance whose scaffold is
    ``scaffold``, under ``--ifbench-agent-runner`` = ``flag``. ``scaffold`` counts when it names a CLI
    of the registry ``clis`` (or a profile), however it is spelt (:func:`scaffold_slug`: ``Claude Code``
    is ``claude_code``); ``installed(name)`` says whether that CLI can run here.

    * no flag: the instance's own ``runner`` option (default ``loop``);
    * ``loop``: the built-in loop for every instance, with the scaffold's tool profile where one exists
      (in ``profiles``) and the instance asks for none;
    * ``auto``: the scaffold's real CLI where installed, else the loop with its profile; instances
      naming no CLI keep their own runner where it can run, else the loop;
    * a CLI's name: the scaffold's own CLI for an instance that names one (never another CLI: a Droid
      instance is not run under Claude Code), this CLI for the others.
    """
    scaffold = scaffold_slug(scaffold, clis=clis, profiles=profiles)
    cli_scaffold = scaffold if scaffold is not None and scaffold in clis else None

    def loop() -> AgentOptions:
        profile = options.tools
        if profile == "generic" and scaffold is not None and scaffold in profiles:
            profile = scaffold
        return replace(options, runner=BUILT_IN_RUNNER, tools=profile)

    if flag is None:
        return options
    if flag == BUILT_IN_RUNNER:
        return loop()
    if flag == AUTO_RUNNER:
        wanted = cli_scaffold or options.runner
        return replace(options, runner=wanted) if wanted != BUILT_IN_RUNNER and installed(wanted) else loop()
    return replace(options, runner=cli_scaffold or flag)
