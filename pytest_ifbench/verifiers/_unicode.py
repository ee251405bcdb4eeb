"""Unicode text analysis for the trajectory verifiers: emoji and the language of prose.

Emoji
-----
An emoji is found where Unicode's emoji data puts one:

- a code point of ``Extended_Pictographic`` (Unicode 15 ``emoji-data.txt``, :data:`PICTOGRAPHIC`) at or
  above U+1F000 (faces, objects, animals...: they render as pictures by default);
- below U+1F000 (dingbats, arrows, ``©``, ``™``), only a pictograph that defaults to emoji presentation
  (:data:`EMOJI_PRESENTATION_BMP`: ``✅ ❌ ⭐ ⚡``...) or one followed by the emoji variation selector U+FE0F
  (``❤️``, ``✔️``); with ``strict`` every pictograph counts, text-style ``©``/``™``/``↔``/``✔`` included;
- a keycap (``[0-9#*]`` U+FE0F? U+20E3: ``1️⃣``), a regional-indicator flag (``🇫🇷``; a lone indicator too) and
  a skin-tone modifier standing alone.

A pictograph followed by U+FE0E (text presentation) is not an emoji unless ``strict``. Modifiers, variation
selectors, tag sequences (``🏴`` + tags) and ZWJ-joined pictographs are kept with their emoji, so
``👩🏽‍💻`` is reported as one emoji.

Language
--------
:func:`language_shares` says which share of a text is written in each language. Code is left out first:
fenced and indented code blocks, inline code, URLs and identifier-like tokens (``config.py``, ``src/app``,
``snake_case``, ``camelCase``, tokens with digits). The rest is cut into sentences (line breaks and ``. ! ? ;``
and their CJK forms). In each sentence:

- letters of a script used by one language family count for that language (:data:`SCRIPT_LANGUAGES`):
  ``zh`` Han, ``ja`` kana -- and Han in a sentence that has kana --, ``ko`` Hangul, ``ru`` Cyrillic, ``ar``
  Arabic, ``he`` Hebrew, ``el`` Greek, ``th`` Thai, ``hi`` Devanagari. A Han, kana or Hangul character weighs
  as much as three (Han, kana) or two (Hangul) Latin letters: about one word's worth of text each;
- Latin letters go to the Latin-script language (:data:`LATIN_LANGUAGES`: ``en de fr es it pt nl``) whose
  common words (:data:`STOPWORDS`) occur most often in the sentence; a tie splits them evenly;
- a sentence of Latin letters without any such word goes to the language most Latin letters of the text went
  to, or, when none did, to ``und`` (undetermined); in a sentence that also has letters of another script,
  such Latin words (names, identifiers) are left out.

Limits: the script-based languages cannot tell apart languages sharing a script (Ukrainian or Bulgarian count as
``ru``, Persian or Urdu as ``ar``, Marathi or Nepali as ``hi``, Han-only Japanese as ``zh``); the stopword profile
needs a few common words per sentence, so very short replies ("Done.") are ``und``; other Latin-script
languages (Polish, Turkish...) are misread as the nearest profiled one or ``und``.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Iterable

#: ``Extended_Pictographic`` (Unicode 15.0 ``emoji-data.txt``) as inclusive code-point ranges.
PICTOGRAPHIC: tuple[tuple[int, int], ...] = (
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049), (0x2122, 0x2122),
    (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA), (0x231A, 0x231B), (0x2328, 0x2328),
    (0x2388, 0x2388), (0x23CF, 0x23CF), (0x23E9, 0x23F3), (0x23F8, 0x23FA), (0x24C2, 0x24C2),
    (0x25AA, 0x25AB), (0x25B6, 0x25B6), (0x25C0, 0x25C0), (0x25FB, 0x25FE), (0x2600, 0x2605),
    (0x2607, 0x2612), (0x2614, 0x2685), (0x2690, 0x2705), (0x2708, 0x2712), (0x2714, 0x2714),
    (0x2716, 0x2716), (0x271D, 0x271D), (0x2721, 0x2721), (0x2728, 0x2728), (0x2733, 0x2734),
    (0x2744, 0x2744), (0x2747, 0x2747), (0x274C, 0x274C), (0x274E, 0x274E), (0x2753, 0x2755),
    (0x2757, 0x2757), (0x2763, 0x2767), (0x2795, 0x2797), (0x27A1, 0x27A1), (0x27B0, 0x27B0),
    (0x27BF, 0x27BF), (0x2934, 0x2935), (0x2B05, 0x2B07), (0x2B1B, 0x2B1C), (0x2B50, 0x2B50),
    (0x2B55, 0x2B55), (0x3030, 0x3030), (0x303D, 0x303D), (0x3297, 0x3297), (0x3299, 0x3299),
    (0x1F000, 0x1F0FF), (0x1F10D, 0x1F10F), (0x1F12F, 0x1F12F), (0x1F16C, 0x1F171), (0x1F17E, 0x1F17F),
    (0x1F18E, 0x1F18E), (0x1F191, 0x1F19A), (0x1F1AD, 0x1F1E5), (0x1F201, 0x1F20F), (0x1F21A, 0x1F21A),
    (0x1F22F, 0x1F22F), (0x1F232, 0x1F23A), (0x1F23C, 0x1F23F), (0x1F249, 0x1F3FA), (0x1F400, 0x1F53D),
    (0x1F546, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F774, 0x1F77F), (0x1F7D5, 0x1F7FF), (0x1F80C, 0x1F80F),
    (0x1F848, 0x1F84F), (0x1F85A, 0x1F85F), (0x1F888, 0x1F88F), (0x1F8AE, 0x1F8FF), (0x1F90C, 0x1F93A),
    (0x1F93C, 0x1F945), (0x1F947, 0x1FAFF), (0x1FC00, 0x1FFFD),
)
#: Pictographs below U+1F000 with ``Emoji_Presentation=Yes`` (they render as emoji without U+FE0F).
EMOJI_PRESENTATION_BMP: tuple[tuple[int, int], ...] = (
    (0x231A, 0x231B), (0x23E9, 0x23EC), (0x23F0, 0x23F0), (0x23F3, 0x23F3), (0x25FD, 0x25FE),
    (0x2614, 0x2615), (0x2648, 0x2653), (0x267F, 0x267F), (0x2693, 0x2693), (0x26A1, 0x26A1),
    (0x26AA, 0x26AB), (0x26BD, 0x26BE), (0x26C4, 0x26C5), (0x26CE, 0x26CE), (0x26D4, 0x26D4),
    (0x26EA, 0x26EA), (0x26F2, 0x26F3), (0x26F5, 0x26F5), (0x26FA, 0x26FA), (0x26FD, 0x26FD),
    (0x2705, 0x2705), (0x270A, 0x270B), (0x2728, 0x2728), (0x274C, 0x274C), (0x274E, 0x274E),
    (0x2753, 0x2755), (0x2757, 0x2757), (0x2795, 0x2797), (0x27B0, 0x27B0), (0x27BF, 0x27BF),
    (0x2B1B, 0x2B1C), (0x2B50, 0x2B50), (0x2B55, 0x2B55),
)
REGIONAL_INDICATORS = (0x1F1E6, 0x1F1FF)
SKIN_TONES = (0x1F3FB, 0x1F3FF)
TAGS = (0xE0020, 0xE007F)
VS15, VS16, ZWJ, KEYCAP = 0xFE0E, 0xFE0F, 0x200D, 0x20E3


def _lookup(ranges: tuple[tuple[int, int], ...]):
    starts = [low for low, _ in ranges]

    def contains(cp: int) -> bool:
        i = bisect.bisect_right(starts, cp) - 1
        return i >= 0 and cp <= ranges[i][1]

    return contains


is_pictographic = _lookup(PICTOGRAPHIC)
_presents_as_emoji = _lookup(EMOJI_PRESENTATION_BMP)


def _within(cp: int, bounds: tuple[int, int]) -> bool:
    return bounds[0] <= cp <= bounds[1]


def _emoji_start(text: str, i: int, strict: bool) -> bool:
    cp = ord(text[i])
    if not is_pictographic(cp):
        return False
    following = ord(text[i + 1]) if i + 1 < len(text) else None
    if strict or following == VS16:
        return True
    if following == VS15:
        return False
    return cp >= 0x1F000 or _presents_as_emoji(cp)


def _extend(text: str, i: int) -> int:
    """The end of an emoji whose base ends at ``i``: selectors, skin tones, tags and ZWJ-joined pictographs."""
    n = len(text)
    while i < n:
        cp = ord(text[i])
        if cp in (VS15, VS16) or _within(cp, SKIN_TONES) or _within(cp, TAGS):
            i += 1
        elif cp == ZWJ and i + 1 < n and is_pictographic(ord(text[i + 1])):
            i += 2
        else:
            return i
    return i


def find_emoji(text: str, *, strict: bool = False) -> list[str]:
    """Every emoji of ``text`` (a sequence is one item), in order (see the module doc for what counts)."""
    found: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char, cp = text[i], ord(text[i])
        if char in "0123456789#*":
            end = i + 2 if i + 1 < n and ord(text[i + 1]) == VS16 else i + 1
            if end < n and ord(text[end]) == KEYCAP:
                found.append(text[i:end + 1])
                i = end + 1
                continue
        elif _within(cp, REGIONAL_INDICATORS):
            end = i + 2 if i + 1 < n and _within(ord(text[i + 1]), REGIONAL_INDICATORS) else i + 1
            found.append(text[i:end])
            i = end
            continue
        elif _emoji_start(text, i, strict) or _within(cp, SKIN_TONES):  # a lone skin tone shows as a swatch
            end = _extend(text, i + 1)
            found.append(text[i:end])
            i = end
            continue
        i += 1
    return found


# --------------------------------------------------------------------------- language

#: Languages recognised by their script alone; the value names the script.
SCRIPT_LANGUAGES: dict[str, str] = {
    "zh": "Han", "ja": "Kana (and Han beside kana)", "ko": "Hangul", "ru": "Cyrillic", "ar": "Arabic",
    "he": "Hebrew", "el": "Greek", "th": "Thai", "hi": "Devanagari",
}
#: Latin-script languages told apart by their common words.
LATIN_LANGUAGES: tuple[str, ...] = ("en", "de", "fr", "es", "it", "pt", "nl")
LANGUAGES: tuple[str, ...] = LATIN_LANGUAGES + tuple(SCRIPT_LANGUAGES)

STOPWORDS: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in {
    "en": "the a an i is and are were of to that this it with for on at as be have has not you we will can "
          "would should from by or which there here what your my if but all been do does these those then than "
          "also just now let me it's i'm i'll i've don't can't won't",
    "de": "der die das und ist nicht ein eine einen dem den des mit sich auf für von zu auch es ich wir sie wird "
          "werden wurde sind war dass oder aber wenn noch nach bei aus um über kann diese dieser hat haben nur",
    "fr": "le la les des est et une un du que qui dans pour pas sur ce cette avec sont il elle nous vous je au "
          "aux par plus mais ou ne se été être fait sa son ses leur c'est",
    "es": "el la los las es y que de en un una por con para no se del al lo como más pero su sus está son "
          "este esta ya muy también hay fue ser yo tiene",
    "it": "il lo la gli le di che è un una per con non sono del della dei delle nel nella questo questa anche "
          "più ma come ho ha hanno essere stato alla al si",
    "pt": "os as é um uma de do da dos das que não em no na nos para com por mais se foi são está isso este "
          "esta também mas ao seu sua você",
    "nl": "de het een en is van dat die niet in op te zijn met voor er maar ook als aan bij nog dit wordt "
          "worden naar je ik we hij kan hebben heeft geen om uit door",
}.items()}

_SCRIPTS: tuple[tuple[int, int, str], ...] = tuple(sorted((
    (0x0041, 0x024F, "latin"), (0x1E00, 0x1EFF, "latin"), (0x0370, 0x03FF, "el"), (0x1F00, 0x1FFF, "el"),
    (0x0400, 0x052F, "ru"), (0x1C80, 0x1C8F, "ru"), (0x2DE0, 0x2DFF, "ru"), (0xA640, 0xA69F, "ru"),
    (0x0590, 0x05FF, "he"), (0xFB1D, 0xFB4F, "he"), (0x0600, 0x06FF, "ar"), (0x0750, 0x077F, "ar"),
    (0x08A0, 0x08FF, "ar"), (0xFB50, 0xFDFF, "ar"), (0xFE70, 0xFEFF, "ar"), (0x0900, 0x097F, "hi"),
    (0xA8E0, 0xA8FF, "hi"), (0x0E00, 0x0E7F, "th"), (0x1100, 0x11FF, "ko"), (0x3130, 0x318F, "ko"),
    (0xA960, 0xA97F, "ko"), (0xAC00, 0xD7FF, "ko"), (0x3040, 0x30FF, "kana"), (0x31F0, 0x31FF, "kana"),
    (0xFF66, 0xFF9F, "kana"), (0x2E80, 0x2FDF, "han"), (0x3005, 0x3007, "han"), (0x3400, 0x4DBF, "han"),
    (0x4E00, 0x9FFF, "han"), (0xF900, 0xFAFF, "han"), (0x20000, 0x323AF, "han"),
)))
_SCRIPT_STARTS = [low for low, _, _ in _SCRIPTS]
#: A CJK character carries about a word: it weighs as much as this many Latin letters.
_WEIGHT = {"han": 3.0, "kana": 3.0, "ko": 2.0}

_CODE = re.compile(r"(?ms)^[ \t]*(```|~~~).*?(^[ \t]*\1[ \t]*$|\Z)|^(?: {4}|\t)\S.*?$|`[^`\n]*`|https?://\S+")
_IDENTIFIER = re.compile(r"[\w./\\:-]*(?:[A-Za-z0-9][./\\_:][A-Za-z0-9]|[a-z][A-Z]|[0-9])[\w./\\:-]*", re.ASCII)
_SENTENCE = re.compile(r"[^\n.!?;。！？；]+")
_LATIN_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ɏḀ-ỿ]+(?:['’][A-Za-zÀ-ÖØ-öø-ɏḀ-ỿ]+)?")


def script_of(char: str) -> str | None:
    """``latin``, ``han``, ``kana`` or a script language's code for a letter; None for anything else."""
    if not char.isalpha():
        return None
    cp = ord(char)
    i = bisect.bisect_right(_SCRIPT_STARTS, cp) - 1
    if i >= 0 and cp <= _SCRIPTS[i][1]:
        return _SCRIPTS[i][2]
    return None


def prose(text: str) -> str:
    """``text`` without code blocks, inline code, URLs and identifier-like tokens."""
    return _IDENTIFIER.sub(" ", _CODE.sub(" ", text))


def _latin_languages(words: Iterable[str]) -> list[str]:
    """The Latin-script languages with the most common-word hits (several on a tie; none without hits)."""
    hits = Counter(lang for word in words for lang, stop in STOPWORDS.items()
                   if word.lower().replace("’", "'") in stop)
    if not hits:
        return []
    best = max(hits.values())
    return [lang for lang in LATIN_LANGUAGES if hits[lang] == best]


def language_shares(texts: Iterable[str]) -> dict[str, float]:
    """Weighted letters per language (``und``: Latin text of no recognisable language) over ``texts``."""
    totals: Counter[str] = Counter()
    unknown_latin = 0.0
    for text in texts:
        for sentence in _SENTENCE.findall(prose(text)):
            scripts = Counter(s for char in sentence if (s := script_of(char)))
            if not scripts:
                continue
            latin = scripts.pop("latin", 0)
            japanese = "kana" in scripts
            for script, count in scripts.items():
                lang = "ja" if script == "kana" or (script == "han" and japanese) else \
                    "zh" if script == "han" else script
                totals[lang] += count * _WEIGHT.get(script, 1.0)
            if not latin:
                continue
            langs = _latin_languages(_LATIN_WORD.findall(sentence))
            if langs:
                for lang in langs:
                    totals[lang] += latin / len(langs)
            elif not scripts:
                unknown_latin += latin
    if unknown_latin:
        latin_found = [(totals[lang], lang) for lang in LATIN_LANGUAGES if totals[lang]]
        totals[max(latin_found)[1] if latin_found else "und"] += unknown_latin
    return dict(totals)
