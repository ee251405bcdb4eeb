"""Sentence counting as the EvolIF authors' checker gets it: NLTK's Punkt with its trained English model.

The authors count sentences with ``nltk.sent_tokenize``-style Punkt
(``punkt/english.pickle``, which NLTK >= 3.9 serves from the ``punkt_tab``
data). That data cannot be downloaded here and NLTK is not a dependency, so
this module re-implements Punkt's *decision* procedure (Kiss & Strunk 2006,
as NLTK 3.10 applies it) with the parts of the trained English model that
fit in a few lines: its abbreviation list, collocations and sentence
starters (``data/punkt-english.json``, taken from NLTK's English Punkt model,
Apache-2.0). What it does not carry is the model's orthographic context (how
~20,000 words were capitalised in the training corpus); a short list of
frequent English function words stands in for "a word normally written in
lower case". docs/evolif.md lists what is and is not reproduced.

The procedure, in brief: a candidate boundary is ``.``, ``?`` or ``!``
followed by a non-word punctuation mark or by whitespace and another token
(so the end of the text and a bare newline without a next token never
split). The candidate splits unless the word before it is a known
abbreviation, or an initial / number / ellipsis that the orthographic rules
keep attached to the next word. Newlines are plain whitespace: a list or a
heading without final punctuation is part of the next sentence.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources

_SENT_END = ".?!"
_NON_WORD = "[)\";}\\]*:@'({\\[\u2018\u2019\u201c\u201d\xab\xbb?!]"
_MULTI_CHAR = r"(?:-{2,}|\.{2,}|(?:\.\s){2,}\.)"
_CANDIDATE = re.compile(rf"[{re.escape(_SENT_END)}](?=(?P<after>{_NON_WORD}|\s+(?P<next>\S+)))")
_WORD = re.compile(
    rf"({_MULTI_CHAR}|(?=[^(\"`{{\[:;&#*@)}}\]\-,])\S+?(?=\s|$|{_NON_WORD}|{_MULTI_CHAR}"
    rf"|,(?=$|\s|{_NON_WORD}|{_MULTI_CHAR}))|\S)"
)
_NUMBER = re.compile(r"^-?[.,]?\d[\d,.-]*\.?$")
_INITIAL = re.compile(r"[^\W\d]\.$")
_ELLIPSIS = re.compile(r"\.\.+$")
_REALIGN = re.compile(r"[\"')\]}\u2018\u2019\u201c\u201d\xab\xbb]+?(?:\s+|(?=--)|$)")

#: Stand-in for the trained orthographic context: words that, capitalised after an
#: abbreviation or ellipsis, start a sentence (they are normally written in lower case).
_USUALLY_LOWER = frozenset("""
a about after all also an and another any are as at be because before being both but by can could did do
does each either every few for from had has have he her here hers him his how i if in into is it its just
many may me might more most much must my neither no nor not now of on once one only or other our out over
she should since so some such than that the their them then there these they this those though through
thus to too under until up upon us very was we were what when where whether which while who whom whose why
will with within without would yet you your
""".split())


@lru_cache(maxsize=1)
def _model() -> tuple[frozenset[str], frozenset[tuple[str, str]], frozenset[str]]:
    data = json.loads(resources.files(__package__).joinpath("data/punkt-english.json").read_text(encoding="utf-8"))
    return (frozenset(data["abbreviations"]), frozenset(tuple(p) for p in data["collocations"]),
            frozenset(data["sentence_starters"]))


def _type(token: str) -> str:
    return _NUMBER.sub("##number##", token.lower())


def _no_period(kind: str) -> str:
    return kind[:-1] if len(kind) > 1 and kind.endswith(".") else kind


def _starts_sentence(token: str) -> bool | None:
    """Punkt's orthographic heuristic for the token after a candidate: True, False or None (unknown)."""
    if token in tuple(";:,.!?"):
        return False
    word = _no_period(_type(token))
    if token[0].isupper() and word in _USUALLY_LOWER:
        return True
    if token[0].islower():
        return False  # a lower-case word continues the sentence
    return None


def _breaks(first: str, following: str | None) -> bool:
    """Whether the token ``first`` (which ends a candidate) is a sentence break before ``following``."""
    abbreviations, collocations, starters = _model()
    if first in tuple(_SENT_END):
        sentbreak, abbr, ellipsis = True, False, False
    elif _ELLIPSIS.match(first):
        sentbreak, abbr, ellipsis = False, False, True
    elif first.endswith(".") and not first.endswith(".."):
        stem = first[:-1].lower()
        abbr = stem in abbreviations or stem.split("-")[-1] in abbreviations
        sentbreak, ellipsis = not abbr, False
    else:
        return False
    if following is None or not first.endswith("."):
        return sentbreak
    kind = _no_period(_type(first))
    next_kind = _type(following)
    initial = _INITIAL.match(first) is not None
    if (kind, _no_period(next_kind)) in collocations:
        return False
    if (abbr or ellipsis) and not initial:
        starts = _starts_sentence(following)
        if starts is True or (following[0].isupper() and _no_period(next_kind) in starters):
            return True
    if initial or kind == "##number##":
        starts = _starts_sentence(following)
        if starts is False:
            return False
        if starts is None and initial and following[0].isupper():
            return False
    return sentbreak


def _contains_break(context: str) -> bool:
    tokens = _WORD.findall(context)
    for index, token in enumerate(tokens[:-1]):
        if _breaks(token, tokens[index + 1]):
            return True
    return False


def split_sentences(text: str) -> list[str]:
    """Punkt-style sentences of ``text`` (see the module docstring)."""
    slices: list[tuple[int, int]] = []
    last = 0
    previous_end = 0
    for match in _CANDIDATE.finditer(text):
        before = text[previous_end:match.start()]
        space = max((i for i, c in enumerate(before) if c.isspace()), default=-1)
        word_start = previous_end + space + 1 if space >= 0 else previous_end
        previous_end = match.start()
        context = text[word_start:match.end()] + match.group("after")
        if _contains_break(context):
            slices.append((last, match.end()))
            last = match.start("next") if match.group("next") else match.end()
    slices.append((last, len(text.rstrip())))
    out: list[str] = []
    shift = 0
    for index, (start, stop) in enumerate(slices):
        start += shift
        shift = 0
        if index + 1 < len(slices):
            realign = _REALIGN.match(text, slices[index + 1][0])
            if realign:
                out.append(text[start:slices[index + 1][0] + len(realign.group(0).rstrip())])
                shift = realign.end() - slices[index + 1][0]
                continue
        if text[start:stop]:
            out.append(text[start:stop])
    return out


def count_sentences(text: str) -> int:
    """Sentences of the stripped text; an empty or blank text has none (as the authors' checker counts)."""
    stripped = text.strip()
    return len(split_sentences(stripped)) if stripped else 0
