"""The agent-CLI registry: CLIs by runner name and the proxy's wire formats by name.

Built once per session (under pytest) or per command (``ifbench agents``): the shipped CLIs and wire
formats first, then every plugin's ``pytest_ifbench_agent_clis(clis)`` (a historic hook, so conftest
plugins registered later add theirs too). Everything that needs the list of CLIs -- the runner, the
start-up check, ``ifbench agents install|status`` -- asks a registry, never a hard-coded table.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from . import claude_code, droid, kilo
from ._base import AgentCli

if TYPE_CHECKING:
    from ..wire import WireFormat

__all__ = ["BUILTIN_CLIS", "AgentClis", "collect_agent_clis"]

#: The CLIs every registry starts with, in listing order.
BUILTIN_CLIS: tuple[AgentCli, ...] = (claude_code.CLI, kilo.CLI, droid.CLI)


class AgentClis:
    """Agent CLIs by name and wire formats by name; the built-ins are preloaded unless ``builtins=False``.

    ``add(cli)`` registers an :class:`~._base.AgentCli`; ``add_wire_format(wire)`` a
    :class:`~..wire.WireFormat`. Names are unique. A CLI's wire format is looked up when it runs
    (:meth:`wire_format`), so the two may be registered in either order.
    """

    def __init__(self, *, builtins: bool = True) -> None:
        self._clis: dict[str, AgentCli] = {}
        self._wires: dict[str, WireFormat] = {}
        if builtins:
            from ..wire import BUILTIN_WIRE_FORMATS

            for cli in BUILTIN_CLIS:
                self.add(cli)
            for wire in BUILTIN_WIRE_FORMATS:
                self.add_wire_format(wire)

    def add(self, cli: AgentCli) -> None:
        if not isinstance(cli, AgentCli):
            raise TypeError(f"an agent CLI must be an AgentCli, not {type(cli).__name__}")
        if cli.name in self._clis or cli.name == "loop":
            raise ValueError(f"an agent runner named {cli.name!r} is already registered")
        self._clis[cli.name] = cli

    def add_wire_format(self, wire: WireFormat) -> None:
        if wire.name in self._wires:
            raise ValueError(f"a wire format named {wire.name!r} is already registered")
        self._wires[wire.name] = wire

    def get(self, name: str) -> AgentCli:
        try:
            return self._clis[name]
        except KeyError:
            raise KeyError(f"unknown agent CLI {name!r} (known: {', '.join(self._clis)})") from None

    def wire_format(self, name: str) -> WireFormat:
        try:
            return self._wires[name]
        except KeyError:
            raise KeyError(f"unknown wire format {name!r} (known: {', '.join(self._wires)})") from None

    def names(self) -> tuple[str, ...]:
        return tuple(self._clis)

    def wire_formats(self) -> tuple[str, ...]:
        return tuple(self._wires)

    def __contains__(self, name: object) -> bool:
        return name in self._clis

    def __iter__(self) -> Iterator[AgentCli]:
        return iter(tuple(self._clis.values()))

    def __len__(self) -> int:
        return len(self._clis)


def collect_agent_clis(hook: Any) -> AgentClis:
    """The built-ins plus every plugin's ``pytest_ifbench_agent_clis`` (``hook``: a pluggy hook relay,
    pytest's ``config.hook`` or the ``ifbench`` command's)."""
    clis = AgentClis()
    hook.pytest_ifbench_agent_clis.call_historic(kwargs={"clis": clis})
    return clis
