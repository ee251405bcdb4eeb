"""A small offline language identifier for the EvolIF ``language`` constraint.

Two stages, no downloaded model: the dominant writing system decides every
language with a script of its own (Chinese, Japanese, Korean, Russian or
Ukrainian, Greek, Arabic, Hebrew, Hindi, Thai); Latin-script text is scored
by hits on short lists of very frequent function words for English, French,
German, Spanish, Italian, Portuguese and Dutch, plus a few letters that only
some of them use. Short or ambiguous text is "undetermined" (None).
"""

from __future__ import annotations

import re
from collections import Counter

_STOPWORDS: dict[str, frozenset[str]] = {
    "en": frozenset("the and of to is in that it for with as was on are this be by or have from not but "
                    "what which you they we can there their will would an at has been were if more".split()),
    "fr": frozenset("le la les et des est un une du dans que qui pour pas sur au avec ce ne se sont "
                    "mais ou nous vous il elle ils plus par cette aux leur été être".split()),
    "de": frozenset("der die das und ist nicht ein eine zu den von mit sich des auf für im dem "
                    "auch es sie ich wir aber wie oder wird sind noch nach bei einer".split()),
    "es": frozenset("el la los las y de que en un una es por con para no se del al lo como más "
                    "pero sus le ya o este sí porque esta entre cuando muy sin sobre".split()),
    "it": frozenset("il lo la gli le di che e è un una per non con del della sono si da al nel "
                    "anche come più ma questo dei alla essere ha hanno".split()),
    "pt": frozenset("o a os as e de que do da em um uma para com não se por mais dos das ao "
                    "como mas foi ele ela isso são está também muito seu sua".split()),
    "nl": frozenset("de het een en van is dat op te in niet zijn met voor die er maar ook als "
                    "aan bij dit door wordt worden naar heeft hij zij wij".split()),
}

#: Letters that point to one Latin-script language (a small bonus, never decisive alone).
_LETTER_HINTS = {
    "de": "ßäöü", "es": "ñ¿¡", "fr": "çèêëîïûœ", "pt": "ãõ", "it": "ìò",
}

_NAMES = {
    "en": "English", "fr": "French", "de": "German", "es": "Spanish", "it": "Italian", "pt": "Portuguese",
    "nl": "Dutch", "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "ru": "Russian", "uk": "Ukrainian",
    "el": "Greek", "ar": "Arabic", "he": "Hebrew", "hi": "Hindi", "th": "Thai",
}

SUPPORTED = tuple(_NAMES)

_WORD = re.compile(r"[^\W\d_]+")


def language_name(code: str) -> str:
    return _NAMES.get(normalise(code), code)


def normalise(code: str) -> str:
    """``en-US`` -> ``en``, ``zh_CN`` -> ``zh``, ``English`` -> ``en``."""
    code = code.strip().lower().replace("_", "-").split("-")[0]
    for key, name in _NAMES.items():
        if code == name.lower():
            return key
    return code


def _script(ch: str) -> str | None:
    o = ord(ch)
    if 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF:
        return "han"
    if 0x3040 <= o <= 0x30FF:
        return "kana"
    if 0xAC00 <= o <= 0xD7AF or 0x1100 <= o <= 0x11FF or 0x3130 <= o <= 0x318F:
        return "hangul"
    if 0x0400 <= o <= 0x04FF:
        return "cyrillic"
    if 0x0370 <= o <= 0x03FF:
        return "greek"
    if 0x0600 <= o <= 0x06FF:
        return "arabic"
    if 0x0590 <= o <= 0x05FF:
        return "hebrew"
    if 0x0900 <= o <= 0x097F:
        return "devanagari"
    if 0x0E00 <= o <= 0x0E7F:
        return "thai"
    if ch.isalpha() and o < 0x0250:
        return "latin"
    return None


def detect(text: str) -> tuple[str | None, str]:
    """(language code or None, a one-line explanation)."""
    scripts = Counter(s for ch in text if (s := _script(ch)) is not None)
    if not scripts:
        return None, "no letters"
    cjk = scripts["han"] + scripts["kana"]
    ranked = scripts.most_common()
    top, count = ranked[0]
    if top in ("han", "kana") or cjk >= count:
        if scripts["kana"] >= max(1, 0.05 * cjk):
            return "ja", f"kana in CJK text ({scripts['kana']} of {cjk} characters)"
        return "zh", f"Han characters without kana ({scripts['han']})"
    single = {"hangul": "ko", "greek": "el", "arabic": "ar", "hebrew": "he", "devanagari": "hi", "thai": "th"}
    if top in single:
        return single[top], f"{top} script ({count} letters)"
    if top == "cyrillic":
        ukrainian = sum(text.lower().count(c) for c in "іїєґ")
        return ("uk", "Cyrillic with Ukrainian letters") if ukrainian >= 2 else ("ru", "Cyrillic script")
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < 3:
        return None, f"too few words ({len(words)}) to tell"
    scores = {lang: float(sum(1 for w in words if w in stops)) for lang, stops in _STOPWORDS.items()}
    lowered = text.lower()
    for lang, letters in _LETTER_HINTS.items():
        if any(c in lowered for c in letters):
            scores[lang] += 0.5
    best = sorted(scores.items(), key=lambda kv: -kv[1])
    (first, s1), (_, s2) = best[0], best[1]
    shown = ", ".join(f"{k}={v:g}" for k, v in best[:3])
    if s1 < 2 or s1 <= s2:
        return None, f"no clear function-word majority ({shown})"
    return first, f"function words: {shown}"
