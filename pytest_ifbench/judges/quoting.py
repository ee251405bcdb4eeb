"""Text quoted to a judge, unable to pass for the prompt's own markers.

A judge prompt is cut into sections by lines like ``=== ANSWER ===`` and may quote material between
``<<<...>>>`` lines; the quoted material (a transcript, an answer, a file) must not be able to close the
quote or open a section of its own. :func:`neutralise` rewrites, in the quoted text:

- every run of three or more ``<`` or ``>`` (to ``‹‹‹`` / ``›››``);
- every line (a transcript's quoted ``  | `` prefix aside) that opens with two ``=`` or more: ``== ANSWER ==``,
  ``=== 2. ANSWER ===`` (its ``=`` become ``═``);
- everything shaped like a section marker inside a line, ``=== word ===`` (its ``=`` become ``═``).

Look-alikes count: the markers are matched on the text NFKC-normalised (fullwidth ``＝＝＝ ANSWER ＝＝＝``,
``＜＜＜``, small-form and other compatibility forms fold to ``=``, ``<``, ``>``) with the characters that
draw nothing of their own ignored -- format characters (Unicode category Cf: zero-width spaces and joiners,
word joiners, BOMs, bidi marks, tag characters), combining and enclosing marks (Mn, Me: the combining
grapheme joiner, variation selectors, accents) and the Hangul fillers -- so ``<<\\u200b<``, ``<\\u034f<<``
and ``=\\u2060== ANSWER ===`` are markers too. Only the marker characters of a match are rewritten; every
other character -- and any text with no marker look-alike at all -- is passed through unchanged, so the
prompt (and the judge's cache key) of ordinary material does not change.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata

_BRACKETS = re.compile(r"<{3,}|>{3,}")
_SECTION = re.compile(r"={3,}[ \t]*[^\W\d_][^=\n]{0,60}?={3,}")
#: On the folded text (format characters gone): a line opening with two ``=`` or more.
_SECTION_LINE = re.compile(r"^[ \t|]*==.*$", re.MULTILINE)
#: ASCII text with none of these has no marker (any other text is folded first).
_MARKS = frozenset("<>=")
_SUBSTITUTES = {"<": "‹", ">": "›", "=": "═"}


#: Dropped before matching: characters that draw nothing, or nothing of their own. Format characters (Cf),
#: combining and enclosing marks (Mn, Me: a mark or a variation selector on a ``<`` leaves it a ``<`` to a
#: reader), and the letters that draw nothing (Hangul fillers, Unicode's default-ignorable letters).
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Mn", "Me"})
_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")


@functools.lru_cache(maxsize=4096)
def _fold(char: str) -> str:
    """``char`` as the markers are matched: dropped when invisible (see above), else its NFKC form."""
    if unicodedata.category(char) in _INVISIBLE_CATEGORIES or char in _INVISIBLE_LETTERS:
        return ""
    return unicodedata.normalize("NFKC", char)


def neutralise(text: str) -> str:
    """``text`` unable to close a quote or to open a prompt section (see the module doc)."""
    if text.isascii():
        if not _MARKS.intersection(text):
            return text
        folded, origin = list(text), range(len(text))  # nothing to fold
    else:
        folded = [_fold(char) for char in text]  # the folded form of each character of ``text``
        origin = [index for index, form in enumerate(folded) for _ in form]  # folded position -> index in text
    flat = "".join(folded)
    marked: dict[int, str] = {}  # index in ``text`` -> which marker characters to rewrite there
    for pattern, marks in ((_BRACKETS, "<>"), (_SECTION_LINE, "="), (_SECTION, "=")):
        for match in pattern.finditer(flat):
            for position in range(match.start(), match.end()):
                if flat[position] in marks:
                    marked[origin[position]] = marked.get(origin[position], "") + marks
    if not marked:
        return text
    out = list(text)
    for index, marks in marked.items():
        out[index] = "".join(_SUBSTITUTES[c] if c in marks else c for c in folded[index])
    return "".join(out)


def marker_nonce(*parts: str) -> str:
    """The name of a prompt's quote markers (``<<<RESPONSE n>>>``): a digest of the prompt's parts, which the
    quoted text cannot know before it is written."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
