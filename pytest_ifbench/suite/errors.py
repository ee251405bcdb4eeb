"""The errors a suite file can raise, and the wording helpers their messages share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._text import short_repr

#: Longest message a :class:`SuiteError` keeps (values in messages are cut far shorter).
_MAX_MESSAGE = 2000
#: Most instance errors a :class:`SuiteErrors` message lists, each cut to fit the message's length.
_MAX_LISTED = 10
_MAX_LISTED_LINE = _MAX_MESSAGE // _MAX_LISTED - 20


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

    ``errors`` holds them all; the message lists the first :data:`_MAX_LISTED`, each naming
    instance and field as a lone :class:`SuiteError` would.
    """

    def __init__(self, path: Path | str, errors: list[SuiteError]):
        lines = [f"  {_cut(str(error).removeprefix(f'{path}: '), _MAX_LISTED_LINE)}" for error in errors[:_MAX_LISTED]]
        if len(errors) > _MAX_LISTED:
            lines.append(f"  … and {len(errors) - _MAX_LISTED} more")
        self.errors = errors
        super().__init__(path, f"{len(errors)} malformed instances:\n" + "\n".join(lines))
        self.instance, self.field = errors[0].instance, errors[0].field


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
