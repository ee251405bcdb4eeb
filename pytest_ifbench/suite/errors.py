"""The errors a suite file can raise, and the wording helpers their messages share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._text import short_repr

#: Longest message a :class:`SuiteError` keeps (values in messages are cut far shorter).
_MAX_MESSAGE = 2000
#: Most lines a :class:`SuiteErrors` message lists (one per distinct mistake), cut to share the message's length.
_MAX_LISTED = 10
#: Instance ids a line names before "and N more".
_MAX_NAMED = 3


class SuiteError(Exception):
    """A suite file is malformed. ``str()`` names file, instance and field."""

    def __init__(self, path: Path | str, message: str, *, instance: str | None = None, field: str | None = None):
        self.path = Path(path)
        self.instance = instance
        self.field = field
        self.message = message = _cut(str(message), _MAX_MESSAGE)
        where = str(path)
        if instance is not None:
            where += f": instance {short_repr(instance, 80)}"
        if field:
            where += f": {_cut(str(field), 200)}"
        super().__init__(f"{where}: {message}")


class SuiteErrors(SuiteError):
    """Several instances of one suite file are malformed: each is reported, not only the first.

    ``errors`` holds them all. The message has one line per distinct mistake (field and message), naming
    the instances that make it, so a verifier no plugin registers, used by 400 instances, is one line with
    its whole hint; at most :data:`_MAX_LISTED` lines, then how many more.
    """

    def __init__(self, path: Path | str, errors: list[SuiteError]):
        self.errors = errors
        mistakes: dict[tuple[str | None, str], list[SuiteError]] = {}
        for error in errors:
            key = (error.field, error.message) if error.instance is not None else (None, str(error))
            mistakes.setdefault(key, []).append(error)
        lines = [_line(path, same) for same in list(mistakes.values())[:_MAX_LISTED]]
        budget = (_MAX_MESSAGE - 100) // max(len(lines), 1)
        lines = [f"  {_cut(line, budget)}" for line in lines]
        if len(mistakes) > _MAX_LISTED:
            lines.append(f"  … and {len(mistakes) - _MAX_LISTED} more")
        super().__init__(path, f"{len(errors)} malformed instances:\n" + "\n".join(lines))
        self.instance, self.field = errors[0].instance, errors[0].field


def _line(path: Path | str, same: list[SuiteError]) -> str:
    """One mistake of a :class:`SuiteErrors`, as a lone :class:`SuiteError` says it, naming every instance."""
    first = same[0]
    if len(same) == 1 or first.instance is None:
        return str(first).removeprefix(f"{path}: ")
    names = ", ".join(short_repr(error.instance, 80) for error in same[:_MAX_NAMED])
    more = f" and {len(same) - _MAX_NAMED} more" if len(same) > _MAX_NAMED else ""
    field = f": {_cut(str(first.field), 200)}" if first.field else ""
    return f"instances {names}{more}{field}: {first.message}"


class NotASuite(SuiteError):
    """A YAML file mentions an ``ifbench`` key but is not a suite (the key is not at its top level).

    ``quiet``: nothing in it looks like a misplaced suite either (an ``ifbench`` service in a
    compose file, a CI job of that name), so collection skips it without a word.
    """

    def __init__(self, path: Path | str, message: str, *, quiet: bool = False):
        super().__init__(path, message)
        self.quiet = quiet


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _type_name(value: Any) -> str:
    return {str: "str", int: "int", float: "float", bool: "bool", list: "list", dict: "mapping"}.get(
        type(value), type(value).__name__
    )


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun
