"""Suite-supplied regular expressions, matched with a time bound.

A pattern such as ``(a+)+$`` backtracks exponentially on a reply of 40 ``a``
and a ``!``: Python's ``re`` has no way to stop it, so one check could hang the
whole run. These patterns are compiled by the ``regex`` package (its default
VERSION0 syntax is ``re``'s) and every match is given :data:`PATTERN_TIMEOUT`
seconds of matching; past it the check is *not met*, naming the pattern
(``_verify.evaluate``): the text is the reply's, and an error would leave its
instance out of the scores, a trade a reply could make for a check it fails.

Matching keeps the GIL (``concurrent=False``). By default ``regex`` lets it go around every match
on a ``str``, and taking it back waits for a busy thread that has it, up to the interpreter's switch
interval: with one CPU-bound thread beside it (the background generator while replies arrive) a
``finditer`` over a one-line reply took 180-290 us instead of 1-3 us. Held, the bound is spent
matching rather than waiting; the price is that a runaway pattern holds the other threads for up
to its bound.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import regex

from .._params import ParamError

#: Seconds of matching one pattern may take on one text (docs/suite-format.md).
PATTERN_TIMEOUT = 1.0

IGNORECASE, MULTILINE, DOTALL, VERBOSE = regex.IGNORECASE, regex.MULTILINE, regex.DOTALL, regex.VERBOSE


class PatternTimeout(Exception):
    """Matching ran past :data:`PATTERN_TIMEOUT`; the message names the pattern."""


class BoundedPattern:
    """A compiled pattern whose ``search``/``finditer`` stop after :data:`PATTERN_TIMEOUT` seconds."""

    __slots__ = ("_compiled",)

    def __init__(self, compiled: regex.Pattern) -> None:
        self._compiled = compiled

    @property
    def pattern(self) -> str:
        return self._compiled.pattern

    def search(self, text: str) -> regex.Match | None:
        try:
            return self._compiled.search(text, timeout=PATTERN_TIMEOUT, concurrent=False)
        except TimeoutError:
            raise self._timeout(text) from None

    def finditer(self, text: str) -> Iterator[regex.Match]:
        try:
            yield from self._compiled.finditer(text, timeout=PATTERN_TIMEOUT, concurrent=False)
        except TimeoutError:
            raise self._timeout(text) from None

    def _timeout(self, text: str) -> PatternTimeout:
        return PatternTimeout(
            f"the pattern /{self.pattern}/ ran past its {PATTERN_TIMEOUT:g} s bound on a text of {len(text):,} "
            "characters (catastrophic backtracking: rewrite the pattern, e.g. without nested repetition)")


@functools.lru_cache(maxsize=512)
def _compile(pattern: str, flags: int) -> BoundedPattern:
    return BoundedPattern(regex.compile(pattern, flags))


def compile_pattern(pattern: str, flags: int = 0, *, param: str = "pattern") -> BoundedPattern:
    """The bounded pattern, or :class:`ParamError` on ``param`` for an invalid expression."""
    try:
        return _compile(pattern, flags)
    except regex.error as exc:
        raise ParamError(param, f"invalid regular expression: {exc}") from None
